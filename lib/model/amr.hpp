// The rows of an adaptive grid (cic-project --refine; grid.h5 with /grid/leaves, lib/io/amr_grid_file.hpp):
// the leaves of the octree in key order and how it was refined.
#pragma once

#include <cstdint>
#include <vector>

namespace phew::model {

// A leaf of the octree: its key (lib/mesh/cell_key.hpp: Morton order of the finest lattice, the level in
// the low 4 bits), its level and its density.
struct AmrLeaf {
  std::uint64_t key = 0;
  std::int32_t level = 0;
  double density = 0;
};

// How the octree was refined (RAMSES' names in brackets).
struct AmrRefinement {
  std::int32_t levels = 0;            // levels above the coarse grid (levelmax - levelmin)
  double refine_particles = 0;        // a cell holding more than this many particle masses is split (m_refine)
  double refine_mass = 0;             // that limit as a mass: refine_particles * the mean particle mass
  std::int32_t buffer = 0;            // cells around a split cell split too (nexpand)
  std::vector<std::uint64_t> leaves_per_level;  // [levels + 1]
};

}  // namespace phew::model
