#include <phew/dtfe/density.hpp>

#include <phew/core/error.hpp>
#include <phew/dtfe/predicates.hpp>
#include <phew/core/threads.hpp>

#include <cmath>

namespace phew::dtfe {

std::vector<double> vertex_densities(const FieldPoints& points, const Triangulation& tri, int threads) {
  const std::size_t n = points.size();
  const std::int32_t* q = points.q.data();
  // Six times the star volume of each vertex, in quanta^3. Integer sums are associative, so each
  // thread sums a block of tetrahedra into its own array and the arrays are added afterwards.
  const int t = std::max(1, threads);
  std::vector<std::vector<Int128>> partial(static_cast<std::size_t>(t));
  const std::size_t m = tri.tets.size();
  const std::size_t block = (m + static_cast<std::size_t>(t) - 1) / static_cast<std::size_t>(t);
  core::parallel_for(t, m, block, [&](std::size_t b, std::size_t e, int id) {
    auto& sum = partial[static_cast<std::size_t>(id)];
    if (sum.empty()) sum.assign(n, 0);
    for (std::size_t i = b; i < e; ++i) {
      const Tet& tet = tri.tets[i];
      Int128 v = orient3d(q + 3 * tet.vertex[0], q + 3 * tet.vertex[1], q + 3 * tet.vertex[2], q + 3 * tet.vertex[3]);
      if (v < 0) v = -v;
      for (std::int32_t k : tet.vertex) sum[static_cast<std::size_t>(k)] += v;
    }
  });
  std::vector<Int128> total(n, 0);
  for (const auto& s : partial)
    if (!s.empty())
      for (std::size_t i = 0; i < n; ++i) total[i] += s[i];

  std::vector<double> mass(points.mass);
  for (const auto& [from, into] : tri.absorbed) {
    mass[static_cast<std::size_t>(into)] += mass[static_cast<std::size_t>(from)];
    mass[static_cast<std::size_t>(from)] = 0;
  }
  // rho = 4 m / V with V = total / 6 quanta^3.
  const double volume_unit = std::pow(points.scale, 3) / 6.0;
  std::vector<double> rho(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    if (total[i] == 0) {
      if (mass[i] == 0) continue;  // absorbed, or not a vertex
      throw core::Error::input("a particle of the field has no volume around it (degenerate, flat particle set)");
    }
    rho[i] = 4.0 * mass[i] / (static_cast<double>(total[i]) * volume_unit);
  }
  return rho;
}

}  // namespace phew::dtfe
