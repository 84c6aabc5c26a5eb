// The adaptive mesh's decomposition: each rank holds a run of whole coarse cells on the Morton curve,
// cut so that the ranks hold the same amount of work, as RAMSES cuts its Hilbert curve
// (docs/architecture.md, "The mesh"). The cuts are CellSpace::rank_cuts' (keys of the coarse cells
// where each rank's run begins), the rule the stages after the deposit cut by test cells and leaves;
// cic-project's deposit cuts by particles.
//
// A rank's run is a range of keys, so its leaves are one contiguous run of the mesh's key order, and the
// runs of ranks 0, 1, ... are the whole mesh: no sort across ranks.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/mesh/cell_key.hpp>
#include <phew/mpi/comm.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace phew::mesh {

class CoarseRuns {
 public:
  // Runs from given cuts (keys, CellSpace::rank_cuts' form: cut[r] where rank r begins, cut[ranks] past
  // every key).
  CoarseRuns(const grid::GridGeometry& coarse, int levels, std::vector<std::int64_t> cuts);
  // Cut so that each rank's run holds the same number of particles, give or take a coarse cell (on coarse
  // grids wider than 128 cells, an aligned block of 8^(b - 7) of them, 2^b the widest axis rounded up). `cells`: the coarse cell (linear index) of
  // each of this rank's particles, -1 (left out) for those outside an open grid. Collective.
  static CoarseRuns by_particles(const grid::GridGeometry& coarse, int levels, std::span<const std::int64_t> cells,
                                 const mpi::Comm& comm);

  int ranks() const { return static_cast<int>(cut_.size()) - 1; }
  const std::vector<std::int64_t>& cuts() const { return cut_; }
  // The keys of rank r's leaves: [first, last).
  std::int64_t first_key(int rank) const { return cut_[static_cast<std::size_t>(rank)]; }
  std::int64_t end_key(int rank) const { return cut_[static_cast<std::size_t>(rank) + 1]; }
  // The rank whose run holds a coarse cell (linear index).
  int owner(std::int64_t coarse_cell) const;

  // For every coarse cell (linear index), the ranks whose runs hold a coarse cell within `margin` cells of
  // it on every axis (wrapped when periodic), each once, ascending: where the particles of a cell must go
  // so that every rank sees all those within the refinement rule's reach of its own cells.
  struct RanksNear {
    std::vector<std::uint64_t> start;  // per coarse cell, and one past the last
    std::vector<std::int32_t> rank;
    std::span<const std::int32_t> of(std::int64_t cell) const {
      const auto c = static_cast<std::size_t>(cell);
      return {rank.data() + start[c], rank.data() + start[c + 1]};
    }
  };
  RanksNear ranks_near(std::int64_t margin) const;

 private:
  grid::GridGeometry coarse_;
  int levels_;
  std::vector<std::int64_t> cut_;
};

// The Morton code of a coarse cell: its place on the curve (its key is this << (3 levels + 4)).
inline std::uint64_t coarse_code(const grid::GridGeometry& coarse, std::int64_t linear) {
  const auto c = coarse.cell_at(linear);
  return morton3(static_cast<std::uint64_t>(c.i), static_cast<std::uint64_t>(c.j), static_cast<std::uint64_t>(c.k));
}

}  // namespace phew::mesh
