// How voters computes a potential (docs/tools/voters.md, "The computed potential"): in a periodic box
// TreePM (a particle-mesh for the long range, Barnes-Hut trees over cubes at least r_cut wide for the
// short range); in an open box Barnes-Hut over cubes of the particles' bounding box.
#pragma once

#include <phew/gravity/long_range.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <memory>
#include <span>
#include <string>

namespace phew::gravity {

struct SetupParams {
  std::int64_t pm_mesh = 0;  // periodic: mesh cells per side; 0: about one per particle, 32 .. 512
  double theta = 0.7;        // Barnes-Hut opening angle; voters' --theta default (docs/tools/voters.md)
  int threads = 1;           // the long-range field's FFT and Green's function
};

struct Setup {
  grid::GridGeometry box;               // the forest's box: the snapshot's (periodic) or the particles' bounding box
  std::array<std::int64_t, 3> cubes{};  // forest cubes per axis
  double cube_reach = 0;                // how far beyond a rank's candidates it must hold whole cubes
  grid::GridGeometry mesh;              // periodic: the particle-mesh
  double r_split = 0;                   // periodic: the TreePM split scale
  std::unique_ptr<LongRangeField> mesh_field;  // periodic: the long-range part
  std::string description;                     // for the output ("computed: TreePM, ...")
};

constexpr double kSplitInCells = 1.25;  // r_s in mesh cells (Gadget's ASMTH)

// The plan for a snapshot: `periodic` with `box_size` (the whole box, also when the peaks' grid covers
// a region of it), `n_particles` in total. Periodic: the long-range field is computed here, sampled up
// to `reach` (the largest search radius) plus one forest cube beyond a rank's slab. Open: the bounding
// box of this rank's and every other rank's `position`s ([n][3]); `fallback_origin` when there are none.
// Collective.
Setup plan_potential(bool periodic, const std::array<double, 3>& box_size, std::uint64_t n_particles, double reach,
                     double G, std::span<const double> position, std::span<const double> mass,
                     const std::array<double, 3>& fallback_origin, const SetupParams& params, const mpi::Comm& comm);

// The default Plummer softening: 1/30 of the mean interparticle spacing of `n_particles` in the grid's
// box (a usual choice for dark-matter runs), at most a tenth of a grid cell.
double default_softening(const grid::GridGeometry& grid, std::uint64_t n_particles);

}  // namespace phew::gravity
