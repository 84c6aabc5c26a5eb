// unbind's stage: each halo's hierarchy of objects (the level-0 clumps of clumps.h5, their particles
// those of their test cells, particles::members_of_cells, as deblend finds a patch's; or deblend's
// peaks, particles::members_by_id) gathered on one rank and unbound there (unbind_hierarchy, finest
// first, unbound particles passed to the parent); the objects, the particles' bound objects and the
// most-bound particles as rows.
#pragma once

#include <phew/core/timer.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/model/bound.hpp>
#include <phew/model/clumps.hpp>
#include <phew/model/patches.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/cell_members.hpp>
#include <phew/unbind/unbind.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace phew::unbind {

// The haloes of one size class and the time their unbinding took (summed over threads and ranks).
struct SizeBin {
  std::int64_t smallest = 0;  // the haloes of smallest .. 2 smallest - 1 particles (0: none)
  std::int64_t haloes = 0, particles = 0;
  double seconds = 0;
};

struct Unbound {
  std::vector<model::BoundObject> objects;      // this rank's rows, after the lower ranks' (by ID)
  std::vector<model::BoundParticle> particles;  // this rank's rows, after the lower ranks' (by particle ID)
  std::vector<model::MostBoundRow> most_bound;  // this rank's rows, after the lower ranks' (by object, rank)
  std::vector<model::BoundTypeRow> by_type;     // a row per object of `objects` and type of Params::types
  // Totals over the ranks:
  std::int64_t n_objects = 0, n_haloes = 0;
  std::int64_t n_particles = 0;      // in the cells of a clump of the catalogue
  std::int64_t n_bound = 0;          // bound to some object
  std::int64_t n_unbound = 0;        // released by their halo
  std::int64_t n_passed = 0;         // passes from an object to its parent
  std::int64_t n_dissolved = 0;      // objects with fewer than the minimum bound particles
  std::int64_t n_single = 0;         // objects with one particle of their own (noise: they cannot be bound)
  std::int64_t n_not_converged = 0;  // objects that reached the iteration limit
  // The working set (the schedule, lib/unbind/schedule.hpp):
  std::int64_t batch_particles = 0;      // the budget of a batch
  std::int64_t n_batches = 0;            // rounds: the most batches of a rank
  std::int64_t largest_halo = 0;         // particles of the biggest halo
  std::int64_t largest_batch = 0;        // the most particles a rank held to unbind at once
  std::int64_t n_spread = 0;             // haloes of more than a rank's share, unbound over every rank
  std::vector<SizeBin> seconds_by_size;  // by halo size, the smallest first
};

// An object to unbind: a level-0 clump of clumps.h5, or a peak of deblend's peaks.h5.
struct ObjectRow {
  std::int64_t id = 0;
  std::int64_t parent = 0;       // in the saddle hierarchy; itself (or 0) when it has none
  std::int64_t halo = 0;         // the top of its hierarchy (itself for a halo or a peak)
  std::array<double, 3> peak{};  // its density peak (or a peak's position), comoving
  double saddle_radius = 0;      // comoving distance from the peak to its key saddle (key_saddle_radii); 0: none
};

// The comoving distance from each clump's peak to its key saddle (the densest saddle between a patch of
// the clump and a patch of another clump: `saddles` of patches.h5, `peaks` of clumps.h5 giving each
// peak's clump), the saddle being midway between its two cells' centres (`space`), through the nearest
// image in a periodic box. Ties in density go to the earlier row (rows sorted by peak pair). Clumps
// without such a saddle are not in the result. Pure.
std::map<std::int64_t, double> key_saddle_radii(std::span<const model::SaddleRow> saddles,
                                                std::span<const model::MergedPeak> peaks,
                                                std::span<const ObjectRow> objects, const mesh::CellSpace& space);

// Unbinds every object of `objects` (every rank holds them all: one row per object), whose particles
// are `members` (this rank's share, each with label = its object's ID; particles of objects not in
// `objects` are left out). An object's parent is its `parent` when that is in `objects`, else its
// `halo` when that is; all the objects of one halo and their particles go to one rank, scheduled by
// schedule_haloes (the biggest haloes first onto the least loaded rank, each rank's haloes in batches
// of at most `batch_particles` particles, or one bigger halo), a batch's particles sent, unbound and
// released before the next batch's are sent; the rows do not depend on the rank count or the batches.
// A halo of more than a rank's share of the particles (several ranks, profile potential, one top
// object) is spread: its sub-objects are unbound on its rank as above, then its top object over every
// rank (unbind_spread_object), its particles in blocks of IDs. With params.saddle, a sub-object (one with a parent) keeps only the particles below the
// potential at its saddle_radius (RAMSES' saddle_pot; a halo has nothing to escape over). `threads` unbind a rank's haloes side by side (the rows do not depend on it; the tree
// mode's Forest works on mpi::Comm::self(), which makes no MPI call). Collective. Phase: unbind.
Unbound unbind_objects(std::vector<particles::CellMember> members, std::span<const ObjectRow> objects,
                       const Frame& frame, const Params& params, int threads, std::int64_t batch_particles,
                       const mpi::Comm& comm, const core::PhaseReport& phase = {});

}  // namespace phew::unbind
