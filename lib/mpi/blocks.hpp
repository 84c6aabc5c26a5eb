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
  // The lattice place along axis d holding cell i of that axis (0 <= i < shape[d]), and the rank of the
  // block at place (a, b, c): owner() one axis at a time, for callers that look the places up in tables.
  // (The lattice's rank order: lib/grid's linear_index, which folds grid cells, sits above lib/mpi.)
  int place(std::size_t d, std::int64_t i) const { return axes_[d].owner(i); }
  int rank_at(int a, int b, int c) const { return a * lattice_[1] * lattice_[2] + b * lattice_[2] + c; }
  // Calls f(rank) once for each rank whose block holds a cell of the box [first[d], last[d]] (both ends
  // included) on each axis, wrapped when periodic; cells outside an open grid are left out. Where a
  // particle's cloud or window goes (cic-project's deposit, the octree's copied margins).
  template <typename F>
  void for_each_rank_touching(const Extent3& first, const Extent3& last, bool periodic, F&& f) const {
    std::array<Places, 3> places{};
    for (std::size_t d = 0; d < 3; ++d) {
      places[d] = places_touching(d, first[d], last[d], periodic);
      if (places[d].empty()) return;
    }
    for (const Span& a : places[0].span)
      for (int i = a.from; i <= a.to; ++i)
        if (holds_cells(0, i))
          for (const Span& b : places[1].span)
            for (int j = b.from; j <= b.to; ++j)
              if (holds_cells(1, j))
                for (const Span& c : places[2].span)
                  for (int k = c.from; k <= c.to; ++k)
                    if (holds_cells(2, k)) f(rank_at(i, j, k));
  }

 private:
  // The lattice places of one axis that a run of cells reaches: one or two disjoint spans (a run that
  // wraps round), none when it lies outside an open grid. Places holding no cells (uneven explicit cuts)
  // may lie inside a span; for_each_rank_touching skips them.
  struct Span {
    int from = 0, to = -1;
  };
  struct Places {
    std::array<Span, 2> span{};
    bool empty() const { return span[0].to < span[0].from && span[1].to < span[1].from; }
  };
  Places places_touching(std::size_t d, std::int64_t first, std::int64_t last, bool periodic) const;
  // Whether lattice place q of axis d holds cells (only explicit uneven cuts leave places empty).
  bool holds_cells(std::size_t d, int q) const { return !some_empty_ || axes_[d].planes(q) > 0; }

  Extent3 shape_;
  std::array<int, 3> lattice_;
  std::array<SlabDecomposition, 3> axes_;
  bool some_empty_ = false;  // a place of some axis holds no cells
};

// The rank lattice with the fewest ghost cells per rank for `ranks` ranks on a grid of `shape`, ties to
// more cuts of x, then of y (slabs first); {0, 0, 0} when no lattice of exactly `ranks` fits.
std::array<int, 3> block_lattice(const Extent3& shape, int ranks);

}  // namespace phew::mpi
