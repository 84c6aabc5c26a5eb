#include <phew/dtfe/grid_walk.hpp>

#include <phew/core/error.hpp>

#include <phew/dtfe/march.hpp>
#include <phew/dtfe/predicates.hpp>
#include <phew/core/threads.hpp>

#include <algorithm>
#include <cmath>

namespace phew::dtfe {
namespace {

// Orientation of (a, b, c, d) as a double with the sign always right: a floating-point evaluation
// with Shewchuk's static error bound, exact integers when the bound is not met. The walk is the
// alternative being measured, so it gets the usual fast filtered predicate, not only exact ones.
double orient3d_filtered(const double* a, const double* b, const double* c, const double* d) {
  const double adx = a[0] - d[0], ady = a[1] - d[1], adz = a[2] - d[2];
  const double bdx = b[0] - d[0], bdy = b[1] - d[1], bdz = b[2] - d[2];
  const double cdx = c[0] - d[0], cdy = c[1] - d[1], cdz = c[2] - d[2];
  const double det = adx * (bdy * cdz - bdz * cdy) + bdx * (cdy * adz - cdz * ady) + cdx * (ady * bdz - adz * bdy);
  const double perm = std::abs(adx) * (std::abs(bdy * cdz) + std::abs(bdz * cdy)) +
                      std::abs(bdx) * (std::abs(cdy * adz) + std::abs(cdz * ady)) +
                      std::abs(cdx) * (std::abs(ady * bdz) + std::abs(adz * bdy));
  if (std::abs(det) > 7.7715611723761e-16 * perm) return det;
  std::int32_t ia[3], ib[3], ic[3], id[3];
  for (int k = 0; k < 3; ++k)
    ia[k] = static_cast<std::int32_t>(a[k]), ib[k] = static_cast<std::int32_t>(b[k]),
    ic[k] = static_cast<std::int32_t>(c[k]), id[k] = static_cast<std::int32_t>(d[k]);
  // det[a - d, b - d, c - d], exactly.
  return static_cast<double>(orient3d(id, ia, ib, ic));
}

}  // namespace

TetWalker::TetWalker(const FieldPoints& points, const Triangulation& tri, const std::vector<double>& rho)
    : points_(points), tets_(tri.tets), neighbours_(tri.neighbours), rho_(rho) {
  if (!tri.linked()) throw core::Error::internal("TetWalker: a triangulation without neighbours");
}

double TetWalker::density(const std::int64_t p[3], std::int32_t& hint, std::uint64_t& steps) const {
  if (tets_.empty()) return 0.0;
  std::int32_t t = (hint >= 0 && static_cast<std::size_t>(hint) < tets_.size()) ? hint : 0;
  std::int32_t previous = -2;  // no tetrahedron (-1 is the outside)
  const double pd[3] = {static_cast<double>(p[0]), static_cast<double>(p[1]), static_cast<double>(p[2])};
  const std::size_t limit = 4 * tets_.size() + 16;
  for (std::size_t step = 0; step < limit; ++step) {
    ++steps;
    const Tet& tet = tets_[static_cast<std::size_t>(t)];
    double v[4][3];
    for (int k = 0; k < 4; ++k)
      for (int d = 0; d < 3; ++d)
        v[k][d] =
            static_cast<double>(points_.q[3 * static_cast<std::size_t>(tet.vertex[k]) + static_cast<std::size_t>(d)]);
    const double o = orient3d_filtered(v[0], v[1], v[2], v[3]);
    double lam[4];
    int out = -1;
    for (int k = 0; k < 4; ++k) {
      double w[4][3];
      for (int j = 0; j < 4; ++j)
        for (int d = 0; d < 3; ++d) w[j][d] = j == k ? pd[d] : v[j][d];
      lam[k] = orient3d_filtered(w[0], w[1], w[2], w[3]);
      // p and vertex k on opposite sides of face k (Sambridge's test, Eq. 6): move across it. Never
      // straight back, which is what could make a walk through a flat tetrahedron oscillate.
      const bool across = o > 0 ? lam[k] < 0 : (o < 0 ? lam[k] > 0 : lam[k] != 0);
      if (across && out < 0 && neighbours_[static_cast<std::size_t>(t)].across[k] != previous) out = k;
    }
    if (out < 0) {
      hint = t;
      if (o == 0) return 0.0;
      double r = 0;
      for (int k = 0; k < 4; ++k) r += lam[k] / o * rho_[static_cast<std::size_t>(tet.vertex[k])];
      return r;
    }
    hint = t;
    previous = t;
    t = neighbours_[static_cast<std::size_t>(t)].across[out];
    if (t < 0) return 0.0;  // outside the hull
  }
  return 0.0;
}

std::vector<double> TetWalker::map(const FieldGeometry& g, int nz, int threads, WalkStats* stats) const {
  const int ng = g.resolution;
  const auto n = static_cast<std::size_t>(ng);
  const double s = points_.scale, pix = g.pixel_size();
  std::vector<double> sigma(n * n, 0.0);
  std::vector<std::int64_t> centre(n), depth(static_cast<std::size_t>(nz));
  for (std::size_t i = 0; i < n; ++i) centre[i] = to_lattice((static_cast<double>(i) + 0.5) * pix - 0.5 * g.size, s);
  const double dz = g.depth / nz;
  for (int k = 0; k < nz; ++k) depth[static_cast<std::size_t>(k)] = to_lattice((k + 0.5) * dz - 0.5 * g.depth, s);
  const int t = std::max(1, threads);
  std::vector<std::int32_t> hint(static_cast<std::size_t>(t), 0);
  std::vector<WalkStats> per(static_cast<std::size_t>(t));
  core::parallel_for(t, n, 1, [&](std::size_t i0, std::size_t i1, int id) {
    auto& h = hint[static_cast<std::size_t>(id)];
    auto& st = per[static_cast<std::size_t>(id)];
    for (std::size_t i = i0; i < i1; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        // Up the column and back down the next, so consecutive samples stay neighbours.
        double acc = 0;
        for (int k = 0; k < nz; ++k) {
          const std::size_t kk = (j % 2 == 0) ? static_cast<std::size_t>(k) : static_cast<std::size_t>(nz - 1 - k);
          const std::int64_t p[3] = {centre[i], centre[j], depth[kk]};
          acc += density(p, h, st.steps);
        }
        st.samples += static_cast<std::uint64_t>(nz);
        sigma[i * n + j] = acc * dz;
      }
  });
  if (stats) {
    *stats = {};
    for (const auto& w : per) stats->samples += w.samples, stats->steps += w.steps;
  }
  return sigma;
}

}  // namespace phew::dtfe
