// cic-project's stage: a snapshot's particles -> density on a uniform grid, with the metadata that
// grid.h5 records (units, cosmology, counts).
#pragma once

#include <phew/grid/assignment.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/slab.hpp>
#include <phew/core/timer.hpp>
#include <phew/particles/snapshot.hpp>

#include <optional>
#include <vector>

namespace phew::particles {

// The grid: the periodic box, a finite open box, or `region` (never periodic). Throws Error(usage)
// when the snapshot has no box and no region is given.
grid::GridGeometry projection_geometry(const SnapshotInfo& info, const std::array<std::int64_t, 3>& shape,
                                 const std::optional<grid::Box>& region);

struct Projection {
  grid::GridMeta meta;
  std::vector<double> density;  // this rank's planes of the slab decomposition
  std::uint64_t particles_outside = 0;  // outside a region, ignored
};

// Deposits this rank's share of `particles` (read_share: rank r's before rank r+1's) and turns mass into
// density. A particle outside a finite open box (no region) is an error, not something to drop.
// Phases: deposit. Collective.
Projection project(const SnapshotInfo& info, const ParticleSet& particles, const grid::GridGeometry& geometry,
                   grid::Assignment assignment, bool region, const mpi::SlabDecomposition& slabs, const mpi::Comm& comm,
                   const core::PhaseReport& phase = {});

}  // namespace phew::particles
