#include <phew/dtfe/exact_map.hpp>

#include <phew/dtfe/predicates.hpp>
#include <phew/core/threads.hpp>

#include <algorithm>
#include <cmath>

namespace phew::dtfe {
namespace {

struct P2 {
  double x, y;
};

// A convex polygon, counter-clockwise. A triangle clipped by a triangle and then by a pixel's four
// sides has at most 3 + 3 + 4 vertices.
struct Poly {
  int n = 0;
  P2 p[16];
};

// f(x, y) = c + gx x + gy y.
struct Lin {
  double c = 0, gx = 0, gy = 0;
  double at(double x, double y) const { return c + gx * x + gy * y; }
};

// The plane through (a, fa), (b, fb), (c, fc) over a triangle of non-zero area.
Lin plane(P2 a, P2 b, P2 c, double fa, double fb, double fc) {
  const double bx = b.x - a.x, by = b.y - a.y, cx = c.x - a.x, cy = c.y - a.y;
  const double d = bx * cy - cx * by;
  Lin l;
  l.gx = ((fb - fa) * cy - (fc - fa) * by) / d;
  l.gy = (bx * (fc - fa) - cx * (fb - fa)) / d;
  l.c = fa - l.gx * a.x - l.gy * a.y;
  return l;
}

// Sutherland-Hodgman against one half-plane, value(P) >= 0 inside.
template <typename Value>
void clip(const Poly& in, Poly& out, Value&& value) {
  out.n = 0;
  if (in.n == 0) return;
  double vp = value(in.p[in.n - 1]);
  P2 prev = in.p[in.n - 1];
  for (int k = 0; k < in.n; ++k) {
    const P2 cur = in.p[k];
    const double vc = value(cur);
    if ((vp >= 0) != (vc >= 0)) {
      const double t = vp / (vp - vc);
      out.p[out.n++] = {prev.x + t * (cur.x - prev.x), prev.y + t * (cur.y - prev.y)};
    }
    if (vc >= 0) out.p[out.n++] = cur;
    prev = cur;
    vp = vc;
  }
}

// The exact integral of tau * mu (a quadratic) over a convex polygon: a fan of triangles, each by the
// edge-midpoint rule (exact for degree 2).
double integrate(const Poly& poly, const Lin& tau, const Lin& mu) {
  double s = 0;
  const P2 a = poly.p[0];
  for (int k = 1; k + 1 < poly.n; ++k) {
    const P2 b = poly.p[k], c = poly.p[k + 1];
    const double area2 = (b.x - a.x) * (c.y - a.y) - (c.x - a.x) * (b.y - a.y);
    const P2 m[3] = {{0.5 * (a.x + b.x), 0.5 * (a.y + b.y)},
                     {0.5 * (b.x + c.x), 0.5 * (b.y + c.y)},
                     {0.5 * (c.x + a.x), 0.5 * (c.y + a.y)}};
    double f = 0;
    for (const P2& q : m) f += tau.at(q.x, q.y) * mu.at(q.x, q.y);
    s += area2 * f;
  }
  return s / 6.0;
}

struct Face {
  int v[3];  // local vertex numbers 0..3, counter-clockwise in projection
};

// The vertical extent [lo, hi] of a convex polygon at abscissa x; false when x is outside it.
bool section(const Poly& poly, double x, double& lo, double& hi) {
  lo = 1e300, hi = -1e300;
  for (int k = 0; k < poly.n; ++k) {
    const P2 a = poly.p[k], b = poly.p[(k + 1) % poly.n];
    if (x < std::min(a.x, b.x) || x > std::max(a.x, b.x)) continue;
    if (a.x == b.x) {
      lo = std::min({lo, a.y, b.y}), hi = std::max({hi, a.y, b.y});
      continue;
    }
    const double y = a.y + (x - a.x) / (b.x - a.x) * (b.y - a.y);
    lo = std::min(lo, y), hi = std::max(hi, y);
  }
  return lo <= hi;
}

// The map's pixels seen from the lattice: pixel coordinates (in pixels from the map's corner) of a lattice
// coordinate, the lattice coordinate of pixel edge i, and the pixels a tetrahedron's shadow may touch.
struct PixelFrame {
  int ng;
  double s, pix, half;
  const std::int32_t* q;

  double to_pixel(double lattice) const { return (lattice * s + half) / pix; }
  double edge(int i) const { return (static_cast<double>(i) * pix - half) / s; }
  // Rows [r0, r1] and columns [c0, c1] of the map under the tetrahedron's bounding box; false when none.
  bool pixel_range(const Tet& t, int& r0, int& r1, int& c0, int& c1) const {
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (std::int32_t v : t.vertex) {
      const double x = q[3 * v], y = q[3 * v + 1];
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
    const double px0 = std::floor(to_pixel(x0)), px1 = std::floor(to_pixel(x1));
    const double py0 = std::floor(to_pixel(y0)), py1 = std::floor(to_pixel(y1));
    if (px1 < 0 || px0 >= ng || py1 < 0 || py0 >= ng) return false;
    r0 = static_cast<int>(std::max(px0, 0.0)), r1 = static_cast<int>(std::min(px1, ng - 1.0));
    c0 = static_cast<int>(std::max(py0, 0.0)), c1 = static_cast<int>(std::min(py1, ng - 1.0));
    return true;
  }
};

// The tetrahedra under each chunk of pixel rows, in tetrahedron order: chunk c's are
// list[count[c] .. count[c+1]).
struct RowChunks {
  int rows_per_chunk = 1, chunks = 0;
  std::vector<std::size_t> count;
  std::vector<std::int32_t> list;
};

RowChunks tets_by_row_chunk(const PixelFrame& frame, const Triangulation& tri) {
  RowChunks rc;
  rc.rows_per_chunk = std::max(1, frame.ng / 64);
  rc.chunks = (frame.ng + rc.rows_per_chunk - 1) / rc.rows_per_chunk;
  const std::size_t m = tri.tets.size();
  rc.count.assign(static_cast<std::size_t>(rc.chunks) + 1, 0);
  for (std::size_t i = 0; i < m; ++i) {
    int r0, r1, c0, c1;
    if (!frame.pixel_range(tri.tets[i], r0, r1, c0, c1)) continue;
    for (int c = r0 / rc.rows_per_chunk; c <= r1 / rc.rows_per_chunk; ++c) ++rc.count[static_cast<std::size_t>(c) + 1];
  }
  for (std::size_t c = 1; c < rc.count.size(); ++c) rc.count[c] += rc.count[c - 1];
  rc.list.resize(rc.count.back());
  std::vector<std::size_t> fill(rc.count.begin(), rc.count.end() - 1);
  for (std::size_t i = 0; i < m; ++i) {
    int r0 = 0, r1 = 0, c0 = 0, c1 = 0;
    if (!frame.pixel_range(tri.tets[i], r0, r1, c0, c1)) continue;
    for (int c = r0 / rc.rows_per_chunk; c <= r1 / rc.rows_per_chunk; ++c)
      rc.list[fill[static_cast<std::size_t>(c)]++] = static_cast<std::int32_t>(i);
  }
  return rc;
}

// One tetrahedron's contribution to the pixels of rows [row0, row1) of `sigma`.
class TetProjector {
 public:
  TetProjector(const PixelFrame& frame, double unit, std::vector<double>& sigma, int row0, int row1)
      : f_(frame), unit_(unit), sigma_(sigma), n_(static_cast<std::size_t>(frame.ng)), row0_(row0), row1_(row1) {}

  void add(const Tet& t, const std::vector<double>& rho) {
    const std::int32_t* q = f_.q;
    const std::int32_t* v[4] = {q + 3 * t.vertex[0], q + 3 * t.vertex[1], q + 3 * t.vertex[2], q + 3 * t.vertex[3]};
    const Int128 det = orient3d(v[0], v[1], v[2], v[3]);
    if (det == 0) return;  // flat: no volume, no mass
    f_.pixel_range(t, r0_, r1_, c0_, c1_);
    const double r[4] = {rho[static_cast<std::size_t>(t.vertex[0])], rho[static_cast<std::size_t>(t.vertex[1])],
                         rho[static_cast<std::size_t>(t.vertex[2])], rho[static_cast<std::size_t>(t.vertex[3])]};
    if (r0_ == r1_ && c0_ == c1_ && add_if_in_one_pixel(v, det, r)) return;
    // Coordinates relative to vertex 0 (exact integers as doubles), heights and densities.
    P2 p2[4];
    double z[4];
    for (int i = 0; i < 4; ++i) {
      p2[i] = {static_cast<double>(v[i][0] - v[0][0]), static_cast<double>(v[i][1] - v[0][1])};
      z[i] = static_cast<double>(v[i][2] - v[0][2]);
    }
    ou_ = v[0][0], ov_ = v[0][1];
    Face lower[3], upper[3];
    int nl = 0, nu = 0;
    split_faces(v, lower, nl, upper, nu);
    for (int li = 0; li < nl; ++li) {
      const Face& L = lower[li];
      const Lin zl = plane(p2[L.v[0]], p2[L.v[1]], p2[L.v[2]], z[L.v[0]], z[L.v[1]], z[L.v[2]]);
      const Lin rl = plane(p2[L.v[0]], p2[L.v[1]], p2[L.v[2]], r[L.v[0]], r[L.v[1]], r[L.v[2]]);
      for (int ui = 0; ui < nu; ++ui) {
        const Face& U = upper[ui];
        // The shadow both faces share: the column of the tetrahedron over it runs from face L to face U.
        Poly piece, tmp;
        piece.n = 3;
        for (int i = 0; i < 3; ++i) piece.p[i] = p2[L.v[i]];
        for (int e = 0; e < 3 && piece.n > 0; ++e) {
          const P2 a = p2[U.v[e]], b = p2[U.v[(e + 1) % 3]];
          clip(piece, tmp, [&](P2 p) { return (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x); });
          piece = tmp;
        }
        if (piece.n < 3) continue;
        const Lin zu = plane(p2[U.v[0]], p2[U.v[1]], p2[U.v[2]], z[U.v[0]], z[U.v[1]], z[U.v[2]]);
        const Lin ru = plane(p2[U.v[0]], p2[U.v[1]], p2[U.v[2]], r[U.v[0]], r[U.v[1]], r[U.v[2]]);
        const Lin tau{zu.c - zl.c, zu.gx - zl.gx, zu.gy - zl.gy};
        const Lin mu{0.5 * (ru.c + rl.c), 0.5 * (ru.gx + rl.gx), 0.5 * (ru.gy + rl.gy)};
        add_piece(piece, tau, mu);
      }
    }
  }

 private:
  // Inside one pixel (the common case where particles are dense): its whole mass. False when the
  // tetrahedron only looked so from its bounding box in whole pixels.
  bool add_if_in_one_pixel(const std::int32_t* const v[4], Int128 det, const double r[4]) {
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (int i = 0; i < 4; ++i) {
      const auto* p = v[i];
      x0 = std::min(x0, f_.to_pixel(p[0])), x1 = std::max(x1, f_.to_pixel(p[0]));
      y0 = std::min(y0, f_.to_pixel(p[1])), y1 = std::max(y1, f_.to_pixel(p[1]));
    }
    if (!(x0 >= r0_ && x1 <= r0_ + 1 && y0 >= c0_ && y1 <= c0_ + 1)) return false;
    const double vol = std::abs(static_cast<double>(det)) / 6.0;
    sigma_[static_cast<std::size_t>(r0_) * n_ + static_cast<std::size_t>(c0_)] +=
        vol * 0.25 * (r[0] + r[1] + r[2] + r[3]) * unit_;
    return true;
  }

  // Lower faces (the tetrahedron above them) and upper faces, counter-clockwise in projection;
  // vertical faces are skipped.
  static void split_faces(const std::int32_t* const v[4], Face lower[3], int& nl, Face upper[3], int& nu) {
    for (int f = 0; f < 4; ++f) {
      int a = (f + 1) % 4, b = (f + 2) % 4, c = (f + 3) % 4;
      const std::int64_t area = orient2d(v[a][0], v[a][1], v[b][0], v[b][1], v[c][0], v[c][1]);
      if (area == 0) continue;
      if (area < 0) std::swap(b, c);
      const Int128 side = orient3d(v[a], v[b], v[c], v[f]);
      if (side > 0)
        lower[nl++] = {{a, b, c}};
      else if (side < 0)
        upper[nu++] = {{a, b, c}};
    }
  }

  // The integral of tau * mu over `piece` (coordinates relative to vertex 0), pixel by pixel: strips of
  // pixel rows, then pixels, clipped where the piece's edges cross them.
  void add_piece(const Poly& piece, const Lin& tau, const Lin& mu) {
    Poly tmp;
    double x0 = 1e300, x1 = -1e300;
    for (int i = 0; i < piece.n; ++i) x0 = std::min(x0, piece.p[i].x), x1 = std::max(x1, piece.p[i].x);
    const int i0 = std::max({row0_, r0_, static_cast<int>(std::floor(f_.to_pixel(x0 + ou_)))});
    const int i1 = std::min({row1_ - 1, r1_, static_cast<int>(std::floor(f_.to_pixel(x1 + ou_)))});
    for (int i = i0; i <= i1; ++i) {
      Poly strip;
      const double e0 = f_.edge(i) - ou_, e1 = f_.edge(i + 1) - ou_;
      clip(piece, tmp, [&](P2 p) { return p.x - e0; });
      clip(tmp, strip, [&](P2 p) { return e1 - p.x; });
      if (strip.n < 3) continue;
      double y0 = 1e300, y1 = -1e300;
      for (int k2 = 0; k2 < strip.n; ++k2) y0 = std::min(y0, strip.p[k2].y), y1 = std::max(y1, strip.p[k2].y);
      const int j0 = std::max(c0_, static_cast<int>(std::floor(f_.to_pixel(y0 + ov_))));
      const int j1 = std::min(c1_, static_cast<int>(std::floor(f_.to_pixel(y1 + ov_))));
      // Pixels wholly inside the piece need no clipping: the piece is convex, so over the strip
      // its lower edge is highest and its upper edge lowest at one of the strip's two sides.
      int in0 = j1 + 1, in1 = j1;  // [in0, in1]: wholly inside (empty by default)
      double lo0, hi0, lo1, hi1;
      if (section(piece, e0, lo0, hi0) && section(piece, e1, lo1, hi1)) {
        in0 = static_cast<int>(std::ceil(f_.to_pixel(std::max(lo0, lo1) + ov_) + 1e-9));
        in1 = static_cast<int>(std::floor(f_.to_pixel(std::min(hi0, hi1) + ov_) - 1e-9)) - 1;
      }
      const double w = e1 - e0, area_x = w * w / 12.0;
      for (int j = j0; j <= j1; ++j) {
        const double f0 = f_.edge(j) - ov_, f1 = f_.edge(j + 1) - ov_;
        double value = 0;
        if (j >= in0 && j <= in1) {
          // The exact integral of tau * mu over a whole pixel: the mean of a product of two linear
          // functions over a rectangle is the product at its centre plus the covariance terms.
          const double h = f1 - f0, xc = 0.5 * (e0 + e1), yc = 0.5 * (f0 + f1);
          value = w * h * (tau.at(xc, yc) * mu.at(xc, yc) + tau.gx * mu.gx * area_x + tau.gy * mu.gy * h * h / 12.0);
        } else {
          Poly cell;
          clip(strip, tmp, [&](P2 p) { return p.y - f0; });
          clip(tmp, cell, [&](P2 p) { return f1 - p.y; });
          if (cell.n < 3) continue;
          value = integrate(cell, tau, mu);
        }
        sigma_[static_cast<std::size_t>(i) * n_ + static_cast<std::size_t>(j)] += value * unit_;
      }
    }
  }

  const PixelFrame& f_;
  double unit_;
  std::vector<double>& sigma_;
  std::size_t n_;
  int row0_, row1_;
  int r0_ = 0, r1_ = 0, c0_ = 0, c1_ = 0;  // the tetrahedron's pixel range
  double ou_ = 0, ov_ = 0;                 // its vertex 0, the origin of p2
};

}  // namespace

std::vector<double> exact_map(const FieldPoints& points, const Triangulation& tri, const std::vector<double>& rho,
                              const FieldGeometry& g, int threads) {
  const PixelFrame frame{g.resolution, points.scale, g.pixel_size(), 0.5 * g.size, points.q.data()};
  const auto n = static_cast<std::size_t>(frame.ng);
  std::vector<double> sigma(n * n, 0.0);
  const double unit = frame.s * frame.s * frame.s /
                      (frame.pix * frame.pix);  // lattice volume x density -> surface density of one pixel

  // Each tetrahedron's pixel rows, then the tetrahedra of each chunk of rows in tetrahedron order:
  // threads take chunks, and every pixel receives its contributions in tetrahedron order.
  const RowChunks rc = tets_by_row_chunk(frame, tri);
  core::parallel_for(threads, static_cast<std::size_t>(rc.chunks), 1, [&](std::size_t cb, std::size_t ce, int) {
    for (std::size_t chunk = cb; chunk < ce; ++chunk) {
      const int row0 = static_cast<int>(chunk) * rc.rows_per_chunk, row1 = std::min(frame.ng, row0 + rc.rows_per_chunk);
      TetProjector project(frame, unit, sigma, row0, row1);
      for (std::size_t k = rc.count[chunk]; k < rc.count[chunk + 1]; ++k)
        project.add(tri.tets[static_cast<std::size_t>(rc.list[k])], rho);
    }
  });
  return sigma;
}

}  // namespace phew::dtfe
