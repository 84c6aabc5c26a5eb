// The grid cic-project projects onto: --grid auto's choice by the grid rule, and the memory check
// before the grid is allocated.
#pragma once

#include "cic_project.hpp"

#include <phew/grid/geometry.hpp>
#include <phew/mpi/blocks.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/particle_set.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace phew::tools {

// --grid auto (or no --grid): the grid rule (lib/grid/geometry.hpp) for the particles of `types` in the
// grid's region; without --grid, the rule's choice is suggested in a usage error.
std::array<std::int64_t, 3> auto_grid_shape(const particles::SnapshotInfo& info, const std::vector<int>& types,
                                            const grid::GridGeometry& region, const CicParams& params);

// Refuses before allocating: this rank's block of the uniform grid (mpi::BlockDecomposition, as the
// deposit cuts it) and particle share, times the ranks sharing the node. Collective.
void check_projection_memory(const grid::GridGeometry& geometry, std::uint64_t n_total, io::Precision precision,
                             const mpi::Comm& comm);

}  // namespace phew::tools
