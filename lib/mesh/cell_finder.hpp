// A point's cell among many sorted cells, looked up many times (unbind's and voters' particles among
// the test cells): CellSpace::find's answer, with a directory of the cells by the high bits of their
// global index in front of the binary search, so that a search reads a few neighbouring entries where
// the whole array's search missed the cache at every level (2.1 M particles among 10^5-10^6 cells).
#pragma once

#include <phew/mesh/cell_space.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace phew::mesh {

class CellFinder {
 public:
  // `cells`: ascending global indices of `space`, read while the finder lives.
  CellFinder(const CellSpace& space, std::span<const std::int64_t> cells);

  // The position in `cells` of the cell holding `point` (CellSpace::point), or cells.size(): the same
  // as space.find(cells, point).
  std::size_t find(std::int64_t point) const;

 private:
  const CellSpace* space_;
  std::span<const std::int64_t> cells_;
  std::int64_t low_ = 0;              // the first cell's index: buckets count from it
  int shift_ = 0;                     // a bucket spans 2^shift_ global indices
  std::vector<std::uint32_t> first_;  // first_[b]: the first cell of bucket b or after; first_.back() = size
};

}  // namespace phew::mesh
