// A run of the adaptive mesh's leaves in key order held as each leaf's level: 1 byte a leaf where its key
// (cell_key.hpp) takes 8. The keys follow from the levels: a leaf of level l covers 8^(levels - l)
// consecutive Morton codes of the finest lattice from its corner, so each leaf starts where the one
// before it ends, and past the end of a coarse cell comes the next coarse cell of the grid on the Morton
// curve (a grid whose sides are not one power of two leaves codes out). cic-project holds its leaves so
// until they are written, and the writer lists their keys a batch at a time (io::write_amr_grid).
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/mesh/cell_key.hpp>

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace phew::mesh {

// The smallest Morton code of the coarse lattice at or after `code` whose cell lies inside a grid of
// `shape` cells (morton3: x the most significant axis), or kNoCode when none does. A few dozen steps at
// most: a descent of the curve's octree that passes over the subtrees lying wholly outside the grid.
inline constexpr std::uint64_t kNoCode = std::numeric_limits<std::uint64_t>::max();
std::uint64_t next_code_inside(std::uint64_t code, const std::array<std::int64_t, 3>& shape);

struct LeafRun {
  std::uint64_t first_key = 0;     // the key of the run's first leaf (none: an empty run)
  std::vector<std::int8_t> level;  // each leaf's level, in key order
  std::uint64_t size() const { return level.size(); }
};

// The keys of a run, in order, a batch at a time.
class LeafKeyCursor {
 public:
  LeafKeyCursor(const grid::GridGeometry& coarse, int levels, const LeafRun& run);
  // The keys of the next out.size() leaves (size() in all). Error(internal) when the levels do not tile
  // the coarse cells (a leaf running past its coarse cell's end).
  void next(std::span<std::uint64_t> out);
  // The key of the next leaf.
  std::uint64_t next() {
    std::uint64_t key = 0;
    next(std::span<std::uint64_t>(&key, 1));
    return key;
  }

 private:
  std::array<std::int64_t, 3> shape_;
  int levels_;
  const LeafRun& run_;
  std::uint64_t at_ = 0;    // leaves listed so far
  std::uint64_t code_ = 0;  // the finest-lattice Morton code where the next leaf starts
};

}  // namespace phew::mesh
