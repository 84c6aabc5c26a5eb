// cic-project's stage: a snapshot's particles -> density on the uniform grid or the adaptive mesh, with the metadata that
// grid.h5 records (units, cosmology, counts).
#pragma once

#include <phew/grid/assignment.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/model/amr.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/blocks.hpp>
#include <phew/mesh/field.hpp>
#include <phew/core/timer.hpp>
#include <phew/particles/snapshot.hpp>

#include <optional>
#include <variant>
#include <vector>

namespace phew::particles {

// The grid: the periodic box, a finite open box, or `region` (never periodic). Throws Error(usage)
// when the snapshot has no box and no region is given.
grid::GridGeometry projection_geometry(const SnapshotInfo& info, const std::array<std::int64_t, 3>& shape,
                                       const std::optional<grid::Box>& region);

struct ProjectionParams {
  grid::GridGeometry geometry;  // projection_geometry
  grid::Assignment assignment = grid::Assignment::cic;
  bool region = false;            // the grid is a region given by the user: particles outside it are
                                  // counted and left out; otherwise one outside a finite open box is an error
  int threads = 1;                // for the deposit (uniform or adaptive)
  bool single_precision = false;  // the uniform grid's densities as float32 (the file's precision): the
                                  // float64 grid is never whole, each value rounded once, as on writing
};

// An adaptive mesh (cic-project --refine): the octree over the coarse grid of ProjectionParams.
struct OctreeParams {
  int levels = 4;               // levels above the coarse grid
  double refine_particles = 8;  // split a cell holding more than this many particle masses
  int buffer = 1;               // cells around a split cell split too
};
// --refine, --levels and --buffer checked by the mesh's own rules (mesh::check_refinement_options).
// Throws Error(usage).
OctreeParams octree_params(double refine_particles, int levels, int buffer);

// The density on either mesh, as this rank holds its share, with the totals grid.h5 records.
struct Projection {
  grid::GridMeta meta;  // the grid (the adaptive mesh's coarse grid) and the totals of its cells
  // BlockField: this rank's block of mpi::BlockDecomposition(geometry.shape, ranks), C order, in float32
  // with ProjectionParams::single_precision. LeafField: this rank's run of leaves in key order.
  mesh::Field field;
  std::uint64_t particles_outside = 0;  // outside a region, ignored
};

// Particles a rank reads at a time for the uniform grid's deposit (8 MiB of positions and masses).
inline constexpr std::uint64_t kReadChunk = std::uint64_t{1} << 18;

// The snapshot's `types` particles deposited, mass turned into density, on the uniform grid of
// `params.geometry` or, with `octree`, on an octree over it refined where the particles are (lib/mesh:
// RAMSES' rule; the unit of refine_particles is the particle mass, or the mean mass when they differ).
// The uniform grid's deposit reads this rank's share (read_share's) a chunk at a time; the octree's
// reads the share whole. The reader's info gives the units, the cosmology and the file named in errors.
// Phases: read, then deposit (uniform) or refine (adaptive). Collective.
Projection project(const SnapshotReader& reader, const std::vector<int>& types, const ProjectionParams& params,
                   const std::optional<OctreeParams>& octree, const mpi::Comm& comm,
                   const core::PhaseReport& phase = {});

}  // namespace phew::particles
