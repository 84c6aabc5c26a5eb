#include <phew/unbind/potential.hpp>

#include <phew/core/error.hpp>
#include <phew/gravity/forest.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mpi/comm.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
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

namespace {

// Barnes-Hut over `sources`: one cube around the set in an open box (the Forest's pyramid is then that
// cube alone, and every interaction comes from the cube's own octree), the potential at the sources
// `wanted` marks (empty: every one) given to put(source index, phi), without a softened source's
// self-term -G m / eps.
void tree_walk(std::vector<gravity::Source> sources, std::span<const std::uint8_t> wanted, double G, double softening,
               double theta, const std::function<void(std::size_t, double)>& put) {
  if (sources.empty()) return;
  std::array<double, 3> lo{}, hi{};
  for (std::size_t d = 0; d < 3; ++d) lo[d] = hi[d] = sources[0].x[d];
  for (const gravity::Source& s : sources)
    for (std::size_t d = 0; d < 3; ++d) {
      lo[d] = std::min(lo[d], s.x[d]);
      hi[d] = std::max(hi[d], s.x[d]);
    }
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
  const std::size_t n = sources.size();
  const double inf = std::numeric_limits<double>::infinity();
  gravity::Forest forest(box, {1, 1, 1}, {-inf, inf}, std::move(sources), gravity::PairForce(G, softening), {theta, 8});
  forest.share_cube_moments(mpi::Comm::self(), [](std::int64_t) { return true; });
  std::vector<std::uint8_t> done(n, 0);
  for (std::size_t k = 0; k < n; ++k) {
    if (done[k] || (!wanted.empty() && !wanted[k])) continue;
    forest.accumulate_group(
        k,
        [&](std::size_t s, const double*, double p, const double*) {
          put(s, softening > 0 ? p + G * forest.mass(s) / softening : p);
          done[s] = 1;
        },
        wanted);
  }
}

}  // namespace

std::vector<gravity::Source> sources_of(std::span<const double> position, std::span<const double> mass,
                                        std::span<const std::uint64_t> id, std::span<const std::size_t> members) {
  std::vector<gravity::Source> sources(members.size());
  for (std::size_t k = 0; k < members.size(); ++k) {
    const std::size_t i = members[k];
    for (std::size_t d = 0; d < 3; ++d) sources[k].x[d] = position[3 * i + d];
    sources[k].m = mass[i];
    sources[k].id = id[i];
  }
  return sources;
}

void tree_potential(std::span<const double> position, std::span<const double> mass, std::span<const std::uint64_t> id,
                    std::span<const std::size_t> members, double G, double softening, double theta,
                    std::vector<double>& phi) {
  tree_walk(sources_of(position, mass, id, members), {}, G, softening, theta,
            [&](std::size_t s, double p) { phi[members[s]] = p; });
}

void block_potential(std::vector<gravity::Source> sources, std::size_t first, std::size_t last, double G,
                     double softening, double theta, std::size_t direct_below, std::vector<double>& phi) {
  if (first > last || last > sources.size())
    throw core::Error::internal("unbind: block [{}, {}) of a set of {}", first, last, sources.size());
  phi.assign(last - first, 0.0);
  if (sources.size() < direct_below) {
    // direct_potential itself, over the set's columns (a few thousand sources at most).
    const std::size_t n = sources.size();
    std::vector<double> position(3 * n), mass(n), all_phi(n, 0.0);
    std::vector<std::size_t> every(n);
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t d = 0; d < 3; ++d) position[3 * k + d] = sources[k].x[d];
      mass[k] = sources[k].m;
      every[k] = k;
    }
    direct_potential(position, mass, every, G, softening, all_phi);
    std::copy(all_phi.begin() + static_cast<std::ptrdiff_t>(first), all_phi.begin() + static_cast<std::ptrdiff_t>(last),
              phi.begin());
    return;
  }
  std::vector<std::uint8_t> wanted;
  if (first > 0 || last < sources.size()) {
    wanted.assign(sources.size(), 0);
    std::fill(wanted.begin() + static_cast<std::ptrdiff_t>(first), wanted.begin() + static_cast<std::ptrdiff_t>(last),
              1);
  }
  tree_walk(std::move(sources), wanted, G, softening, theta, [&](std::size_t s, double p) { phi[s - first] = p; });
}

}  // namespace phew::unbind
