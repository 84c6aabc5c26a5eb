// unbind's stage: the particles of every level-0 clump's test cells (as deblend finds a patch's), each
// halo's hierarchy of clumps gathered on one rank and unbound there (unbind_hierarchy, finest first,
// unbound particles passed to the parent), the objects, the particles' bound objects and the
// most-bound particles as rows.
#pragma once

#include <phew/core/timer.hpp>
#include <phew/grid/cell_labels.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/model/bound.hpp>
#include <phew/model/clumps.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/particle_set.hpp>
#include <phew/unbind/unbind.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace phew::unbind {

struct Unbound {
  std::vector<model::BoundObject> objects;      // this rank's rows, after the lower ranks' (by ID)
  std::vector<model::BoundParticle> particles;  // this rank's rows, after the lower ranks' (by particle ID)
  std::vector<model::MostBoundRow> most_bound;  // this rank's rows, after the lower ranks' (by object, rank)
  // Totals over the ranks:
  std::int64_t n_objects = 0, n_haloes = 0;
  std::int64_t n_particles = 0;   // in the cells of a clump of the catalogue
  std::int64_t n_bound = 0;       // bound to some object
  std::int64_t n_unbound = 0;     // released by their halo
  std::int64_t n_passed = 0;      // passes from an object to its parent
  std::int64_t n_dissolved = 0;   // objects with fewer than the minimum bound particles
  std::int64_t n_not_converged = 0;  // objects that reached the iteration limit
};

// Unbinds the clumps of a catalogue: `clump_cells` are the test cells of this rank's run of cells
// (`cuts`, from space.rank_cuts) with their level-0 clump, `particles` this rank's share of the snapshot
// (ids, velocities, masses), `clumps` every row of the clump table (every rank holds it: one row per
// clump), `n_peaks` the peaks of the segmentation (clump and halo IDs are at most it). An object's
// parent is its clump's parent in the saddle hierarchy, else its halo when that is in the table; the
// particles of clumps not in the table (phew-merge --mass-threshold) are left out. Haloes go to ranks in
// runs of halo IDs with about equal particle counts; nothing depends on the rank count. Collective.
// Phases: members, unbind.
Unbound unbind_catalogue(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts,
                         const particles::ParticleSet& particles, const grid::CellLabels& clump_cells,
                         std::span<const model::Clump> clumps, std::int64_t n_peaks, const Frame& frame,
                         const Params& params, const mpi::Comm& comm, const core::PhaseReport& phase = {});

}  // namespace phew::unbind
