// The Delaunay triangulation on several threads: one sequential CGAL triangulation per slab of the
// field, each slab's own points with a band of ghosts around them, then the tetrahedra each slab can
// vouch for.
//
// Slab s owns the points with cut[s] <= x < cut[s+1] (equal counts). It triangulates its own points
// and the ghosts within a band `g` beyond its sides. A cell of that local triangulation is also a cell
// of the whole one when no point the slab left out conflicts with it: lies inside its circumsphere,
// or beyond its hull face, with CGAL's own test (side_of_sphere with the symbolic perturbation, the
// test its insertion uses). Inserting the left-out points one by one would then never destroy it.
// So the slab finds the left-out points in conflict with any cell at one of its own vertices, inserts
// them, and checks the cells they made, until there are none: every own vertex then has its whole
// star, the same as in the triangulation of all points. A tetrahedron is written by the slab owning
// its lowest-numbered vertex, so each exactly once, and the set is the sequential triangulation's
// (unique, with CGAL's perturbation deciding cospherical ties by the points alone). The canonical
// order sorts by that vertex first, so the counts per vertex tell each slab where its tetrahedra go.
//
// Across a face, a written tetrahedron carries its neighbour's index when its slab owns that one too,
// else the opposite vertex of its neighbour in the slab, which link_mirrors (tet_links.hpp) turns into
// an index once all slabs are in and in canonical order (triangulation.hpp). The same bytes for any
// number of threads, and the same as one sequential triangulation's.
#include <phew/dtfe/triangulation.hpp>

#ifdef PHEW_HAVE_CGAL

#include <phew/core/error.hpp>
#include <phew/core/threads.hpp>
#include <phew/dtfe/cgal_delaunay.hpp>
#include <phew/dtfe/lattice_buckets.hpp>
#include <phew/dtfe/tet_links.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

namespace phew::dtfe::detail {
namespace {

using cgal::Delaunay;
using Cell = Delaunay::Cell_handle;
using Vertex = Delaunay::Vertex_handle;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The circumsphere of a finite cell in lattice units, with a `slack` its rounding cannot exceed. The
// centre's offset from vertex a is N / (2 D), D = e0 . (e1 x e2) and N = sum |e_i|^2 (e_j x e_k) for the
// edges e_i from a (exact in doubles: |e| <= 2^30). In doubles first, with a forward error bound
// built from the same products' magnitudes; a cell too flat for that bound (rare) in 128-bit integers,
// exact up to the final division.
struct Sphere {
  double c[3];
  double r;
  double slack;
};

constexpr double kUnit = 0x1p-53;  // unit roundoff

std::optional<Sphere> circumsphere_exact(const std::int32_t* a, const std::int32_t* b, const std::int32_t* c,
                                         const std::int32_t* d) {
  Int128 e[3][3];
  for (int k = 0; k < 3; ++k) {
    e[0][k] = std::int64_t{b[k]} - a[k];
    e[1][k] = std::int64_t{c[k]} - a[k];
    e[2][k] = std::int64_t{d[k]} - a[k];
  }
  auto cross = [](const Int128* u, const Int128* v, Int128* w) {
    w[0] = u[1] * v[2] - u[2] * v[1];
    w[1] = u[2] * v[0] - u[0] * v[2];
    w[2] = u[0] * v[1] - u[1] * v[0];
  };
  Int128 c12[3], c23[3], c31[3];
  cross(e[1], e[2], c23);
  cross(e[2], e[0], c31);
  cross(e[0], e[1], c12);
  const Int128 det = e[0][0] * c23[0] + e[0][1] * c23[1] + e[0][2] * c23[2];
  if (det == 0) return std::nullopt;
  Int128 len[3];
  for (int i = 0; i < 3; ++i) len[i] = e[i][0] * e[i][0] + e[i][1] * e[i][1] + e[i][2] * e[i][2];
  Sphere s{};
  double r2 = 0;
  const double twice_det = 2 * static_cast<double>(det);
  for (int k = 0; k < 3; ++k) {
    const Int128 num = len[0] * c23[k] + len[1] * c31[k] + len[2] * c12[k];
    const double off = static_cast<double>(num) / twice_det;
    s.c[k] = a[k] + off;
    r2 += off * off;
  }
  s.r = std::sqrt(r2);
  s.slack = 1e-12 * s.r + 2;
  return s;
}

std::optional<Sphere> circumsphere(const std::int32_t* a, const std::int32_t* b, const std::int32_t* c,
                                   const std::int32_t* d) {
  double e[3][3], ae[3][3];
  for (int k = 0; k < 3; ++k) {
    e[0][k] = static_cast<double>(b[k]) - a[k];
    e[1][k] = static_cast<double>(c[k]) - a[k];
    e[2][k] = static_cast<double>(d[k]) - a[k];
    for (int i = 0; i < 3; ++i) ae[i][k] = std::abs(e[i][k]);
  }
  // Cross products w = u x v and their permanents |u_y v_z| + |u_z v_y| ... (error scales).
  auto cross = [](const double* u, const double* v, const double* au, const double* av, double* w, double* pw) {
    w[0] = u[1] * v[2] - u[2] * v[1], pw[0] = au[1] * av[2] + au[2] * av[1];
    w[1] = u[2] * v[0] - u[0] * v[2], pw[1] = au[2] * av[0] + au[0] * av[2];
    w[2] = u[0] * v[1] - u[1] * v[0], pw[2] = au[0] * av[1] + au[1] * av[0];
  };
  double x[3][3], px[3][3];  // x[0] = e1 x e2, x[1] = e2 x e0, x[2] = e0 x e1
  cross(e[1], e[2], ae[1], ae[2], x[0], px[0]);
  cross(e[2], e[0], ae[2], ae[0], x[1], px[1]);
  cross(e[0], e[1], ae[0], ae[1], x[2], px[2]);
  const double det = e[0][0] * x[0][0] + e[0][1] * x[0][1] + e[0][2] * x[0][2];
  const double det_err = 8 * kUnit * (ae[0][0] * px[0][0] + ae[0][1] * px[0][1] + ae[0][2] * px[0][2]);
  if (!(std::abs(det) > 64 * det_err)) return circumsphere_exact(a, b, c, d);
  double len[3];
  for (int i = 0; i < 3; ++i) len[i] = e[i][0] * e[i][0] + e[i][1] * e[i][1] + e[i][2] * e[i][2];
  Sphere s{};
  double r2 = 0, slack = 0;
  const double rel_det = det_err / std::abs(det);  // below 1/64
  for (int k = 0; k < 3; ++k) {
    const double num = len[0] * x[0][k] + len[1] * x[1][k] + len[2] * x[2][k];
    const double num_err = 8 * kUnit * (len[0] * px[0][k] + len[1] * px[1][k] + len[2] * px[2][k]);
    const double off = num / (2 * det);
    s.c[k] = a[k] + off;
    r2 += off * off;
    slack += 1.1 * (num_err + std::abs(num) * 2 * rel_det) / (2 * std::abs(det)) + 4 * kUnit * std::abs(s.c[k]);
  }
  s.r = std::sqrt(r2);
  s.slack = slack * 2 + 1e-12 * s.r + 2;
  return s;
}

double lattice_x(const FieldPoints& p, std::size_t i) { return p.q[3 * i]; }

// One slab: own points [lo, hi) in lattice x, ghosts in [lo - ghost, hi + ghost) from the start. A
// slab owning every point (one thread) leaves none out and needs no buckets to look for them.
class Slab {
 public:
  Slab(const FieldPoints& p, const LatticeBuckets* buckets, double lo, double hi, double ghost)
      : p_(p), buckets_(buckets), lo_(lo), hi_(hi), band_lo_(lo - ghost), band_hi_(hi + ghost), state_(p.size(), 0) {}

  // Triangulates the slab's points and ghosts until its own vertices have their whole stars; false
  // when its points are too few or flat for a 3-D triangulation (the caller then triangulates
  // sequentially).
  bool run() {
    std::vector<std::pair<cgal::Point, std::int32_t>> input;
    for (std::size_t i = 0; i < p_.size(); ++i)
      if (in_band(lattice_x(i))) {
        input.emplace_back(cgal::point(p_, i), static_cast<std::int32_t>(i));
        state_[i] = kLocal;
      }
    dt_.insert(input.begin(), input.end());
    input = {};
    if (dt_.dimension() < 3) return false;
    if (!buckets_) return true;  // every point is in
    // A point left out lies beyond the band, so outside the convex hull of the points in it: the cells
    // in conflict with it are connected, one of them infinite, and each finite one has a circumsphere
    // reaching beyond the band. A search from the infinite cells through such cells meets them all
    // without the sphere of every cell. (CGAL's conflict marks, clear between insertions, say which
    // cells were met; they are cleared again after.)
    std::vector<std::int32_t> pending;
    std::vector<Cell> todo, met;
    dt_.incident_cells(dt_.infinite_vertex(), std::back_inserter(todo));
    for (Cell c : todo) c->tds_data().mark_processed();
    met = todo;
    while (!todo.empty()) {
      const Cell c = todo.back();
      todo.pop_back();
      if (!dt_.is_infinite(c) && !reaches_beyond_band(c)) continue;
      conflicts(c, pending);
      for (int k = 0; k < 4; ++k) {
        const Cell nb = c->neighbor(k);
        if (!nb->tds_data().is_clear()) continue;
        nb->tds_data().mark_processed();
        met.push_back(nb);
        todo.push_back(nb);
      }
    }
    for (Cell c : met) c->tds_data().clear();
    met = {};
    std::vector<Cell> cells;
    while (!pending.empty()) {
      std::vector<Vertex> added;
      Cell hint;
      for (std::int32_t i : pending) {
        const Vertex v = dt_.insert(cgal::point(p_, static_cast<std::size_t>(i)), hint);
        v->info() = i;
        state_[static_cast<std::size_t>(i)] = kLocal;
        hint = v->cell();
        added.push_back(v);
      }
      pending.clear();
      for (const Vertex v : added) {  // the cells the insertions made all have an inserted vertex
        cells.clear();
        dt_.incident_cells(v, std::back_inserter(cells));
        for (Cell c : cells) conflicts(c, pending);
      }
    }
    return true;
  }

  // The finite cells whose lowest-numbered vertex is this slab's are its own: counts them by that
  // vertex, in count[v + 1] (each vertex has one owning slab, so no other slab writes there), and marks
  // the others -1 in their cell info.
  void count_owned(std::vector<std::uint32_t>& count) {
    for (Cell c : dt_.finite_cell_handles()) {
      const Vertex v = lowest(c);
      const bool mine = own(v);
      c->info() = mine ? 0 : -1;
      if (mine) ++count[static_cast<std::size_t>(v->info()) + 1];
    }
  }

  // Writes the own cells where the canonical order puts them (triangulation.hpp): an own vertex v's
  // cells fill [start[v], start[v + 1]) of `out.tets`, vertices ascending, ordered by their other three
  // vertices; each cell's info becomes its index. `next` (start on entry) is shared scratch of which
  // the slab touches only its own vertices' entries. Across each face, when `out` has neighbours: the
  // neighbour's index when it is owned too (the neighbour a certain cell has in the slab is the true
  // one), else -(its opposite vertex + 2), or -1 on the slab's hull (tet_links.hpp).
  void write_canonical(Triangulation& out, const std::vector<std::uint32_t>& start, std::vector<std::uint32_t>& next) {
    core::RawVector<Tet>& tets = out.tets;
    auto sorted = [](Cell c, std::int32_t* v) {
      for (int k = 0; k < 4; ++k) v[k] = c->vertex(k)->info();
      std::sort(v, v + 4);
    };
    for (Cell c : dt_.finite_cell_handles()) {
      if (c->info() < 0) continue;
      std::int32_t v[4];
      sorted(c, v);
      std::copy(v, v + 4, tets[next[static_cast<std::size_t>(v[0])]++].vertex);
    }
    // Each own vertex's cells (a handful) by their other three vertices.
    auto before = [](const Tet& a, const Tet& b) {
      return std::lexicographical_compare(a.vertex + 1, a.vertex + 4, b.vertex + 1, b.vertex + 4);
    };
    for (Vertex w : dt_.finite_vertex_handles())
      if (own(w)) {
        const auto v = static_cast<std::size_t>(w->info());
        std::sort(tets.begin() + start[v], tets.begin() + start[v + 1], before);
      }
    if (!out.linked()) return;
    // Each cell's index, found among its lowest vertex's, then the links across its faces.
    for (Cell c : dt_.finite_cell_handles()) {
      if (c->info() < 0) continue;
      Tet key;
      sorted(c, key.vertex);
      const auto v = static_cast<std::size_t>(key.vertex[0]);
      c->info() = static_cast<std::int32_t>(
          std::lower_bound(tets.begin() + start[v], tets.begin() + start[v + 1], key, before) - tets.begin());
    }
    for (Cell c : dt_.finite_cell_handles()) {
      if (c->info() < 0) continue;
      const auto i = static_cast<std::size_t>(c->info());
      const Tet& t = tets[i];
      for (int k = 0; k < 4; ++k) {
        const Cell nb = c->neighbor(k);
        std::int32_t& link =
            out.neighbours[i].across[std::find(t.vertex, t.vertex + 4, c->vertex(k)->info()) - t.vertex];
        if (dt_.is_infinite(nb))
          link = -1;
        else if (nb->info() >= 0)
          link = nb->info();
        else
          link = -(nb->vertex(nb->index(c))->info() + 2);
      }
    }
  }

 private:
  static constexpr char kLocal = 1, kPending = 2;

  double lattice_x(std::size_t i) const { return detail::lattice_x(p_, i); }
  bool in_band(double xi) const { return band_lo_ <= xi && xi < band_hi_; }
  // From the vertex itself rather than the FieldPoints: the cell's vertices are in cache already.
  static constexpr double kLattice = static_cast<double>(kQuantMax);  // CGAL's points are lattice / 2^29
  static double x(Vertex v) { return v->point().x() * kLattice; }
  static std::array<std::int32_t, 3> lattice(Vertex v) {
    const auto& p = v->point();
    return {static_cast<std::int32_t>(p.x() * kLattice), static_cast<std::int32_t>(p.y() * kLattice),
            static_cast<std::int32_t>(p.z() * kLattice)};
  }
  bool own(Vertex v) const { return lo_ <= x(v) && x(v) < hi_; }
  Vertex lowest(Cell c) const {  // the lowest-numbered vertex of a finite cell
    Vertex v = c->vertex(0);
    for (int k = 1; k < 4; ++k)
      if (c->vertex(k)->info() < v->info()) v = c->vertex(k);
    return v;
  }
  bool has_own_vertex(Cell c) const {
    for (int k = 0; k < 4; ++k)
      if (!dt_.is_infinite(c->vertex(k)) && own(c->vertex(k))) return true;
    return false;
  }
  const std::int32_t* q(std::int32_t i) const { return p_.q.data() + 3 * static_cast<std::size_t>(i); }

  std::optional<Sphere> sphere(Cell c) const {  // of a finite cell
    const std::array<std::int32_t, 3> v[4] = {lattice(c->vertex(0)), lattice(c->vertex(1)), lattice(c->vertex(2)),
                                              lattice(c->vertex(3))};
    return circumsphere(v[0].data(), v[1].data(), v[2].data(), v[3].data());
  }
  bool within_band(const Sphere& s) const {
    const double reach = s.r + s.slack;
    return band_lo_ <= s.c[0] - reach && s.c[0] + reach < band_hi_;
  }
  bool reaches_beyond_band(Cell c) const {  // a finite cell's circumsphere (a flat cell's: yes)
    const std::optional<Sphere> s = sphere(c);
    return !s || !within_band(*s);
  }

  // Appends to `out` the points outside the triangulation in conflict with cell c, when c has an own
  // vertex. Only buckets outside the band can hold such points.
  void conflicts(Cell c, std::vector<std::int32_t>& out) {
    if (!has_own_vertex(c)) return;
    if (dt_.is_infinite(c)) {
      hull_conflicts(c, out);
      return;
    }
    const std::optional<Sphere> s = sphere(c);
    if (!s) {  // CGAL's finite cells are never flat; if one were, check it against everything
      scan(
          c, out, 0, {-kInf, -kInf, -kInf}, {kInf, kInf, kInf},
          [](const std::array<double, 3>&, const std::array<double, 3>&, double& t0, double& t1) {
            t0 = -kInf, t1 = kInf;
            return true;
          },
          [](const std::int32_t*) { return true; });
      return;
    }
    if (within_band(*s)) return;
    const double reach = s->r + s->slack;
    const double reach2 = reach * reach;
    // Along x, each bucket column (y, z) meets the ball over [cx - h, cx + h].
    auto range = [&](const std::array<double, 3>& lo, const std::array<double, 3>& hi, double& t0, double& t1) {
      double d2 = 0;
      for (int k = 1; k < 3; ++k) {
        const double d =
            std::max({lo[static_cast<std::size_t>(k)] - s->c[k], 0.0, s->c[k] - hi[static_cast<std::size_t>(k)]});
        d2 += d * d;
      }
      if (d2 > reach2) return false;
      const double h = std::sqrt(reach2 - d2);
      t0 = s->c[0] - h, t1 = s->c[0] + h;
      return true;
    };
    auto point_near = [&](const std::int32_t* pq) {
      double d2 = 0;
      for (int k = 0; k < 3; ++k) {
        const double d = pq[k] - s->c[k];
        d2 += d * d;
      }
      return d2 <= reach2;
    };
    scan(c, out, 0, {s->c[0] - reach, s->c[1] - reach, s->c[2] - reach},
         {s->c[0] + reach, s->c[1] + reach, s->c[2] + reach}, range, point_near);
  }

  // A hull face conflicts with the points beyond its plane (and, through the perturbation, some on it).
  void hull_conflicts(Cell c, std::vector<std::int32_t>& out) {
    const int inf = c->index(dt_.infinite_vertex());
    std::array<std::int32_t, 3> fv[3];
    for (int k = 0, j = 0; k < 4; ++k)
      if (k != inf) fv[j++] = lattice(c->vertex(k));
    const std::int32_t* f[3] = {fv[0].data(), fv[1].data(), fv[2].data()};
    const Cell nb = c->neighbor(inf);
    const std::array<std::int32_t, 3> inner_v = lattice(nb->vertex(nb->index(c)));
    const std::int32_t* inner = inner_v.data();
    const int in_sign = sign(orient3d(f[0], f[1], f[2], inner));
    // The outward normal -in_sign (b - a) x (c - a): exact in 64 bits (|b - a| <= 2^30), then in
    // doubles for the bucket test, whose rounding stays far below `tol`.
    std::int64_t e1[3], e2[3];
    for (int k = 0; k < 3; ++k) e1[k] = std::int64_t{f[1][k]} - f[0][k], e2[k] = std::int64_t{f[2][k]} - f[0][k];
    const double n[3] = {static_cast<double>(-in_sign * (e1[1] * e2[2] - e1[2] * e2[1])),
                         static_cast<double>(-in_sign * (e1[2] * e2[0] - e1[0] * e2[2])),
                         static_cast<double>(-in_sign * (e1[0] * e2[1] - e1[1] * e2[0]))};
    const double tol = 1e-5 * (std::abs(n[0]) + std::abs(n[1]) + std::abs(n[2]));
    // Along the normal's largest component, each bucket column meets the closed half-space beyond
    // the face on a half-line: n . (x - f0) >= -tol.
    int in = 0;
    for (int k = 1; k < 3; ++k)
      if (std::abs(n[k]) > std::abs(n[in])) in = k;
    auto range = [&](const std::array<double, 3>& lo, const std::array<double, 3>& hi, double& t0, double& t1) {
      double across = 0;  // the largest n . (x - f0) over the column's other two axes
      for (int k = 0; k < 3; ++k)
        if (k != in)
          across += n[k] * ((n[k] > 0 ? hi[static_cast<std::size_t>(k)] : lo[static_cast<std::size_t>(k)]) - f[0][k]);
      const double edge = f[0][in] + (-tol - across) / n[in];
      t0 = n[in] > 0 ? edge : -kInf;
      t1 = n[in] > 0 ? kInf : edge;
      return true;
    };
    // A point on the face's plane conflicts only within the face's circumcircle or on it (there the
    // perturbation decides; inside, the finite cell on the face, checked too, finds it as well). On a
    // lattice's flat hull, without this, every hull face would send its whole plane to CGAL's exact
    // test. The circle in doubles, trusted only when the face is not a sliver.
    const double a1[3] = {static_cast<double>(e1[0]), static_cast<double>(e1[1]), static_cast<double>(e1[2])};
    const double a2[3] = {static_cast<double>(e2[0]), static_cast<double>(e2[1]), static_cast<double>(e2[2])};
    const double l1 = a1[0] * a1[0] + a1[1] * a1[1] + a1[2] * a1[2], l2 = a2[0] * a2[0] + a2[1] * a2[1] + a2[2] * a2[2];
    const double n2 = n[0] * n[0] + n[1] * n[1] + n[2] * n[2];
    const bool circle = n2 > 1e-6 * l1 * l2;  // sin of the angle at f[0] above 1e-3
    double centre[3] = {0, 0, 0}, radius2 = 0;
    if (circle) {
      // centre - f0 = (l1 e2 - l2 e1) x (e1 x e2) / (2 |e1 x e2|^2), and e1 x e2 = -in_sign n.
      const double w[3] = {l1 * a2[0] - l2 * a1[0], l1 * a2[1] - l2 * a1[1], l1 * a2[2] - l2 * a1[2]};
      const double s = -in_sign / (2 * n2);
      const double off[3] = {s * (w[1] * n[2] - w[2] * n[1]), s * (w[2] * n[0] - w[0] * n[2]),
                             s * (w[0] * n[1] - w[1] * n[0])};
      const double r = std::sqrt(off[0] * off[0] + off[1] * off[1] + off[2] * off[2]);
      const double reach = r + 1e-9 * (r + std::sqrt(l1) + std::sqrt(l2)) + 2;
      for (int k = 0; k < 3; ++k) centre[k] = f[0][k] + off[k];
      radius2 = reach * reach;
    }
    auto point_beyond = [&](const std::int32_t* pq) {
      const int side = sign(orient3d(f[0], f[1], f[2], pq));
      if (side != 0 || !circle) return side != in_sign;
      double d2 = 0;
      for (int k = 0; k < 3; ++k) d2 += (pq[k] - centre[k]) * (pq[k] - centre[k]);
      return d2 <= radius2;
    };
    scan(c, out, in, {-kInf, -kInf, -kInf}, {kInf, kInf, kInf}, range, point_beyond);
  }

  // The left-out points in buckets within [lo, hi] (lattice units) in conflict with c: bucket columns
  // along axis `inner`, each visited over the interval range(column's box) gives it, the points
  // passing point_test, and then CGAL's test.
  template <typename Range, typename PointTest>
  void scan(Cell c, std::vector<std::int32_t>& out, int inner, const std::array<double, 3>& lo,
            const std::array<double, 3>& hi, const Range& range, const PointTest& point_test) {
    const LatticeBuckets& b = *buckets_;
    const double side = b.side();
    const auto a = static_cast<std::size_t>(inner), a1 = (a + 1) % 3, a2 = (a + 2) % 3;
    auto cell = [&](std::size_t axis, double t) { return b.cell_of(static_cast<int>(axis), t); };
    std::array<int, 3> at{};
    std::array<double, 3> col_lo{}, col_hi{};
    for (at[a1] = cell(a1, lo[a1]); at[a1] <= cell(a1, hi[a1]); ++at[a1])
      for (at[a2] = cell(a2, lo[a2]); at[a2] <= cell(a2, hi[a2]); ++at[a2]) {
        // A bucket's points lie within a lattice unit of its box (the floor was taken in doubles).
        for (const std::size_t k : {a1, a2}) {
          col_lo[k] = b.lo(static_cast<int>(k), at[k]) - 1;
          col_hi[k] = b.lo(static_cast<int>(k), at[k]) + side + 1;
        }
        double t0 = 0, t1 = 0;
        if (!range(col_lo, col_hi, t0, t1)) continue;
        t0 = std::max(t0, lo[a]), t1 = std::min(t1, hi[a]);
        if (t0 > t1) continue;
        for (at[a] = cell(a, t0 - 1); at[a] <= cell(a, t1 + 1); ++at[a]) {
          const double bx0 = b.lo(0, at[0]) - 1, bx1 = b.lo(0, at[0]) + side + 1;
          if (band_lo_ <= bx0 && bx1 < band_hi_) continue;  // all its points are in the triangulation
          for (const std::int32_t* it = b.begin(at[0], at[1], at[2]); it != b.end(at[0], at[1], at[2]); ++it) {
            const std::int32_t pi = *it;
            if (state_[static_cast<std::size_t>(pi)] != 0 || !point_test(q(pi))) continue;
            if (dt_.side_of_sphere(c, cgal::point(p_, static_cast<std::size_t>(pi)), true) != CGAL::ON_BOUNDED_SIDE)
              continue;
            state_[static_cast<std::size_t>(pi)] = kPending;
            out.push_back(pi);
          }
        }
      }
  }

  const FieldPoints& p_;
  const LatticeBuckets* buckets_;  // null: the slab holds every point
  double lo_, hi_, band_lo_, band_hi_;
  std::vector<char> state_;  // per point: 0 left out, kLocal in the triangulation, kPending found in conflict
  Delaunay dt_;
};

}  // namespace

std::optional<Triangulation> triangulate_cgal_slabs(const FieldPoints& points, int slabs, int threads, double ghost,
                                                    bool neighbours) {
  const std::size_t n = points.size();
  if (slabs < 1 || n < 4 * static_cast<std::size_t>(slabs)) return std::nullopt;
  // About 6.7 tetrahedra a point, numbered in 32 bits.
  if (n > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max() / 8))
    throw core::Error::input("{} particles in one field: too many to triangulate (split it)", n);
  // Cuts at equal counts along x; equal x values stay in one slab, so a cut may repeat (then fewer
  // slabs do the work).
  std::vector<std::int32_t> xs(n);
  for (std::size_t i = 0; i < n; ++i) xs[i] = points.q[3 * i];
  std::vector<double> cut{-kInf};
  for (int s = 1; s < slabs; ++s) {
    const auto rank = static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(s) / static_cast<std::size_t>(slabs));
    std::nth_element(xs.begin(), xs.begin() + rank, xs.end());
    cut.push_back(std::max(cut.back(), static_cast<double>(xs[static_cast<std::size_t>(rank)])));
  }
  cut.push_back(kInf);
  core::release(xs);
  // The conflicts bring in the ghosts voids need beyond the first band. Five mean spacings: on
  // clustered points 10^4 conflicts a slab, against 10^5 with two.
  std::optional<LatticeBuckets> buckets;
  double depth = 0;
  if (slabs > 1) {
    buckets.emplace(points, 4.0);
    const auto& d = buckets->dims();
    const double side = buckets->side();
    const double spacing = std::cbrt(d[0] * side * d[1] * side * d[2] * side / static_cast<double>(n));
    // Thin slabs (many threads) take thinner bands: a quarter of a slab at most.
    depth = std::min(ghost * spacing, 0.25 * d[0] * side / slabs);
  }
  const auto count = static_cast<std::size_t>(slabs);
  std::vector<std::size_t> owns(count, 0);  // a slab owning no point is not made (a repeated cut, or
  for (std::size_t i = 0; i < n; ++i)       // the first one when the lowest x holds n / slabs points)
    ++owns[static_cast<std::size_t>(std::upper_bound(cut.begin() + 1, cut.end() - 1, lattice_x(points, i)) -
                                    cut.begin() - 1)];
  std::vector<char> made(count, 1);
  Triangulation out;
  {
    // The slabs' triangulations, given back when all are written.
    std::vector<std::unique_ptr<Slab>> slab(count);
    for (std::size_t s = 0; s < count; ++s)
      if (owns[s] > 0)
        slab[s] = std::make_unique<Slab>(points, buckets ? &*buckets : nullptr, cut[s], cut[s + 1], depth);
    // Each vertex's tetrahedra (those it is the lowest vertex of) come from its slab alone, so the
    // counts per vertex place every slab's tetrahedra in the canonical order directly.
    std::vector<std::uint32_t> start(n + 1, 0);
    core::parallel_for(threads, count, 1, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t s = b; s < e; ++s)
        if (slab[s] && (made[s] = slab[s]->run())) slab[s]->count_owned(start);
    });
    if (std::all_of(made.begin(), made.end(), [](char m) { return m != 0; })) {
      std::uint64_t total = 0;  // checked before it is stored: tetrahedra are numbered in 32 bits
      for (std::size_t v = 0; v < n; ++v) {
        total += start[v + 1];
        if (total >= static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
          throw core::Error::input("over {} tetrahedra in one field: too many (split it)",
                                   std::numeric_limits<std::int32_t>::max());
        start[v + 1] = static_cast<std::uint32_t>(total);
      }
      out.tets.resize(start[n]);
      if (neighbours) out.neighbours.resize(start[n]);
      std::vector<std::uint32_t> next(start.begin(), start.end() - 1);
      core::parallel_for(threads, count, 1, [&](std::size_t b, std::size_t e, int) {
        for (std::size_t s = b; s < e; ++s)
          if (slab[s]) slab[s]->write_canonical(out, start, next);
      });
    }
  }
  if (std::any_of(made.begin(), made.end(), [](char m) { return m == 0; })) return std::nullopt;
  if (neighbours && slabs > 1) link_mirrors(out.tets, out.neighbours, n, threads);  // one slab has no mirrors
  return out;
}

}  // namespace phew::dtfe::detail

#else

namespace phew::dtfe::detail {

std::optional<Triangulation> triangulate_cgal_slabs(const FieldPoints&, int, int, double, bool) { return std::nullopt; }

}  // namespace phew::dtfe::detail

#endif
