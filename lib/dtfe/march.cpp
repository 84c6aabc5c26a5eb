#include "dtfe/march.hpp"

#include "core/error.hpp"
#include "dtfe/predicates.hpp"
#include "dtfe/threads.hpp"

#include <algorithm>
#include <cmath>

namespace phew::dtfe {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::int64_t to_lattice(double x, double scale) {
  const double q = std::nearbyint(x / scale);
  return static_cast<std::int64_t>(std::clamp(q, -4.0 * static_cast<double>(kQuantMax), 4.0 * static_cast<double>(kQuantMax)));
}

void sample_offset(int i, int j, int s, double& du, double& dv) {
  const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(i)) << 40) ^
                            (static_cast<std::uint64_t>(static_cast<std::uint32_t>(j)) << 16) ^
                            static_cast<std::uint64_t>(static_cast<std::uint32_t>(s));
  const std::uint64_t a = splitmix64(key), b = splitmix64(a);
  du = static_cast<double>(a >> 11) * 0x1.0p-53;
  dv = static_cast<double>(b >> 11) * 0x1.0p-53;
}

RayMarcher::RayMarcher(const FieldPoints& points, const Triangulation& tri, const std::vector<HullFacet>& hull,
                       const std::vector<double>& rho)
    : tets_(tri.tets), hull_(hull), q_(points.q.data()), scale_(points.scale) {
  vertex_.resize(points.size());
  for (std::size_t i = 0; i < points.size(); ++i)
    vertex_[i] = {points.q[3 * i], points.q[3 * i + 1], static_cast<double>(points.q[3 * i + 2]), rho[i]};
}

double RayMarcher::ray(std::int64_t px, std::int64_t py, std::int32_t& hint, std::uint64_t& steps) const {
  const std::int32_t f = locate_in_hull(hull_, q_, px, py, hint);
  if (f < 0) return 0.0;
  const HullFacet& h = hull_[static_cast<std::size_t>(f)];
  // The current face (a, b, c), counter-clockwise in projection, with the ray inside it, and the
  // barycentric weights of the ray's position: wa = orient(b, c, p) etc. (exact, >= 0).
  std::int32_t a = h.vertex[0], b = h.vertex[1], c = h.vertex[2];
  const Vertex* A = &vertex_[static_cast<std::size_t>(a)];
  const Vertex* B = &vertex_[static_cast<std::size_t>(b)];
  const Vertex* C = &vertex_[static_cast<std::size_t>(c)];
  std::int64_t wa = orient2d(B->u, B->v, C->u, C->v, px, py);
  std::int64_t wb = orient2d(C->u, C->v, A->u, A->v, px, py);
  std::int64_t wc = orient2d(A->u, A->v, B->u, B->v, px, py);
  auto on_face = [&](double& w_out, double& rho_out) {
    const double x = static_cast<double>(wa), y = static_cast<double>(wb), z = static_cast<double>(wc);
    const double inv = 1.0 / (x + y + z);  // twice the projected area of a non-vertical face: > 0
    w_out = (x * A->w + y * B->w + z * C->w) * inv;
    rho_out = (x * A->rho + y * B->rho + z * C->rho) * inv;
  };
  double w0 = 0, r0 = 0;
  on_face(w0, r0);

  std::int32_t t = h.tet;
  const std::size_t limit = tets_.size() + 16;
  double sum = 0;
  for (std::size_t step = 0;; ++step) {
    if (step > limit) throw Error::internal("ray march at ({}, {}) did not leave the triangulation", px, py);
    // Slots of a, b, c in t and the apex d (the vertex opposite the entry face).
    const Tet& tet = tets_[static_cast<std::size_t>(t)];
    int sa = -1, sb = -1, sc = -1, sd = -1;
    for (int k = 0; k < 4; ++k) {
      const std::int32_t v = tet.vertex[k];
      if (v == a) sa = k;
      else if (v == b) sb = k;
      else if (v == c) sc = k;
      else sd = k;
    }
    if (sa < 0 || sb < 0 || sc < 0 || sd < 0) throw Error::internal("ray march: tetrahedron {} does not hold its entry face", t);
    const std::int32_t d = tet.vertex[sd];
    const Vertex* D = &vertex_[static_cast<std::size_t>(d)];
    ++steps;
    // The spokes from the apex: on which side of d->a, d->b, d->c the ray passes decides the exit face
    // (the other face whose projection holds the ray): bcd when (+, -) on (b, c), cad on (c, a), abd on (a, b).
    std::int64_t da = 0, db = 0, dc = 0;
    const int s_a = orient2d_sos(D->u, D->v, A->u, A->v, px, py, da);
    const int s_b = orient2d_sos(D->u, D->v, B->u, B->v, px, py, db);
    const int s_c = orient2d_sos(D->u, D->v, C->u, C->v, px, py, dc);
    int out = 0;  // slot of the vertex opposite the exit face
    if (s_b > 0 && s_c < 0) {  // exit through (b, c, d)
      out = sa;
      const std::int64_t nb = -dc, nc = db, nd = wa;
      a = b, b = c, c = d;
      A = B, B = C, C = D;
      wa = nb, wb = nc, wc = nd;
    } else if (s_c > 0 && s_a < 0) {  // (c, a, d)
      out = sb;
      const std::int64_t nc = -da, na = dc, nd = wb;
      const std::int32_t old_a = a;
      const Vertex* old_A = A;
      a = c, A = C;
      b = old_a, B = old_A;
      c = d, C = D;
      wa = nc, wb = na, wc = nd;
    } else if (s_a > 0 && s_b < 0) {  // (a, b, d)
      out = sc;
      const std::int64_t na = -db, nb = da, nd = wc;
      c = d, C = D;
      wa = na, wb = nb, wc = nd;
    } else {
      throw Error::internal("ray march at ({}, {}): no exit face from tetrahedron {} (inconsistent triangulation)", px, py, t);
    }
    double w1 = 0, r1 = 0;
    on_face(w1, r1);
    sum += (r0 + r1) * (w1 - w0);
    w0 = w1;
    r0 = r1;
    t = tet.neighbour[out];
    if (t < 0) break;  // left through the hull
  }
  return 0.5 * sum * scale_;
}

std::vector<double> RayMarcher::map(const FieldGeometry& g, int samples, int threads, MarchStats* stats) const {
  const int ng = g.resolution;
  const double pix = g.pixel_size();
  const auto n = static_cast<std::size_t>(ng);
  std::vector<double> sigma(n * n, 0.0);
  const int t = std::max(1, threads);
  std::vector<std::int32_t> hint(static_cast<std::size_t>(t), 0);
  std::vector<MarchStats> per(static_cast<std::size_t>(t));
  samples = std::max(1, samples);
  // The pixel centres on the lattice, per axis (the same numbers for u and v).
  std::vector<std::int64_t> centre(n);
  for (std::size_t i = 0; i < n; ++i) centre[i] = to_lattice((static_cast<double>(i) + 0.5) * pix - 0.5 * g.size, scale_);
  parallel_for(t, n, 1, [&](std::size_t i0, std::size_t i1, int id) {
    auto& h = hint[static_cast<std::size_t>(id)];
    auto& st = per[static_cast<std::size_t>(id)];
    for (std::size_t i = i0; i < i1; ++i) {
      double* row = &sigma[i * n];
      for (std::size_t j = 0; j < n; ++j) {
        if (samples == 1) {
          row[j] = ray(centre[i], centre[j], h, st.steps);
          st.missed += row[j] == 0.0;
          continue;
        }
        double acc = 0;
        for (int s = 0; s < samples; ++s) {
          double du = 0, dv = 0;
          sample_offset(static_cast<int>(i), static_cast<int>(j), s, du, dv);
          const std::int64_t pu = to_lattice((static_cast<double>(i) + du) * pix - 0.5 * g.size, scale_);
          const std::int64_t pv = to_lattice((static_cast<double>(j) + dv) * pix - 0.5 * g.size, scale_);
          acc += ray(pu, pv, h, st.steps);
        }
        row[j] = acc / samples;
      }
      st.rays += n * static_cast<std::size_t>(samples);
    }
  });
  if (stats) {
    *stats = {};
    for (const auto& s : per) {
      stats->rays += s.rays;
      stats->missed += s.missed;
      stats->steps += s.steps;
    }
  }
  return sigma;
}

}  // namespace phew::dtfe
