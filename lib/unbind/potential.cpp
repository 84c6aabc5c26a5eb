#include <phew/unbind/potential.hpp>

#include <phew/gravity/forest.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mpi/comm.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace phew::unbind {

void direct_potential(std::span<const double> position, std::span<const double> mass,
                      std::span<const std::size_t> members, double G, double softening, std::vector<double>& phi) {
  const double eps2 = softening * softening;
  for (const std::size_t i : members) {
    const double* xi = &position[3 * i];
    double sum = 0;
    for (const std::size_t j : members) {
      if (j == i) continue;
      const double dx = xi[0] - position[3 * j], dy = xi[1] - position[3 * j + 1], dz = xi[2] - position[3 * j + 2];
      const double q2 = dx * dx + dy * dy + dz * dz + eps2;
      if (q2 > 0) sum += mass[j] / std::sqrt(q2);
    }
    phi[i] = -G * sum;
  }
}

void tree_potential(std::span<const double> position, std::span<const double> mass, std::span<const std::uint64_t> id,
                    std::span<const std::size_t> members, double G, double softening, double theta,
                    std::vector<double>& phi) {
  if (members.empty()) return;
  std::vector<gravity::Source> sources(members.size());
  std::array<double, 3> lo{}, hi{};
  for (std::size_t d = 0; d < 3; ++d) lo[d] = hi[d] = position[3 * members[0] + d];
  for (std::size_t k = 0; k < members.size(); ++k) {
    const std::size_t i = members[k];
    for (std::size_t d = 0; d < 3; ++d) {
      sources[k].x[d] = position[3 * i + d];
      lo[d] = std::min(lo[d], sources[k].x[d]);
      hi[d] = std::max(hi[d], sources[k].x[d]);
    }
    sources[k].m = mass[i];
    sources[k].id = id[i];
  }
  // One cube around the set in an open box: the Forest's pyramid is then that cube alone, and every
  // interaction comes from the cube's own octree.
  double side = 0;
  for (std::size_t d = 0; d < 3; ++d) side = std::max(side, hi[d] - lo[d]);
  const double pad = 1e-6 * side + 1e-300;
  grid::GridGeometry box;
  box.shape = {1, 1, 1};
  box.periodic = false;
  for (std::size_t d = 0; d < 3; ++d) {
    box.origin[d] = lo[d] - pad;
    box.extent[d] = side + 2 * pad;
  }
  const double inf = std::numeric_limits<double>::infinity();
  gravity::Forest forest(box, {1, 1, 1}, {-inf, inf}, std::move(sources), gravity::PairForce(G, softening), {theta, 8});
  forest.share_cube_moments(mpi::Comm::self(), [](std::int64_t) { return true; });
  std::vector<std::uint8_t> done(members.size(), 0);
  for (std::size_t k = 0; k < members.size(); ++k) {
    if (done[k]) continue;
    forest.accumulate_group(k, [&](std::size_t s, const double*, double p, const double*) {
      const std::size_t i = members[s];
      // A softened source sees itself at distance 0: -G m / eps, not part of the potential.
      phi[i] = softening > 0 ? p + G * mass[i] / softening : p;
      done[s] = 1;
    });
  }
}

}  // namespace phew::unbind
