#include <phew/dtfe/lattice_buckets.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace phew::dtfe {

LatticeBuckets::LatticeBuckets(const FieldPoints& p, double per_cell) {
  const std::size_t n = p.size();
  std::array<std::int64_t, 3> lo{}, hi{};
  lo.fill(std::numeric_limits<std::int64_t>::max());
  hi.fill(std::numeric_limits<std::int64_t>::min());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t a = 0; a < 3; ++a) {
      lo[a] = std::min<std::int64_t>(lo[a], p.q[3 * i + a]);
      hi[a] = std::max<std::int64_t>(hi[a], p.q[3 * i + a]);
    }
  if (n == 0) lo.fill(0), hi.fill(0);
  // Cubic cells whose count is about n / per_cell over the bounding box (extent + 1 lattice unit).
  std::array<double, 3> extent{};
  for (std::size_t a = 0; a < 3; ++a) extent[a] = static_cast<double>(hi[a] - lo[a] + 1);
  const double cells = std::max(1.0, static_cast<double>(n) / per_cell);
  side_ = std::max(1.0, std::cbrt(extent[0] * extent[1] * extent[2] / cells));
  for (std::size_t a = 0; a < 3; ++a) {
    origin_[a] = static_cast<double>(lo[a]);
    dims_[a] = static_cast<int>(std::clamp(std::ceil(extent[a] / side_), 1.0, 1024.0));
    side_ = std::max(side_, extent[a] / dims_[a]);  // a capped axis widens the cells
  }
  const std::size_t total =
      static_cast<std::size_t>(dims_[0]) * static_cast<std::size_t>(dims_[1]) * static_cast<std::size_t>(dims_[2]);
  std::vector<std::uint32_t> cell(n);
  start_.assign(total + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<std::uint32_t>(
        index(cell_of(0, p.q[3 * i]), cell_of(1, p.q[3 * i + 1]), cell_of(2, p.q[3 * i + 2])));
    cell[i] = c;
    ++start_[c + 1];
  }
  for (std::size_t c = 1; c <= total; ++c) start_[c] += start_[c - 1];
  points_.resize(n);
  std::vector<std::uint32_t> fill(start_.begin(), start_.end() - 1);
  for (std::size_t i = 0; i < n; ++i) points_[fill[cell[i]]++] = static_cast<std::int32_t>(i);
}

int LatticeBuckets::cell_of(int axis, double x) const {
  const double c = std::floor((x - origin_[static_cast<std::size_t>(axis)]) / side_);
  return static_cast<int>(std::clamp(c, 0.0, static_cast<double>(dims_[static_cast<std::size_t>(axis)] - 1)));
}

}  // namespace phew::dtfe
