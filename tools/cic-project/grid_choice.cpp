#include "grid_choice.hpp"

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>
#include <phew/grid/deposit.hpp>
#include <phew/mpi/agree.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace phew::tools {

// --grid auto (or no --grid): the grid rule (lib/grid/geometry.hpp) for the particles in the grid's
// region. Before reading, the particles inside a sub-box of a periodic box are estimated from the box's
// mean; an open box's region is taken to hold them all. Without --grid, the rule's choice is suggested
// in a usage error.
std::array<std::int64_t, 3> auto_grid_shape(const particles::SnapshotInfo& info, const std::vector<int>& types,
                                            const grid::GridGeometry& region, const CicParams& params) {
  const std::uint64_t n_particles = info.total(types);
  double inside = static_cast<double>(n_particles);
  if (params.region && info.periodic)
    inside *= std::min(1.0, region.extent[0] * region.extent[1] * region.extent[2] /
                                (info.box_size[0] * info.box_size[1] * info.box_size[2]));
  // With --refine the coarse grid holds about one particle per cell (RAMSES' levelmin); the octree refines it.
  const auto shape = params.octree ? grid::coarse_grid_shape(region.extent, inside)
                                   : grid::grid_rule_shape(region.extent, inside, params.for_threshold);
  const std::string grid = shape[0] == shape[1] && shape[1] == shape[2]
                               ? fmt::format("{}", shape[0])
                               : fmt::format("{},{},{}", shape[0], shape[1], shape[2]);
  const double per_cell = grid::particles_per_threshold_cell(params.for_threshold, inside,
                                                             static_cast<double>(shape[0] * shape[1] * shape[2]));
  const std::string particles =
      params.region && info.periodic
          ? fmt::format("about {} particles in the region", core::log::thousands(std::llround(inside)))
          : fmt::format("{} particles", core::log::thousands(static_cast<long long>(n_particles)));
  if (!params.auto_grid)
    throw core::Error::usage(
        "--grid is missing: for {} and a threshold of {}mean, the grid rule gives --grid {} (a cell at "
        "the threshold holds {:.2f} particle masses, at least {:g}; docs/thresholds.md, \"The grid\"), "
        "or give --grid auto",
        particles, params.for_threshold, grid, per_cell, grid::kParticlesPerThresholdCell);
  core::log::info(
      "--grid auto: {} cells for {} and a threshold of {}mean (the grid rule: a cell at the threshold holds "
      "{:.2f} particle masses)",
      grid, particles, params.for_threshold, per_cell);
  return shape;
}

// Refuses before allocating: this rank's block of the uniform grid (mpi::BlockDecomposition, as the
// deposit cuts it) and particle share, times the ranks sharing the node. Collective.
void check_projection_memory(const grid::GridGeometry& geometry, std::uint64_t n_total, io::Precision precision,
                             const mpi::Comm& comm) {
  const double cell_bytes = precision == io::Precision::f32 ? 4.0 : 8.0;  // the grid is held in the file's precision
  const mpi::BlockDecomposition blocks(geometry.shape, comm.size());
  const double block_bytes = cell_bytes * static_cast<double>(blocks.box(comm.rank()).cells());
  const double particle_bytes = (32.0 + grid::kDepositBytesPerParticle) * static_cast<double>(n_total) / comm.size();
  mpi::agree(comm, [&] {
    core::check_memory((block_bytes + particle_bytes) * mpi::ranks_on_node(comm), core::available_memory_bytes(),
                       fmt::format("a {}x{}x{} grid of {} particles", geometry.shape[0], geometry.shape[1],
                                   geometry.shape[2], core::log::thousands(static_cast<long long>(n_total))));
  });
}

}  // namespace phew::tools
