// The rows of an adaptive grid (cic-project --refine; grid.h5 with /grid/leaves, lib/io/amr_grid_file.hpp):
// the leaves of the octree in key order and how it was refined.
#pragma once

#include <cstdint>
#include <vector>

namespace phew::model {

// Leaves of the octree in key order, as two columns (the meshes' layout): each one's key (lib/mesh/
// cell_key.hpp: Morton order of the finest lattice, the level in the low 4 bits) and density, held as
// Real (float: a float32 file's densities as stored, half the memory and the same doubles).
template <typename Real>
struct BasicAmrLeaves {
  std::vector<std::uint64_t> key;
  std::vector<Real> density;
  std::size_t size() const { return key.size(); }
  bool empty() const { return key.empty(); }
};
using AmrLeaves = BasicAmrLeaves<double>;

// How the octree was refined (RAMSES' names in brackets).
struct AmrRefinement {
  std::int32_t levels = 0;      // levels above the coarse grid (levelmax - levelmin)
  double refine_particles = 0;  // a cell holding more than this many particle masses is split (m_refine)
  double refine_mass = 0;       // that limit as a mass: refine_particles * the mean particle mass
  std::int32_t buffer = 0;      // cells around a split cell split too (nexpand)
  std::vector<std::uint64_t> leaves_per_level;  // [levels + 1]
};

}  // namespace phew::model
