#include <phew/grid/particle_index.hpp>

#include <phew/core/error.hpp>

#include <algorithm>
#include <cmath>

namespace phew::grid {

ParticleIndex::ParticleIndex(const Box& box, std::size_t n, double cell) : box_(box), size_(n) {
  const double max_cells = std::max(1.0, std::cbrt(static_cast<double>(n) / 4.0));
  for (std::size_t d = 0; d < 3; ++d) {
    const double e = box.extent[d] > 0 ? box.extent[d] : 1.0;
    const double want = cell > 0 ? std::floor(e / cell) : 1.0;
    cells_[d] = static_cast<std::int64_t>(std::clamp(want, 1.0, std::min(max_cells, 1024.0)));
    cell_size_[d] = e / static_cast<double>(cells_[d]);
  }
  start_.assign(static_cast<std::size_t>(cells_[0] * cells_[1] * cells_[2]) + 1, 0);
}

std::size_t ParticleIndex::cell_of(const Points& points, std::size_t i) const {
  std::int64_t c[3];
  for (std::size_t d = 0; d < 3; ++d) {
    const double u = (points.at(i, d) - box_.origin[d]) / cell_size_[d];
    c[d] = std::clamp(static_cast<std::int64_t>(std::floor(u)), std::int64_t{0}, cells_[d] - 1);
  }
  return static_cast<std::size_t>((c[0] * cells_[1] + c[1]) * cells_[2] + c[2]);
}

std::vector<std::uint32_t> ParticleIndex::file(const Points& points) {
  std::vector<std::uint32_t> home(points.size);
  for (std::size_t i = 0; i < points.size; ++i) {
    home[i] = static_cast<std::uint32_t>(cell_of(points, i));  // at most 1024^3 cells
    ++start_[home[i] + 1];
  }
  for (std::size_t c = 1; c < start_.size(); ++c) start_[c] += start_[c - 1];
  return home;
}

ParticleIndex::ParticleIndex(std::span<const double> position, std::span<const double> mass, const Box& box,
                             double cell)
    : ParticleIndex(box, position.size() / 3, cell) {
  const std::vector<std::uint32_t> home = file(points(position));
  std::vector<std::uint64_t> fill(start_.begin(), start_.end() - 1);
  position_.resize(3 * size_);
  if (!mass.empty()) mass_.resize(size_);
  index_.resize(size_);
  for (std::size_t i = 0; i < size_; ++i) {
    const std::uint64_t p = fill[home[i]]++;
    for (std::size_t d = 0; d < 3; ++d) position_[3 * p + d] = position[3 * i + d];
    if (!mass.empty()) mass_[p] = mass[i];
    index_[p] = i;
  }
}

std::vector<std::size_t> ParticleIndex::cell_order(const Points& points, const Box& box, double cell) {
  ParticleIndex grid(box, points.size, cell);
  const std::vector<std::uint32_t> home = grid.file(points);
  std::vector<std::size_t> order(points.size);
  for (std::size_t i = 0; i < points.size; ++i) order[grid.start_[home[i]]++] = i;  // the copy's order
  return order;
}

ParticleIndex ParticleIndex::in_place(const Points& points, const Box& box, double cell) {
  ParticleIndex index(box, points.size, cell);
  const std::vector<std::uint32_t> home = index.file(points);
  for (std::size_t i = 1; i < points.size; ++i)
    if (home[i] < home[i - 1])
      throw core::Error::internal("ParticleIndex::in_place: point {} lies in a cell before its predecessor's", i);
  index.in_place_ = points;
  return index;
}

std::uint64_t ParticleIndex::count(const std::array<double, 3>& centre, const std::array<double, 3>& half) const {
  std::uint64_t n = 0;
  visit(centre, half, [&](double, double, double, double) { ++n; });
  return n;
}

std::vector<std::size_t> ParticleIndex::within(const std::array<double, 3>& x, double r) const {
  // The cells a particle within r can be in, one more on each side so that rounding at a cell's edge
  // never leaves one out (the distance test below decides). A periodic range as long as the box is
  // every cell once; an open one is clamped, as the particles outside the box are.
  std::array<std::vector<std::int64_t>, 3> range;
  if (!(r >= 0) || !std::isfinite(x[0]) || !std::isfinite(x[1]) || !std::isfinite(x[2])) return {};
  for (std::size_t d = 0; d < 3; ++d) {
    const std::int64_t n = cells_[d];
    const auto nd = static_cast<double>(n);
    const double lo = std::floor((x[d] - r - box_.origin[d]) / cell_size_[d]) - 1;
    const double hi = std::floor((x[d] + r - box_.origin[d]) / cell_size_[d]) + 1;
    std::int64_t k0 = 0, k1 = n - 1;
    if (box_.periodic && hi - lo + 1 < nd) {
      const double base = std::floor(lo / nd) * nd;  // whole boxes: the range starts in [0, n)
      k0 = static_cast<std::int64_t>(lo - base);
      k1 = static_cast<std::int64_t>(hi - base);
    } else if (!box_.periodic) {
      k0 = static_cast<std::int64_t>(std::clamp(lo, 0.0, nd - 1));
      k1 = static_cast<std::int64_t>(std::clamp(hi, 0.0, nd - 1));
    }
    for (std::int64_t k = k0; k <= k1; ++k) range[d].push_back(fold_index(k, n, box_.periodic));
  }
  std::vector<std::size_t> out;
  const Points pos = positions();
  for (std::int64_t ci : range[0])
    for (std::int64_t cj : range[1])
      for (std::int64_t ck : range[2]) {
        const auto cell = static_cast<std::size_t>((ci * cells_[1] + cj) * cells_[2] + ck);
        for (std::uint64_t p = start_[cell]; p < start_[cell + 1]; ++p) {
          double r2 = 0;
          for (std::size_t d = 0; d < 3; ++d) {
            const double dx = minimum_image(pos.at(p, d) - x[d], box_.extent[d], box_.periodic);
            r2 += dx * dx;
          }
          if (r2 <= r * r) out.push_back(input_index(p));
        }
      }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace phew::grid
