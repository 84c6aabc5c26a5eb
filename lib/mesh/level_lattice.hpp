// Positions on the lattice of one level of an octree over a coarse grid (lib/mesh/octree.hpp): where
// a particle lies in that level's cells, as the adaptive deposit and the cell lookups place it.
#pragma once

#include <phew/grid/geometry.hpp>

#include <array>
#include <cstddef>

namespace phew::mesh {

// A point's position in cells of one level from the coarse grid's origin, per axis (wrapped into a
// periodic grid as the uniform deposit wraps it), with the level's cells per length worked out once:
// the hot loops map every particle at a level, and three divisions a call were an eighth of
// cic-project --refine. The same expression, so the same bits as working it out at each call.
class LevelLattice {
 public:
  LevelLattice(const grid::GridGeometry& coarse, int level) : periodic_(coarse.periodic) {
    for (std::size_t d = 0; d < 3; ++d) {
      origin_[d] = coarse.origin[d];
      cells_[d] = static_cast<double>(coarse.shape[d] << level);
      per_length_[d] = cells_[d] / coarse.extent[d];
    }
  }
  std::array<double, 3> position(const std::array<double, 3>& x) const {
    std::array<double, 3> u{};
    for (std::size_t d = 0; d < 3; ++d) {
      u[d] = (x[d] - origin_[d]) * per_length_[d];
      if (periodic_) {  // rounding at the upper edge of the box, as the uniform deposit has it
        if (u[d] >= cells_[d]) u[d] -= cells_[d];
        if (u[d] < 0) u[d] += cells_[d];
        if (!(u[d] >= 0 && u[d] < cells_[d])) u[d] = 0;
      }
    }
    return u;
  }

 private:
  std::array<double, 3> origin_{}, per_length_{}, cells_{};
  bool periodic_ = false;
};

}  // namespace phew::mesh
