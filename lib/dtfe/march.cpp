#include <phew/dtfe/march.hpp>

#include <phew/core/error.hpp>
#include <phew/dtfe/predicates.hpp>
#include <phew/core/threads.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

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
  // Points far outside the window are clamped (they miss the hull either way) so that the exact
  // predicates stay within their integer range.
  return static_cast<std::int64_t>(
      std::clamp(q, -2.0 * static_cast<double>(kQuantMax), 2.0 * static_cast<double>(kQuantMax)));
}

void sample_offset(int i, int j, int s, double& du, double& dv) {
  const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(i)) << 40) ^
                            (static_cast<std::uint64_t>(static_cast<std::uint32_t>(j)) << 16) ^
                            static_cast<std::uint64_t>(static_cast<std::uint32_t>(s));
  const std::uint64_t a = splitmix64(key), b = splitmix64(a);
  du = static_cast<double>(a >> 11) * 0x1.0p-53;
  dv = static_cast<double>(b >> 11) * 0x1.0p-53;
}

namespace {

[[noreturn, gnu::noinline, gnu::cold]] void inconsistent(std::int64_t px, std::int64_t py, std::int32_t t) {
  throw core::Error::internal("ray march at ({}, {}): no way out of tetrahedron {} (inconsistent triangulation)", px,
                              py, t);
}

// The exit index e for spokes with a zero determinant (cold path): the perturbed signs, and the
// conditions written out, since a sign may be 0 when d and x[k] coincide in projection.
[[gnu::noinline, gnu::cold]] int exit_with_ties(const std::int64_t det[3], std::int64_t du, std::int64_t dv,
                                                const std::int64_t ru[3], const std::int64_t rv[3]) {
  int sg[3];
  for (int k = 0; k < 3; ++k) sg[k] = det[k] != 0 ? (det[k] > 0 ? 1 : -1) : orient2d_tie(du, dv, ru[k], rv[k]);
  if (sg[1] > 0 && sg[2] < 0) return 0;
  if (sg[2] > 0 && sg[0] < 0) return 1;
  if (sg[0] > 0 && sg[1] < 0) return 2;
  return -1;
}

}  // namespace

RayMarcher::RayMarcher(const FieldPoints& points, const Triangulation& tri, const std::vector<HullFacet>& hull,
                       const std::vector<double>& rho)
    : tets_(tri.tets), neighbours_(tri.neighbours), hull_(hull), q_(points.q.data()), scale_(points.scale) {
  if (!tri.linked()) throw core::Error::internal("RayMarcher: a triangulation without neighbours");
  vertex_.resize(points.size());
  for (std::size_t i = 0; i < points.size(); ++i)
    vertex_[i] = {points.q[3 * i], points.q[3 * i + 1], static_cast<double>(points.q[3 * i + 2]), rho[i]};
}

namespace {

// One ray on its way through the triangulation. The current face is three slots in counter-clockwise
// projected order, each with its vertex id, position relative to the ray (u, v; |u|, |v| < 2^31),
// height w, density rho, and the ray's barycentric weight b[k] = orient(x[k+1], x[k+2], p) >= 0
// (exact); t is the tetrahedron above the face.
struct Walk {
  std::int32_t x[3], u[3], v[3];
  double w[3], rho[3];
  std::int64_t b[3];
  std::int64_t face_sum;  // x[0] + x[1] + x[2]
  std::int64_t px, py;
  std::int32_t t;
  std::size_t step;
  double sum, w_in, r_in;

  void face(double& w_out, double& rho_out) const {
    const double a = static_cast<double>(b[0]), bb = static_cast<double>(b[1]), c = static_cast<double>(b[2]);
    const double inv = 1.0 / (a + bb + c);  // twice the projected area of a non-vertical face: > 0
    w_out = (a * w[0] + bb * w[1] + c * w[2]) * inv;
    rho_out = (a * rho[0] + bb * rho[1] + c * rho[2]) * inv;
  }

  // Enters by hull facet h.
  void start(const HullFacet& h, const MarchVertex* V, std::int64_t pu, std::int64_t pv) {
    px = pu, py = pv;
    for (int k = 0; k < 3; ++k) {
      const MarchVertex& a = V[h.vertex[k]];
      x[k] = h.vertex[k];
      u[k] = static_cast<std::int32_t>(a.u - px), v[k] = static_cast<std::int32_t>(a.v - py);
      w[k] = a.w, rho[k] = a.rho;
    }
    for (int k = 0; k < 3; ++k) {
      const int i = (k + 1) % 3, j = (k + 2) % 3;
      b[k] = std::int64_t{u[i]} * v[j] - std::int64_t{v[i]} * u[j];
    }
    face(w_in, r_in);
    face_sum = std::int64_t{x[0]} + x[1] + x[2];
    t = h.tet;
    step = 0;
    sum = 0;
  }

  // Crosses tetrahedron t; false once the ray left the hull. No data-dependent branches: the exit
  // face is as good as random, and mispredictions would cost more than the arithmetic.
  [[gnu::always_inline]] bool advance(const Tet* T, const TetNeighbours* N, const MarchVertex* V,
                                      std::uint64_t n_vertices, std::size_t limit) {
    const Tet& tet = T[t];
    // The apex: the one vertex of t not on the face, i.e. the sum of t's vertices less the face's.
    const std::int64_t d = std::int64_t{tet.vertex[0]} + tet.vertex[1] + tet.vertex[2] + tet.vertex[3] - face_sum;
    if ((static_cast<std::uint64_t>(d) >= n_vertices) | (++step > limit)) inconsistent(px, py, t);
    const MarchVertex& D = V[d];
    const std::int64_t du = D.u - px, dv = D.v - py;
    // The spokes d -> x[k]: orient2d(d, x[k], p), the Plücker test of an axis-parallel ray.
    const std::int64_t det[3] = {du * v[0] - dv * u[0], du * v[1] - dv * u[1], du * v[2] - dv * u[2]};
    int e;
    if ((det[0] == 0) | (det[1] == 0) | (det[2] == 0)) [[unlikely]] {
      const std::int64_t ru[3] = {u[0], u[1], u[2]}, rv[3] = {v[0], v[1], v[2]};
      e = exit_with_ties(det, du, dv, ru, rv);
      if (e < 0) inconsistent(px, py, t);
    } else {
      // Sign bits n[k] (the ray on the negative side of spoke k): it leaves by the face opposite x[e]
      // when it passes + of the spoke to x[e+1] and - of the spoke to x[e+2]: e = 0 when !n1 & n2,
      // 1 when !n2 & n0, 2 when !n0 & n1. All equal cannot happen in a valid triangulation.
      const auto n0 = static_cast<int>(static_cast<std::uint64_t>(det[0]) >> 63);
      const auto n1 = static_cast<int>(static_cast<std::uint64_t>(det[1]) >> 63);
      const auto n2 = static_cast<int>(static_cast<std::uint64_t>(det[2]) >> 63);
      if ((n0 == n1) & (n1 == n2)) inconsistent(px, py, t);
      e = (n0 & (n2 ^ 1)) + 2 * (n1 & (n0 ^ 1));
    }
    // The next face is (x[e+1], x[e+2], d): slot e takes d and keeps its weight; the other two
    // weights are the spokes', -det[e+2] and det[e+1].
    const int e1 = e == 2 ? 0 : e + 1, e2 = e == 0 ? 2 : e - 1;
    const std::int32_t xo = x[e];
    const std::int32_t next =
        N[t].across[(tet.vertex[1] == xo) * 1 + (tet.vertex[2] == xo) * 2 + (tet.vertex[3] == xo) * 3];
    __builtin_prefetch(&T[next < 0 ? t : next]);
    __builtin_prefetch(&N[next < 0 ? t : next]);
    b[e1] = -det[e2];
    b[e2] = det[e1];
    x[e] = static_cast<std::int32_t>(d), u[e] = static_cast<std::int32_t>(du), v[e] = static_cast<std::int32_t>(dv);
    w[e] = D.w, rho[e] = D.rho;
    face_sum += d - xo;
    double w_out = 0, r_out = 0;
    face(w_out, r_out);
    sum += (r_in + r_out) * (w_out - w_in);
    w_in = w_out;
    r_in = r_out;
    t = next;
    return t >= 0;
  }
};

}  // namespace

double RayMarcher::ray(std::int64_t px, std::int64_t py, std::int32_t& hint, std::uint64_t& steps) const {
  double out = 0;
  rays(&px, &py, 1, &out, hint, steps);
  return out;
}

void RayMarcher::rays(const std::int64_t* pu, const std::int64_t* pv, std::size_t n, double* out, std::int32_t& hint,
                      std::uint64_t& steps) const {
  const MarchVertex* V = vertex_.data();
  const Tet* T = tets_.data();
  const TetNeighbours* N = neighbours_.data();
  const auto n_vertices = static_cast<std::uint64_t>(vertex_.size());
  const std::size_t limit = tets_.size() + 16;
  // Two rays at a time: each step is a chain of dependent loads and multiplications, and two
  // independent chains keep the core busy while one waits. Each ray's arithmetic is its own, so
  // the values do not depend on the pairing.
  Walk walk[2];
  std::size_t ray_of[2] = {0, 0};
  bool busy[2] = {false, false};
  std::size_t next_ray = 0;
  auto refill = [&](int k) {
    while (next_ray < n) {
      const std::size_t r = next_ray++;
      const std::int32_t f = locate_in_hull(hull_, q_, pu[r], pv[r], hint);
      if (f < 0) {
        out[r] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      walk[k].start(hull_[static_cast<std::size_t>(f)], V, pu[r], pv[r]);
      ray_of[k] = r;
      busy[k] = true;
      return;
    }
    busy[k] = false;
  };
  auto finish = [&](int k) {
    out[ray_of[k]] = 0.5 * walk[k].sum * scale_;
    steps += walk[k].step;
    refill(k);
  };
  refill(0);
  refill(1);
  while (busy[0] && busy[1]) {
    const bool more0 = walk[0].advance(T, N, V, n_vertices, limit);
    const bool more1 = walk[1].advance(T, N, V, n_vertices, limit);
    if (!more0) finish(0);
    if (!more1) finish(1);
  }
  for (int k = 0; k < 2; ++k)
    while (busy[k])
      if (!walk[k].advance(T, N, V, n_vertices, limit)) finish(k);
}

std::vector<double> RayMarcher::map(const FieldGeometry& g, int samples, int threads, MarchStats* stats,
                                    bool empty_outside) const {
  const int ng = g.resolution;
  const auto n = static_cast<std::size_t>(ng);
  std::vector<double> sigma(n * n, 0.0);
  const int t = std::max(1, threads);
  std::vector<std::int32_t> hint(static_cast<std::size_t>(t), 0);
  std::vector<MarchStats> per(static_cast<std::size_t>(t));
  samples = std::max(1, samples);
  const auto k = static_cast<std::size_t>(samples);
  // The pixel centres on the lattice, per axis (the same numbers for u and v).
  std::vector<std::int64_t> centre(n);
  for (std::size_t i = 0; i < n; ++i) centre[i] = ray_position(g, scale_, static_cast<int>(i), 0.5);
  core::parallel_for(t, n, 1, [&](std::size_t i0, std::size_t i1, int id) {
    auto& h = hint[static_cast<std::size_t>(id)];
    auto& st = per[static_cast<std::size_t>(id)];
    std::vector<std::int64_t> pu(n * k), pv(n * k);
    std::vector<double> value(n * k);
    for (std::size_t i = i0; i < i1; ++i) {
      // One row of rays at a time: neighbours in the row cross nearly the same tetrahedra.
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t s = 0; s < k; ++s) {
          if (k == 1) {
            pu[j] = centre[i], pv[j] = centre[j];
            continue;
          }
          double du = 0, dv = 0;
          sample_offset(static_cast<int>(i), static_cast<int>(j), static_cast<int>(s), du, dv);
          pu[j * k + s] = ray_position(g, scale_, static_cast<int>(i), du);
          pv[j * k + s] = ray_position(g, scale_, static_cast<int>(j), dv);
        }
      rays(pu.data(), pv.data(), n * k, value.data(), h, st.steps);
      double* row = &sigma[i * n];
      for (std::size_t j = 0; j < n; ++j) {
        double acc = 0;
        for (std::size_t s = 0; s < k; ++s) {
          const double v = value[j * k + s];
          const bool miss = std::isnan(v);
          st.missed += miss;
          acc += miss && empty_outside ? 0.0 : v;
        }
        row[j] = k == 1 ? acc : acc / static_cast<double>(k);
      }
      st.rays += n * k;
    }
  });
  if (stats) {
    *stats = {};
    for (const auto& s : per) *stats += s;
  }
  return sigma;
}

}  // namespace phew::dtfe
