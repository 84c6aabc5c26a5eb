// Points in a box, bucketed on a uniform grid for radius queries (periodic-aware): the voters' search
// for the peaks near a peak and the particles near a peak. (dtfe's ParticleIndex is the other spatial
// index; the two are to become one in lib/grid.)
#pragma once

#include "grid/geometry.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>
#include <vector>

namespace phew {

// `Position` is the member of `Point` that holds its position (double[3] or std::array<double, 3>). The
// points are referenced, not copied: they must outlive the list.
template <typename Point, auto Position>
class CellList {
 public:
  // Buckets of about `h` (at most 256 per axis) over the box of `g`.
  CellList(const std::vector<Point>& p, const GridGeometry& g, double h) : p_(p), g_(g) {
    bins_ = GridGeometry{{1, 1, 1}, g.origin, g.extent, g.periodic};
    for (std::size_t d = 0; d < 3; ++d)
      bins_.shape[d] = std::max<std::int64_t>(1, std::min<std::int64_t>(256, static_cast<std::int64_t>(g.extent[d] / h)));
    for (std::size_t i = 0; i < p.size(); ++i) cells_[bins_.linear(bin_of(p[i].*Position))].push_back(i);
  }

  // Indices of the points within r of x (minimum image), in ascending index order.
  std::vector<std::size_t> within(const std::array<double, 3>& x, double r) const {
    std::vector<std::size_t> out;
    const CellIndex c = bin_of(x);
    const auto size = bins_.cell_size();
    std::array<std::int64_t, 3> reach{};
    for (std::size_t d = 0; d < 3; ++d)
      reach[d] = std::min<std::int64_t>(bins_.shape[d] / 2 + 1, static_cast<std::int64_t>(std::ceil(r / size[d])));
    std::vector<std::int64_t> seen;
    for (std::int64_t a = -reach[0]; a <= reach[0]; ++a)
      for (std::int64_t b = -reach[1]; b <= reach[1]; ++b)
        for (std::int64_t e = -reach[2]; e <= reach[2]; ++e) {
          std::array<std::int64_t, 3> q{c.i + a, c.j + b, c.k + e};
          bool skip = false;
          for (std::size_t d = 0; d < 3; ++d) {
            if (q[d] < 0 || q[d] >= bins_.shape[d]) {
              if (!g_.periodic) skip = true;
              q[d] = fold_index(q[d], bins_.shape[d], true);
            }
          }
          if (skip) continue;
          const std::int64_t k = bins_.linear({q[0], q[1], q[2]});
          if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;  // small grids wrap onto themselves
          seen.push_back(k);
          auto it = cells_.find(k);
          if (it == cells_.end()) continue;
          for (std::size_t i : it->second) {
            double r2 = 0;
            for (std::size_t d = 0; d < 3; ++d) {
              const double dx = minimum_image((p_[i].*Position)[d] - x[d], g_.extent[d], g_.periodic);
              r2 += dx * dx;
            }
            if (r2 <= r * r) out.push_back(i);
          }
        }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  template <typename X>
  CellIndex bin_of(const X& x) const {
    const double at[3] = {x[0], x[1], x[2]};
    return cell_of_clamped(bins_, at);
  }

  const std::vector<Point>& p_;
  const GridGeometry& g_;
  GridGeometry bins_;  // the buckets: the box of g_, cut more coarsely
  std::unordered_map<std::int64_t, std::vector<std::size_t>> cells_;
};

}  // namespace phew
