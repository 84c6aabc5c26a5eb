#include <phew/dtfe/hull.hpp>

#include <phew/core/error.hpp>
#include <phew/dtfe/predicates.hpp>

#include <algorithm>
#include <utility>

namespace phew::dtfe {
namespace {

// The side of the plane (a, b, c) the points lie on, for a hull face of a flat tetrahedron (Qhull's
// "Qt" can leave some on the hull, e.g. tiling a face of a lattice). A hull face's plane supports the
// convex hull, so any point off the plane tells; look at nearby tetrahedra first, then everywhere.
int side_of_points(const FieldPoints& points, const Triangulation& tri, std::size_t start, std::int32_t a,
                   std::int32_t b, std::int32_t c) {
  const std::int32_t* q = points.q.data();
  std::vector<std::int32_t> queue{static_cast<std::int32_t>(start)};
  std::vector<char> seen(tri.tets.size(), 0);
  seen[start] = 1;
  for (std::size_t head = 0; head < queue.size() && head < 4096; ++head) {
    const Tet& t = tri.tets[static_cast<std::size_t>(queue[head])];
    for (int k = 0; k < 4; ++k) {
      const int s = sign(orient3d(q + 3 * a, q + 3 * b, q + 3 * c, q + 3 * t.vertex[k]));
      if (s != 0) return s;
      const std::int32_t nb = tri.neighbours[static_cast<std::size_t>(queue[head])].across[k];
      if (nb >= 0 && !seen[static_cast<std::size_t>(nb)]) {
        seen[static_cast<std::size_t>(nb)] = 1;
        queue.push_back(nb);
      }
    }
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const int s = sign(orient3d(q + 3 * a, q + 3 * b, q + 3 * c, q + 3 * i));
    if (s != 0) return s;
  }
  return 0;
}

}  // namespace

std::vector<HullFacet> lower_hull(const FieldPoints& points, const Triangulation& tri) {
  if (!tri.linked()) throw core::Error::internal("lower_hull: a triangulation without neighbours");
  const std::int32_t* q = points.q.data();
  std::vector<HullFacet> hull;
  for (std::size_t t = 0; t < tri.tets.size(); ++t) {
    const Tet& tet = tri.tets[t];
    for (int k = 0; k < 4; ++k) {
      if (tri.neighbours[t].across[k] >= 0) continue;
      std::int32_t a = tet.vertex[(k + 1) % 4], b = tet.vertex[(k + 2) % 4], c = tet.vertex[(k + 3) % 4];
      const std::int32_t d = tet.vertex[k];
      const std::int64_t area = orient2d(q[3 * a], q[3 * a + 1], q[3 * b], q[3 * b + 1], q[3 * c], q[3 * c + 1]);
      if (area == 0) continue;  // a vertical face: no ray crosses it
      if (area < 0) std::swap(b, c);
      // (a, b, c) is counter-clockwise seen from above, so (b-a) x (c-a) points up the line of sight:
      // the tetrahedron is above the face (a lower face) when its fourth vertex is on that side.
      int side = sign(orient3d(q + 3 * a, q + 3 * b, q + 3 * c, q + 3 * d));
      if (side == 0) side = side_of_points(points, tri, t, a, b, c);
      if (side <= 0) continue;
      // The same rotation whatever the backend's vertex order: the smallest id first.
      while (a > b || a > c) {
        const std::int32_t r = a;
        a = b, b = c, c = r;
      }
      hull.push_back({{a, b, c}, static_cast<std::int32_t>(t), {-1, -1, -1}});
    }
  }
  // Facets sharing an edge are neighbours: sort the edges by their vertex pair.
  struct Edge {
    std::int32_t lo, hi, facet, k;
  };
  std::vector<Edge> edges;
  edges.reserve(3 * hull.size());
  for (std::size_t f = 0; f < hull.size(); ++f)
    for (int k = 0; k < 3; ++k) {
      const std::int32_t a = hull[f].vertex[(k + 1) % 3], b = hull[f].vertex[(k + 2) % 3];
      edges.push_back({std::min(a, b), std::max(a, b), static_cast<std::int32_t>(f), k});
    }
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) {
    return x.lo != y.lo ? x.lo < y.lo : (x.hi != y.hi ? x.hi < y.hi : x.facet < y.facet);
  });
  for (std::size_t i = 0; i + 1 < edges.size(); ++i) {
    const Edge& x = edges[i];
    const Edge& y = edges[i + 1];
    if (x.lo != y.lo || x.hi != y.hi) continue;
    if (i + 2 < edges.size() && edges[i + 2].lo == x.lo && edges[i + 2].hi == x.hi)
      throw core::Error::internal("lower hull: an edge shared by more than two facets");
    hull[static_cast<std::size_t>(x.facet)].neighbour[x.k] = y.facet;
    hull[static_cast<std::size_t>(y.facet)].neighbour[y.k] = x.facet;
    ++i;
  }
  return hull;
}

std::int32_t locate_in_hull(const std::vector<HullFacet>& hull, const std::int32_t* q, std::int64_t px, std::int64_t py,
                            std::int32_t& start) {
  if (hull.empty()) return -1;
  std::int32_t f = (start >= 0 && static_cast<std::size_t>(start) < hull.size()) ? start : 0;
  // A visibility walk: cross any edge that has p on its far side. The projected lower hull is a
  // regular triangulation, on which such walks never cycle; the guard below is for damaged input.
  const std::size_t limit = 4 * hull.size() + 16;
  std::int64_t det = 0;
  for (std::size_t step = 0; step < limit; ++step) {
    const HullFacet& h = hull[static_cast<std::size_t>(f)];
    int out = -1;
    for (int k = 0; k < 3; ++k) {
      const std::int32_t a = h.vertex[(k + 1) % 3], b = h.vertex[(k + 2) % 3];
      if (orient2d_sos(q[3 * a], q[3 * a + 1], q[3 * b], q[3 * b + 1], px, py, det) < 0) {
        out = k;
        break;
      }
    }
    start = f;
    if (out < 0) return f;
    f = h.neighbour[out];
    if (f < 0) return -1;  // p is beyond a silhouette edge: outside the (convex) projection
  }
  // Not reached on a valid triangulation; a plain scan still gives the right answer.
  for (std::size_t g = 0; g < hull.size(); ++g) {
    const HullFacet& h = hull[g];
    bool inside = true;
    for (int k = 0; k < 3 && inside; ++k) {
      const std::int32_t a = h.vertex[(k + 1) % 3], b = h.vertex[(k + 2) % 3];
      inside = orient2d_sos(q[3 * a], q[3 * a + 1], q[3 * b], q[3 * b + 1], px, py, det) > 0;
    }
    if (inside) {
      start = static_cast<std::int32_t>(g);
      return start;
    }
  }
  return -1;
}

}  // namespace phew::dtfe
