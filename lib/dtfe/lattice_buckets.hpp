// A field's points filed by the cells of a coarse uniform grid over their bounding box, for the range
// queries of the slab triangulation (cgal_slabs.cpp): which points may lie in a sphere, or beyond a
// plane. Cells are cubes in lattice units; a point belongs to the cell its lattice coordinates floor
// into (in doubles), so it lies in the cell's box [lo, lo + side) to within a lattice unit.
#pragma once

#include <phew/dtfe/field_points.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace phew::dtfe {

class LatticeBuckets {
 public:
  // About `per_cell` points to a cell on average (at least one cell).
  LatticeBuckets(const FieldPoints& points, double per_cell);

  const std::array<int, 3>& dims() const { return dims_; }
  double side() const { return side_; }
  // The cell's box: [lo(a, c), lo(a, c) + side()) along axis a for cell index c on that axis.
  double lo(int axis, int c) const { return origin_[static_cast<std::size_t>(axis)] + c * side_; }
  // The cell index along `axis` holding lattice coordinate x, clamped into the grid.
  int cell_of(int axis, double x) const;
  // The points of cell (i, j, k): indices into the FieldPoints.
  const std::int32_t* begin(int i, int j, int k) const { return points_.data() + start_[index(i, j, k)]; }
  const std::int32_t* end(int i, int j, int k) const { return points_.data() + start_[index(i, j, k) + 1]; }

 private:
  std::size_t index(int i, int j, int k) const {
    return (static_cast<std::size_t>(i) * static_cast<std::size_t>(dims_[1]) + static_cast<std::size_t>(j)) *
               static_cast<std::size_t>(dims_[2]) +
           static_cast<std::size_t>(k);
  }

  std::array<double, 3> origin_{};
  std::array<int, 3> dims_{1, 1, 1};
  double side_ = 1;
  std::vector<std::uint32_t> start_;  // [cells + 1]
  std::vector<std::int32_t> points_;  // by cell, ascending within a cell
};

}  // namespace phew::dtfe
