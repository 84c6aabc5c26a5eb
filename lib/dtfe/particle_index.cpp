#include "dtfe/particle_index.hpp"

#include <algorithm>
#include <cmath>

namespace phew::dtfe {

ParticleIndex::ParticleIndex(std::span<const double> position, std::span<const double> mass, const Domain& domain,
                             double cell)
    : domain_(domain) {
  const std::size_t n = mass.size();
  const double max_cells = std::max(1.0, std::cbrt(static_cast<double>(n) / 4.0));
  for (std::size_t d = 0; d < 3; ++d) {
    const double e = domain.extent[d] > 0 ? domain.extent[d] : 1.0;
    const double want = cell > 0 ? std::floor(e / cell) : 1.0;
    cells_[d] = static_cast<std::int64_t>(std::clamp(want, 1.0, std::min(max_cells, 1024.0)));
    cell_size_[d] = e / static_cast<double>(cells_[d]);
  }
  auto cell_of = [&](std::size_t i) {
    std::int64_t c[3];
    for (std::size_t d = 0; d < 3; ++d) {
      const double u = (position[3 * i + d] - domain_.origin[d]) / cell_size_[d];
      c[d] = std::clamp(static_cast<std::int64_t>(std::floor(u)), std::int64_t{0}, cells_[d] - 1);
    }
    return static_cast<std::size_t>((c[0] * cells_[1] + c[1]) * cells_[2] + c[2]);
  };
  const auto total = static_cast<std::size_t>(cells_[0] * cells_[1] * cells_[2]);
  start_.assign(total + 1, 0);
  std::vector<std::uint32_t> home(n);
  for (std::size_t i = 0; i < n; ++i) {
    home[i] = static_cast<std::uint32_t>(cell_of(i));
    ++start_[home[i] + 1];
  }
  for (std::size_t c = 1; c <= total; ++c) start_[c] += start_[c - 1];
  std::vector<std::uint64_t> fill(start_.begin(), start_.end() - 1);
  position_.resize(3 * n);
  mass_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t p = fill[home[i]]++;
    for (std::size_t d = 0; d < 3; ++d) position_[3 * p + d] = position[3 * i + d];
    mass_[p] = mass[i];
  }
}

std::uint64_t ParticleIndex::count(const std::array<double, 3>& centre, const std::array<double, 3>& half) const {
  std::uint64_t n = 0;
  visit(centre, half, [&](double, double, double, double) { ++n; });
  return n;
}

FieldPoints ParticleIndex::field(const FieldGeometry& g) const {
  const auto ax = view_axes(g.axis);
  const auto hv = g.half_width();  // along (u, v, w)
  std::array<double, 3> half{};
  for (std::size_t k = 0; k < 3; ++k) half[static_cast<std::size_t>(ax[k])] = hv[k];
  std::vector<double> rel;
  std::vector<double> m;
  visit(g.center, half, [&](double x, double y, double z, double mass) {
    const double r[3] = {x, y, z};
    rel.insert(rel.end(), {r[ax[0]], r[ax[1]], r[ax[2]]});
    m.push_back(mass);
  });
  return quantise_field(rel, m, quantum(g));
}

}  // namespace phew::dtfe
