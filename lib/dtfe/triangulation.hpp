// The Delaunay triangulation of a field's points behind one small interface, with two backends:
// CGAL's Delaunay_triangulation_3 (exact predicates; optional at build time, the default when
// built) and Qhull (reentrant libqhull_r, "d Qt Qbb Qz"; always available).
//
// Both give the same tetrahedra for points in general position (the Delaunay triangulation is then
// unique). The result is plain arrays, so nothing downstream knows which backend made it.
#pragma once

#include <phew/dtfe/field_points.hpp>
#include <phew/core/raw_vector.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace phew::dtfe {

enum class Backend { cgal, qhull };

bool cgal_available();  // true when phew was built with CGAL
// "auto" (CGAL when built, else Qhull), "cgal" or "qhull". Throws Error(usage), also for "cgal"
// in a build without CGAL.
Backend parse_backend(const std::string& text);
const char* to_string(Backend b);

// Peak bytes per point a triangulation needs, backend and our arrays together (for memory checks).
double triangulation_bytes_per_point(Backend b);

// vertex[k] are indices into the FieldPoints. Orientation is not guaranteed (Qhull mixes both).
struct Tet {
  std::int32_t vertex[4];
};

// A tetrahedron's neighbours: across[k] is the tetrahedron across the face opposite its vertex[k], or -1
// on the convex hull. Apart from the tetrahedra, as the maps never follow them (16 bytes a tetrahedron
// neither written nor read there).
struct TetNeighbours {
  std::int32_t across[4];
};

struct Triangulation {
  core::RawVector<Tet> tets;
  core::RawVector<TetNeighbours> neighbours;  // one per tetrahedron, or none (triangulate's `neighbours`)
  // Points the backend left out of the triangulation (Qhull may drop a point within its roundoff of
  // another) and the vertex that takes their mass: pairs (point, vertex). Empty with CGAL.
  std::vector<std::pair<std::int32_t, std::int32_t>> absorbed;
  std::uint64_t flat_tets = 0;  // zero-volume tetrahedra (Qhull's "Qt" can leave some)

  bool linked() const { return neighbours.size() == tets.size(); }
};

// Triangulates the points (at least 4, not all coplanar). `threads` is a hint for backends that can
// use them. Throws Error(input) for too few or coplanar points, Error(internal) for a backend failure.
// Not collective.
// Without `neighbours`, CGAL leaves them out (linked() false): the maps (projected rays, exact pixels)
// never follow them; the marcher, the hull and the walking grid do.
Triangulation triangulate(const FieldPoints& points, Backend backend, int threads = 1, bool neighbours = true);

namespace detail {
// The tetrahedra, with their neighbours (Qhull's always).
Triangulation triangulate_qhull(const FieldPoints& points);
Triangulation triangulate_cgal(const FieldPoints& points, int threads, bool neighbours = true);  // canonical order
// CGAL's sequential triangulation of all points, numbered in its own order and then put in canonical
// order with neighbours: the independent reference the slabs are tested against (tests only).
Triangulation triangulate_cgal_reference(const FieldPoints& points);
// CGAL on `slabs` slabs of the points at once (cgal_slabs.cpp; one slab: all of them), in canonical
// order; nullopt when a slab's points are flat or too few, for the caller to triangulate them in
// fewer slabs. Ghosts are taken `ghost` mean spacings deep to begin with (any depth gives the same
// tetrahedra).
std::optional<Triangulation> triangulate_cgal_slabs(const FieldPoints& points, int slabs, int threads, double ghost = 5,
                                                    bool neighbours = true);

// Puts tetrahedra in canonical order: each one's vertices ascending, the tetrahedra ordered by their
// vertex lists. Their neighbours, when linked(), move with their vertices and are renumbered.
void canonical_order(Triangulation& t, std::size_t n_points, int threads);
}  // namespace detail

}  // namespace phew::dtfe
