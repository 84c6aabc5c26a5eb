#include <phew/dtfe/tet_projection.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/dtfe/predicates.hpp>
#include <phew/dtfe/ray_positions.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace phew::dtfe {
namespace {

// Rows of pixels summed together on one thread (band_rows): a band's sums stay in the core's cache, and
// a tetrahedron crossing several bands is set up once in each. Up to kBandPixels rays a band: 32 rows of
// a 1024^2 map (256 KiB of sums), where 8 rows took 5 % longer (the 10^6-particle map of bench/README.md,
// "dtfe-surface"); at least 8 rows, and enough bands to share among the threads.
constexpr std::size_t kBandPixels = std::size_t{32} << 10;
constexpr int kMinBandRows = 8;
// Tetrahedra per piece when they are filed into bands (a fixed size: the lists do not depend on threads).
constexpr std::size_t kTetPiece = std::size_t{1} << 16;
// A row of a tetrahedron with at most this many rays is tested ray by ray (no sorting of its crossings).
constexpr int kExactRays = 4;

// Where each pixel's rays lie along one map axis, in lattice units: in [lo[i], hi[i]] (one ray at the
// centre: lo = hi, the marcher's centres).
struct PixelAxis {
  RayPositions lo, hi;
  std::vector<double> lo_real;  // lo as doubles (exact: |lo| < 2^53), for the rows' inner loop

  // Pixels whose rays may lie in [xmin, xmax) (a ray at xmin + epsilon, the perturbation, lies inside
  // exactly when its lattice position does): [first, end).
  std::pair<int, int> covering(std::int64_t xmin, std::int64_t xmax) const { return {hi.first(xmin), lo.first(xmax)}; }
};

// Rows a band of an n x n map with k rays a pixel holds, on t threads. The bands' size changes no sum:
// each ray's terms come in the tetrahedra's order whatever band holds it.
int band_rows(int n, std::size_t k, int t) {
  const auto rows = static_cast<int>(kBandPixels / (static_cast<std::size_t>(std::max(n, 1)) * k));
  return std::max(kMinBandRows, std::min(rows, n / (8 * t)));
}

PixelAxis pixel_axis(const FieldGeometry& g, double scale, int samples) {
  const auto n = static_cast<std::size_t>(g.resolution);
  std::vector<std::int64_t> lo(n), hi(n);
  for (std::size_t s = 0; s < n; ++s) {
    const int i = static_cast<int>(s);
    if (samples == 1) {
      lo[s] = hi[s] = ray_position(g, scale, i, 0.5);
    } else {  // sample_offset's offsets are in [0, 1): between the pixel's edges, rounded as the rays are
      lo[s] = ray_position(g, scale, i, 0.0);
      hi[s] = ray_position(g, scale, i + 1, 0.0);
    }
  }
  std::vector<double> lo_real(lo.begin(), lo.end());
  return {RayPositions(std::move(lo)), RayPositions(std::move(hi)), std::move(lo_real)};
}

// The edges of a tetrahedron (vertex slots) and, for the face opposite each vertex, its vertices
// a < b < c as the edges ab, ac and bc.
constexpr int kEdge[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
constexpr int kFaceEdges[4][3] = {{3, 4, 5}, {1, 2, 5}, {0, 2, 4}, {0, 1, 3}};  // ab, ac, bc
constexpr int kFaceVertices[4][3] = {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}};
// The two faces holding each edge (those opposite the other two vertices), as face bits.
constexpr unsigned kEdgeFaces[6] = {0b1100, 0b1010, 0b0110, 0b1001, 0b0101, 0b0011};

[[noreturn, gnu::noinline, gnu::cold]] void inconsistent(std::int64_t pu, std::int64_t pv, std::size_t t) {
  throw core::Error::internal(
      "projected tetrahedron {} meets the ray at ({}, {}) through neither none nor two of its faces", t, pu, pv);
}

// One tetrahedron as the rays see it. orient2d(a, b, p) of an edge is c + pu * a_u + pv * a_v, exact in
// int64 (|vertex| <= 2^29, |p| <= 2^30); `tie_one` says its sign when 0 (orient2d_sos). A face contains the ray
// when its three edges' signs say so (`rel` the face's edge bits, `want` their values for its
// orientation; a face parallel to the rays contains none).
struct ProjectedTet {
  std::int64_t u[4], v[4];
  double u_real[4], v_real[4];  // the same, as doubles (exact: |u|, |v| <= 2^29)
  double w[4], rho[4];
  std::int64_t umin, umax, vmin, vmax;
  std::int64_t c[6], a_u[6], a_v[6];
  std::int64_t tie_one[6];  // per edge: 1 when a ray on it counts as on its positive side, else 0
  unsigned rel[4], want[4];
  double inv_area[4];
  double dw[4], drho[4];  // per face: the height and density along a row, per lattice step of v
  // Per face a < b < c: the height and density at a, and from a to b and to c (meet()'s operands,
  // computed once a tetrahedron rather than at every ray).
  double wa[4], wab[4], wac[4], ra[4], rab[4], rac[4];
  double dv_du[6];  // per edge: its projection's slope, v per u (0 when along v)

  // The vertices and their projection's bounding box: enough to see which rays it may cross.
  void bound(const MarchVertex* const x[4]) {
    for (int k = 0; k < 4; ++k) u[k] = x[k]->u, v[k] = x[k]->v, w[k] = x[k]->w, rho[k] = x[k]->rho;
    umin = std::min(std::min(u[0], u[1]), std::min(u[2], u[3]));
    umax = std::max(std::max(u[0], u[1]), std::max(u[2], u[3]));
    vmin = std::min(std::min(v[0], v[1]), std::min(v[2], v[3]));
    vmax = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
  }

  // The rest, for a tetrahedron some ray may cross.
  void prepare() {
    for (int k = 0; k < 4; ++k) u_real[k] = static_cast<double>(u[k]), v_real[k] = static_cast<double>(v[k]);
    for (int e = 0; e < 6; ++e) {
      const int a = kEdge[e][0], b = kEdge[e][1];
      // orient2d(a, b, p) = (a.u b.v - a.v b.u) + pu (a.v - b.v) + pv (b.u - a.u).
      c[e] = u[a] * v[b] - v[a] * u[b];
      a_u[e] = v[a] - v[b];
      a_v[e] = u[b] - u[a];
      tie_one[e] = orient2d_tie(u[a], v[a], u[b], v[b]) > 0;
      dv_du[e] = a_v[e] != 0 ? static_cast<double>(v[b] - v[a]) / static_cast<double>(a_v[e]) : 0.0;
    }
    for (int f = 0; f < 4; ++f) {
      const int ab = kFaceEdges[f][0], ac = kFaceEdges[f][1], bc = kFaceEdges[f][2];
      const int fa = kFaceVertices[f][0], fb = kFaceVertices[f][1], fc = kFaceVertices[f][2];
      const std::int64_t area = c[ab] + u[fc] * a_u[ab] + v[fc] * a_v[ab];  // orient2d(a, b, c)
      rel[f] = (1u << ab) | (1u << ac) | (1u << bc);
      want[f] = area > 0 ? (1u << ab) | (1u << bc) : (1u << ac);
      if (area == 0) rel[f] = 0, want[f] = 1;
      inv_area[f] = area != 0 ? 1.0 / static_cast<double>(area) : 0.0;
      // d/dpv of the height in meet(): the weights of b and c change by -a_v[ac] and a_v[ab] per step.
      const double sb = -static_cast<double>(a_v[ac]), sc = static_cast<double>(a_v[ab]);
      wa[f] = w[fa], wab[f] = w[fb] - w[fa], wac[f] = w[fc] - w[fa];
      ra[f] = rho[fa], rab[f] = rho[fb] - rho[fa], rac[f] = rho[fc] - rho[fa];
      dw[f] = (sb * wab[f] + sc * wac[f]) * inv_area[f];
      drho[f] = (sb * rab[f] + sc * rac[f]) * inv_area[f];
    }
  }

  // Where the row u = pu crosses the projected edges (and passes through vertices), in no order: within
  // the projection between the least and the greatest, and between two of them the same two faces meet
  // every ray. In floating point (an error far below a lattice step). Returns how many (up to 10; x and
  // flip hold 11); flip[i] is the faces holding the edge crossed, 0 at a vertex; `vertices` how many of
  // them are vertices on the row.
  int crossings(std::int64_t pu, double* x, unsigned* flip, int& vertices) const {
    // Every candidate written, the count moved on when it is one: which edges a row crosses changes
    // from row to row, and a branch on it is mispredicted often. The differences in doubles are exact.
    const double pu_real = static_cast<double>(pu);
    int n = 0;
    for (int q = 0; q < 4; ++q) {
      x[n] = v_real[q];
      flip[n] = 0;
      n += u[q] == pu;
    }
    vertices = n;
    for (int e = 0; e < 6; ++e) {
      const int a = kEdge[e][0], b = kEdge[e][1];
      x[n] = v_real[a] + dv_du[e] * (pu_real - u_real[a]);
      flip[n] = kEdgeFaces[e];
      n += (u[a] - pu) * (u[b] - pu) < 0;  // strictly on either side (|u - pu| < 2^31: no overflow)
    }
    return n;
  }

  // The height and density where a ray meets the plane of face f (a, b, c), from its edge functions
  // there, d_ab = orient2d(a, b, p) and d_ac = orient2d(a, c, p): with the barycentric weights
  // orient2d(b, c, p), orient2d(c, a, p) and orient2d(a, b, p), whose sum is the face's projected area,
  // relative to a.
  [[gnu::always_inline]] void on_face(int f, std::int64_t d_ab, std::int64_t d_ac, double& wf, double& rf) const {
    const double bb = -static_cast<double>(d_ac), bc = static_cast<double>(d_ab);
    wf = wa[f] + (bb * wab[f] + bc * wac[f]) * inv_area[f];
    rf = ra[f] + (bb * rab[f] + bc * rac[f]) * inv_area[f];
  }

  // The same at the ray (pu, pv) (row part `cu`), for a ray known to cross face f.
  void height(const std::int64_t cu[6], std::int64_t pv, int f, double& wf, double& rf) const {
    const int ab = kFaceEdges[f][0], ac = kFaceEdges[f][1];
    on_face(f, cu[ab] + pv * a_v[ab], cu[ac] + pv * a_v[ac], wf, rf);
  }

  // The ray at (pu, pv) (row part `cu` = c + pu * a_u), exactly: false when it misses the tetrahedron,
  // else the two faces it meets and the heights and densities there.
  [[gnu::always_inline]] bool meet(const std::int64_t cu[6], std::int64_t pu, std::int64_t pv, std::size_t t, int& f1,
                                   int& f2, double& w1, double& r1, double& w2, double& r2) const {
    std::int64_t d[6];
    unsigned m = 0;
    for (int e = 0; e < 6; ++e) {
      d[e] = cu[e] + pv * a_v[e];
      m |= static_cast<unsigned>(d[e] + tie_one[e] > 0) << e;  // d > 0, or d = 0 and the tie says so
    }
    unsigned faces = 0;
    for (int f = 0; f < 4; ++f) faces |= static_cast<unsigned>((m & rel[f]) == want[f]) << f;
    if (faces == 0) return false;
    const unsigned rest = faces & (faces - 1);
    if (rest == 0 || (rest & (rest - 1)) != 0) inconsistent(pu, pv, t);
    f1 = std::countr_zero(faces), f2 = std::countr_zero(rest);
    // Every face's height and density where the ray meets its plane, while the signs are tested: the
    // two wanted are then a load away rather than a chain of loads and products behind the face test.
    double wf[4], rf[4];
    for (int f = 0; f < 4; ++f) on_face(f, d[kFaceEdges[f][0]], d[kFaceEdges[f][1]], wf[f], rf[f]);
    w1 = wf[f1], r1 = rf[f1], w2 = wf[f2], r2 = rf[f2];
    return true;
  }
};

// Twice the integral over a stretch from heights and densities at its ends.
inline double stretch(double w1, double r1, double w2, double r2) { return (r1 + r2) * std::abs(w2 - w1); }

// The rays through the pixel centres of row i that cross the tetrahedron: twice their integrals added
// to sum[j], hit[j] set, st.steps counted. Rays within a few lattice steps of a crossing of the row with
// a projected edge are tested exactly. Between two crossings the same two faces meet every ray: those
// whose projections the row has entered and not left, each face's projection a triangle the row enters
// and leaves at crossings of its edges. So the faces are the crossed edges' faces toggled (each edge is
// an edge of two faces, kEdgeFaces) from the left; the first ray's heights are those faces' (meet()'s
// arithmetic, on_face), and the others follow them along the row. A row through a vertex has its first
// rays met exactly instead.
void cross_row(const ProjectedTet& fr, const PixelAxis& axis, int i, std::size_t ti, double* sum, std::uint8_t* hit,
               MarchStats& st) {
  const std::int64_t u = axis.lo[static_cast<std::size_t>(i)];
  double cross[11];
  unsigned flip[11];
  int at_vertices = 0;
  const int n_cross = fr.crossings(u, cross, flip, at_vertices);
  if (n_cross == 0) return;
  double lo = cross[0], hi = cross[0];
  for (int q = 1; q < n_cross; ++q) lo = std::min(lo, cross[q]), hi = std::max(hi, cross[q]);
  // Lattice positions within a few steps of a crossing (truncation, not std::floor: a call here).
  auto below = [](double y) { return static_cast<std::int64_t>(y) - 3; };
  auto above = [](double y) { return static_cast<std::int64_t>(y) + 4; };
  const auto [j0, j1] = axis.covering(below(lo), above(hi));
  if (j0 >= j1) return;
  std::int64_t cu[6];
  for (int e = 0; e < 6; ++e) cu[e] = fr.c[e] + u * fr.a_u[e];
  int f1 = 0, f2 = 0;
  double w1 = 0, r1 = 0, w2 = 0, r2 = 0;
  auto exact = [&](int j) {
    const auto js = static_cast<std::size_t>(j);
    if (fr.meet(cu, u, axis.lo[js], ti, f1, f2, w1, r1, w2, r2))
      sum[js] += stretch(w1, r1, w2, r2), hit[js] = 1, ++st.steps;
  };
  if (j1 - j0 <= kExactRays) {  // most rows of most tetrahedra: a ray or two
    for (int j = j0; j < j1; ++j) exact(j);
    return;
  }
  for (int q = 1; q < n_cross; ++q)
    for (int r = q; r > 0 && cross[r - 1] > cross[r]; --r)
      std::swap(cross[r - 1], cross[r]), std::swap(flip[r - 1], flip[r]);
  int j = std::numeric_limits<int>::min();
  unsigned faces = 0;  // those the rays right of the crossings so far meet
  for (int q = 0; q < n_cross; ++q) {
    const auto [near0, near1] = axis.covering(below(cross[q]), above(cross[q]));
    if (q > 0 && j < near0) {  // the rays between crossings q - 1 and q, inside the projection
      const auto js = static_cast<std::size_t>(j);
      const std::int64_t v0 = axis.lo[js];
      bool found = true;
      const unsigned rest = faces & (faces - 1);  // faces without its lowest: one bit left when it holds two
      if (at_vertices == 0 && rest != 0 && (rest & (rest - 1)) == 0) {
        f1 = std::countr_zero(faces), f2 = std::countr_zero(rest);
        fr.height(cu, v0, f1, w1, r1);
        fr.height(cu, v0, f2, w2, r2);
      } else {
        found = fr.meet(cu, u, v0, ti, f1, f2, w1, r1, w2, r2);
      }
      if (!found) {
        for (; j < near0; ++j) exact(j);  // never: the stretch lies inside the projection
      } else {
        sum[js] += stretch(w1, r1, w2, r2);
        const double dw1 = fr.dw[f1], dr1 = fr.drho[f1], dw2 = fr.dw[f2], dr2 = fr.drho[f2];
        // The offsets in doubles, exact as their integers' difference: a loop without int64 conversions,
        // which the compiler vectorises.
        const double* const at = axis.lo_real.data();
        const double v0_real = at[js];
        for (std::size_t jj = js + 1; jj < static_cast<std::size_t>(near0); ++jj) {
          const double dv = at[jj] - v0_real;
          sum[jj] += stretch(w1 + dv * dw1, r1 + dv * dr1, w2 + dv * dw2, r2 + dv * dr2);
        }
        std::fill(hit + js, hit + near0, std::uint8_t{1});
        st.steps += static_cast<std::uint64_t>(near0 - j);
        j = near0;
      }
    }
    for (j = std::max(j, near0); j < near1; ++j) exact(j);
    faces ^= flip[q];
  }
}

}  // namespace

std::vector<double> project_map(const FieldPoints& points, const Triangulation& tri, const std::vector<double>& rho,
                                const FieldGeometry& g, int samples, int threads, MarchStats* stats,
                                bool empty_outside) {
  const int n = g.resolution;
  const auto nn = static_cast<std::size_t>(n);
  const int t = std::max(1, threads);
  samples = std::max(1, samples);
  const auto k = static_cast<std::size_t>(samples);
  const double scale = points.scale;

  core::RawVector<MarchVertex> vertex(points.size());
  core::parallel_for(t, points.size(), kTetPiece, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i)
      vertex[i] = {points.q[3 * i], points.q[3 * i + 1], static_cast<double>(points.q[3 * i + 2]), rho[i]};
  });
  const PixelAxis axis = pixel_axis(g, scale, samples);
  const Tet* tets = tri.tets.data();
  const std::size_t n_tets = tri.tets.size();
  // The rows of pixels a tetrahedron's bounding box holds rays of; none when it holds no ray (most of
  // the small tetrahedra in dense regions fall between the rays).
  auto rows_of = [&](std::size_t i) {
    const Tet& tet = tets[i];
    constexpr std::int64_t kBig = std::numeric_limits<std::int64_t>::max();
    std::int64_t ulo = kBig, uhi = -kBig, vlo = kBig, vhi = -kBig;
    for (int c = 0; c < 4; ++c) {
      const MarchVertex& x = vertex[static_cast<std::size_t>(tet.vertex[c])];
      ulo = std::min<std::int64_t>(ulo, x.u), uhi = std::max<std::int64_t>(uhi, x.u);
      vlo = std::min<std::int64_t>(vlo, x.v), vhi = std::max<std::int64_t>(vhi, x.v);
    }
    const auto [c0, c1] = axis.covering(vlo, vhi);
    return c0 < c1 ? axis.covering(ulo, uhi) : std::pair<int, int>{0, 0};
  };

  // File the tetrahedra into bands of rows, each band's list in tetrahedron order: a count per piece of
  // tetrahedra and band, then each piece writes at its offsets.
  const int rows = band_rows(n, k, t);
  const auto band_size = static_cast<std::size_t>(rows);
  const std::size_t n_bands = (nn + band_size - 1) / band_size;
  const std::size_t n_pieces = (n_tets + kTetPiece - 1) / kTetPiece;
  std::vector<std::uint32_t> count(n_pieces * n_bands, 0);
  auto for_bands = [&](std::size_t piece, auto&& f) {
    const std::size_t e = std::min(n_tets, (piece + 1) * kTetPiece);
    for (std::size_t i = piece * kTetPiece; i < e; ++i) {
      const auto [r0, r1] = rows_of(i);
      if (r0 >= r1) continue;
      for (auto b = static_cast<std::size_t>(r0 / rows); b <= static_cast<std::size_t>((r1 - 1) / rows); ++b) f(b, i);
    }
  };
  core::parallel_for(t, n_pieces, 1, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t p = b; p < e; ++p)
      for_bands(p, [&](std::size_t band, std::size_t) { ++count[p * n_bands + band]; });
  });
  std::vector<std::size_t> band_start(n_bands + 1, 0);
  std::vector<std::size_t> offset(n_pieces * n_bands);
  {
    std::size_t at = 0;
    for (std::size_t band = 0; band < n_bands; ++band) {
      band_start[band] = at;
      for (std::size_t p = 0; p < n_pieces; ++p) {
        offset[p * n_bands + band] = at;
        at += count[p * n_bands + band];
      }
    }
    band_start[n_bands] = at;
  }
  core::release(count);
  core::RawVector<std::uint32_t> filed(band_start[n_bands]);
  core::parallel_for(t, n_pieces, 1, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t p = b; p < e; ++p)
      for_bands(p, [&](std::size_t band, std::size_t i) {
        filed[offset[p * n_bands + band]++] = static_cast<std::uint32_t>(i);
      });
  });

  // Each band: every ray's sum over its tetrahedra, in their order.
  std::vector<double> sigma(nn * nn, 0.0);
  std::vector<MarchStats> per(static_cast<std::size_t>(t));
  core::parallel_for(t, n_bands, 1, [&](std::size_t b0, std::size_t b1, int id) {
    MarchStats st;  // written back once: the threads' stats share a cache line
    std::vector<double> sum(band_size * nn * k);
    std::vector<std::uint8_t> hit(band_size * nn * k);
    std::vector<std::int64_t> pu(k == 1 ? 0 : band_size * nn * k), pv(pu.size());
    for (std::size_t band = b0; band < b1; ++band) {
      const int row0 = static_cast<int>(band) * rows, row1 = std::min(n, row0 + rows);
      std::fill(sum.begin(), sum.end(), 0.0);
      std::fill(hit.begin(), hit.end(), std::uint8_t{0});
      if (k > 1)  // the rays of RayMarcher::map
        for (int i = row0; i < row1; ++i)
          for (int j = 0; j < n; ++j)
            for (int s = 0; s < samples; ++s) {
              double du = 0, dv = 0;
              sample_offset(i, j, s, du, dv);
              const std::size_t at = (static_cast<std::size_t>(i - row0) * nn + static_cast<std::size_t>(j)) * k +
                                     static_cast<std::size_t>(s);
              pu[at] = ray_position(g, scale, i, du);
              pv[at] = ray_position(g, scale, j, dv);
            }
      ProjectedTet fr;
      for (std::size_t at = band_start[band]; at < band_start[band + 1]; ++at) {
        // The band's tetrahedra lie all over the arrays: fetch a few ahead, the tetrahedron and then
        // its vertices.
        const std::size_t end = band_start[band + 1];
        if (at + 16 < end) __builtin_prefetch(&tets[filed[at + 16]]);
        if (at + 8 < end)
          for (int c = 0; c < 4; ++c)
            __builtin_prefetch(&vertex[static_cast<std::size_t>(tets[filed[at + 8]].vertex[c])]);
        const std::size_t ti = filed[at];
        const Tet& tet = tets[ti];
        const MarchVertex* x[4];
        for (int c = 0; c < 4; ++c) x[c] = &vertex[static_cast<std::size_t>(tet.vertex[c])];
        fr.bound(x);
        const auto [c0, c1] = axis.covering(fr.vmin, fr.vmax);
        if (c0 >= c1) continue;
        const auto [row_first, row_end] = axis.covering(fr.umin, fr.umax);
        fr.prepare();
        for (int i = std::max(row_first, row0); i < std::min(row_end, row1); ++i) {
          const std::size_t row = static_cast<std::size_t>(i - row0) * nn;
          if (k > 1) {  // every sample in the box, exactly
            std::int64_t cu[6];
            int f1 = 0, f2 = 0;
            double w1 = 0, r1 = 0, w2 = 0, r2 = 0;
            for (std::size_t s = (row + static_cast<std::size_t>(c0)) * k; s < (row + static_cast<std::size_t>(c1)) * k;
                 ++s) {
              for (int e = 0; e < 6; ++e) cu[e] = fr.c[e] + pu[s] * fr.a_u[e];
              if (fr.meet(cu, pu[s], pv[s], ti, f1, f2, w1, r1, w2, r2))
                sum[s] += stretch(w1, r1, w2, r2), hit[s] = 1, ++st.steps;
            }
            continue;
          }
          cross_row(fr, axis, i, ti, &sum[row], &hit[row], st);
        }
      }
      for (int i = row0; i < row1; ++i) {
        const std::size_t row = static_cast<std::size_t>(i - row0) * nn;
        double* out = &sigma[static_cast<std::size_t>(i) * nn];
        for (std::size_t j = 0; j < nn; ++j) {
          double acc = 0;
          for (std::size_t s = 0; s < k; ++s) {
            const std::size_t at = (row + j) * k + s;
            const bool miss = hit[at] == 0;
            st.missed += miss;
            acc += miss ? (empty_outside ? 0.0 : std::numeric_limits<double>::quiet_NaN()) : 0.5 * sum[at] * scale;
          }
          out[j] = k == 1 ? acc : acc / static_cast<double>(k);
        }
        st.rays += nn * k;
      }
    }
    per[static_cast<std::size_t>(id)] += st;
  });
  if (stats) {
    *stats = {};
    for (const auto& s : per) *stats += s;
  }
  return sigma;
}

}  // namespace phew::dtfe
