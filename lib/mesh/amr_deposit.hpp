// Particles -> masses on the leaves of an adaptive mesh, over ranks, with the same bits on any number of
// ranks (docs/cli.md, "Same data on any number of ranks").
//
// The ranks hold runs of whole coarse cells on the Morton curve, cut so that each holds the same number
// of particles (coarse_runs.hpp: the curve and the cut rule of the stages after). The octree's rule is
// local: whether a cell splits depends only on the particles and cells near it. So each rank builds the
// tree of its run from its own particles and copies of the particles of every coarse cell within
// `margin` coarse cells of it on every axis, wide enough that the rule reaches no owned cell from beyond
// it (amr_margin). Between the balance's passes each rank sends the flags of its own coarse cells to
// every rank whose window holds them, so that every window's balance comes from its owners' flags
// (BalanceExchange). Each rank keeps the leaves of its own coarse cells: one run of the key order, so the runs
// of ranks 0, 1, ... are the mesh without a sort. The total is a fixed-point sum (core::FixedScale),
// exact in any order. Every sum runs over the particles in one canonical order, coarse cell by coarse
// cell (linear index), and in their global order within a cell (rank r's before rank r+1's, each in
// snapshot order): each leaf gets the bits of the serial build (build_octree + deposit_on_leaves) over
// every particle in that order (tests/mpi/test_octree_mpi.cpp).
#pragma once

#include <phew/mesh/leaf_run.hpp>
#include <phew/mesh/octree.hpp>
#include <phew/mpi/comm.hpp>

#include <cstdint>
#include <span>
#include <variant>
#include <vector>

namespace phew::mesh {

struct AmrDeposit {
  // This rank's run of the leaves in key order (cell_key: the canonical order), as their levels, and the
  // density of each (its mass, summed in double, over its level's cell volume), as float when asked
  // (float32 output) or double; the runs of ranks 0, 1, ... are the whole mesh.
  LeafRun leaves;
  std::variant<std::vector<float>, std::vector<double>> density;
  std::vector<std::int64_t> cuts;               // the keys where each rank's run begins (CoarseRuns::cuts)
  std::vector<std::uint64_t> leaves_per_level;  // the whole mesh (all ranks)
  std::uint64_t particles_in = 0;               // inside the grid (all ranks)
  std::uint64_t particles_outside = 0;          // outside an open grid, ignored (all ranks)
  double mass_total = 0;                        // sum of the leaves, the same bits on any ranks (all ranks)
};

// The coarse cells copied from each side of a rank's run, on each axis: the reach of one pass of the
// refinement rule (kernel and buffer, each level half the size of the one before), of the balance's
// closure over the flags, and of the deposit.
std::int64_t amr_margin(const RefinementParams& params);

// Builds the mesh of this rank's particles (positions [n][3], masses [n]; every rank's in global order)
// and deposits them on its leaves. A periodic grid expects positions wrapped into it. The particles are
// taken (move them in): they are let go once filed in the canonical order. The tree and the leaves'
// sums run on `threads` threads per rank, with the same bits (plane_runs.hpp). The densities come as
// float when `float_density` (each the double density rounded once, as a float32 file stores it), the
// masses let go as they are read. Collective.
AmrDeposit deposit_on_octree(const grid::GridGeometry& coarse, const RefinementParams& params,
                             std::vector<double> position, std::vector<double> mass, const mpi::Comm& comm,
                             int threads = 1, bool float_density = false);

}  // namespace phew::mesh
