// The uniform grid cut into blocks, one per rank: the ranks form a px x py x pz lattice (rank
// (a * py + b) * pz + c holds block (a, b, c)) and each axis is cut into contiguous ranges as even as
// possible (SlabDecomposition per axis). Ranks may outnumber the planes of any one axis: 8 ranks
// on a 6^3 grid are 2 x 2 x 2 blocks of 3^3 cells.
//
// The lattice is chosen for the fewest ghost cells (the shell of one cell around the largest block):
// slabs when there are few ranks and many planes, pencils and bricks beyond. When no lattice of
// `ranks` fits the grid (a prime number of ranks above every axis' length), the largest number of
// ranks that fits is used and the rest hold no cells.
#pragma once

#include <phew/mpi/slab.hpp>

#include <array>
#include <cstdint>

namespace phew::mpi {

// Cell indices or sizes on the three axes of a grid.
using Extent3 = std::array<std::int64_t, 3>;

class BlockDecomposition {
 public:
  // The grid's shape over `ranks` ranks.
  BlockDecomposition(const Extent3& shape, int ranks);
  // Explicit cuts of each axis (tests: uneven and empty blocks); the lattice is their rank counts.
  explicit BlockDecomposition(std::array<SlabDecomposition, 3> axes);

  const Extent3& shape() const { return shape_; }
  const std::array<int, 3>& lattice() const { return lattice_; }
  int used_ranks() const { return lattice_[0] * lattice_[1] * lattice_[2]; }

  // The cells [lo, hi) of a rank's block (empty for ranks beyond the lattice).
  struct Box {
    Extent3 lo{0, 0, 0}, hi{0, 0, 0};
    Extent3 size() const { return {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]}; }
    std::int64_t cells() const { return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); }
  };
  Box box(int rank) const;
  // The rank whose block holds cell (i, j, k) of the grid.
  int owner(const Extent3& cell) const;
  // The cuts of axis d, and the rank of the block at place (a, b, c) of the lattice.
  const SlabDecomposition& axis(std::size_t d) const { return axes_[d]; }
  // (The lattice's rank order: lib/grid's linear_index, which folds grid cells, sits above lib/mpi.)
  int rank_at(int a, int b, int c) const { return a * lattice_[1] * lattice_[2] + b * lattice_[2] + c; }

 private:
  Extent3 shape_;
  std::array<int, 3> lattice_;
  std::array<SlabDecomposition, 3> axes_;
};

// The rank lattice with the fewest ghost cells per rank for `ranks` ranks on a grid of `shape`, ties to
// more cuts of x, then of y (slabs first); {0, 0, 0} when no lattice of exactly `ranks` fits.
std::array<int, 3> block_lattice(const Extent3& shape, int ranks);

}  // namespace phew::mpi
