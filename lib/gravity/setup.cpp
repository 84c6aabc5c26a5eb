#include <phew/gravity/setup.hpp>

#include <phew/gravity/forest.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace phew::gravity {

Setup plan_potential(bool periodic, const std::array<double, 3>& box_size, std::uint64_t n_particles, double reach,
                     double G, std::span<const double> position, std::span<const double> mass,
                     const std::array<double, 3>& fallback_origin, const SetupParams& params, const mpi::Comm& comm) {
  Setup gs;
  if (periodic) {
    const grid::GridGeometry whole{{1, 1, 1}, {0, 0, 0}, box_size, true};
    std::int64_t n = params.pm_mesh;
    if (n == 0) {  // about one cell per particle, a power of two, 32 .. 512
      n = 32;
      while (n < 512 && static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) <
                            static_cast<double>(n_particles))
        n *= 2;
    }
    gs.mesh = grid::GridGeometry{{n, n, n}, whole.origin, whole.extent, true};
    const auto h = gs.mesh.cell_size();
    gs.r_split = kSplitInCells * std::max({h[0], h[1], h[2]});
    const double r_cut = PairForce::kCutInSplits * gs.r_split;
    gs.box = whole;
    for (std::size_t d = 0; d < 3; ++d)
      gs.cubes[d] = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(whole.extent[d] / r_cut)), 3, 128);
    gs.cube_reach = whole.extent[0] / static_cast<double>(gs.cubes[0]) * (1 + 1e-9);
    // The mesh is sampled at voters' candidates, within the reach. The ghost planes cover one cube more,
    // a spare margin since only candidates are sampled (every member of a candidate's tree group once
    // was), left in place: the values sampled do not depend on it.
    gs.mesh_field = std::make_unique<LongRangeField>(gs.mesh, G, gs.r_split, position, mass, reach + gs.cube_reach,
                                                     comm, params.threads);
    gs.description = fmt::format(
        "computed: TreePM, long range on a {}^3 mesh (split scale {:.6g}), short range by "
        "Barnes-Hut trees (theta {})",
        n, gs.r_split, params.theta);
    return gs;
  }
  // Open box: cubes over the particles' bounding box, so that no particle lies outside its cube.
  std::array<double, 3> lo{}, hi{};
  const std::size_t count = position.size() / 3;
  for (std::size_t d = 0; d < 3; ++d) {
    double l = std::numeric_limits<double>::infinity(), u = -l;
    for (std::size_t i = 0; i < count; ++i) {
      l = std::min(l, position[3 * i + d]);
      u = std::max(u, position[3 * i + d]);
    }
    lo[d] = comm.min(l);
    hi[d] = comm.max(u);
    if (!(hi[d] >= lo[d])) lo[d] = hi[d] = fallback_origin[d];
  }
  gs.box.periodic = false;
  gs.box.shape = {1, 1, 1};
  double side = 0;
  for (std::size_t d = 0; d < 3; ++d) {
    gs.box.origin[d] = lo[d];
    gs.box.extent[d] = (hi[d] - lo[d]) * (1 + 1e-9) + 1e-300;
    side = std::max(side, gs.box.extent[d] / 16);
  }
  gs.cubes = {16, 16, 16};
  gs.cube_reach =
      side / params.theta + side;  // a cube (side l) is opened only by points within l / theta of its mass centre
  gs.description = fmt::format("computed: Barnes-Hut tree over all particles (open box, theta {})", params.theta);
  return gs;
}

double default_softening(const grid::GridGeometry& grid, std::uint64_t n_particles) {
  const double spacing = std::cbrt(grid.extent[0] * grid.extent[1] * grid.extent[2] /
                                   std::max<double>(1.0, static_cast<double>(n_particles)));
  return std::min(spacing / 30.0, 0.1 * grid.cell_size()[0]);
}

}  // namespace phew::gravity
