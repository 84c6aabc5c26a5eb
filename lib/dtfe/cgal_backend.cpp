// CGAL backend: Delaunay_triangulation_3 with exact predicates (Epick). Built only when CGAL was
// found (PHEW_HAVE_CGAL); otherwise a stub that cannot be reached (parse_backend refuses "cgal").
//
// CGAL's 3-D triangulations are GPL-3 (phew is GPL-3.0-or-later, see README). The insertion of a
// range sorts the points along a Hilbert curve first, so the build is fast and its cell order has
// good locality. The points are triangulated in slabs, one sequential triangulation per thread
// (cgal_slabs.cpp; one slab on one thread): the same tetrahedra on any number of threads (unique in
// general position, and CGAL breaks cospherical ties by a symbolic perturbation that depends on the
// points alone), written in the canonical order.
#include <phew/dtfe/triangulation.hpp>

#ifdef PHEW_HAVE_CGAL

#include <phew/core/error.hpp>
#include <phew/dtfe/cgal_delaunay.hpp>

#include <optional>
#include <utility>

namespace phew::dtfe::detail {
namespace {

// Below this many points slabs hardly pay for their ghosts; low enough that the property scenes'
// fields (tests/property: 1,000-8,000 particles) take this path too.
constexpr std::size_t kSlabsMin = 1000;

}  // namespace

Triangulation triangulate_cgal(const FieldPoints& points, int threads, bool neighbours) {
  if (threads > 1 && points.size() >= kSlabsMin)
    if (std::optional<Triangulation> t = triangulate_cgal_slabs(points, threads, threads, 5, neighbours))
      return std::move(*t);
  // One slab: every point; or a slab of several was too few or flat for a 3-D triangulation.
  if (std::optional<Triangulation> t = triangulate_cgal_slabs(points, 1, threads, 5, neighbours)) return std::move(*t);
  throw core::Error::input("CGAL: the field's particles are coplanar");
}

Triangulation triangulate_cgal_reference(const FieldPoints& points) {
  std::vector<std::pair<cgal::Point, std::int32_t>> input;
  for (std::size_t i = 0; i < points.size(); ++i)
    input.emplace_back(cgal::point(points, i), static_cast<std::int32_t>(i));
  const cgal::Delaunay dt(input.begin(), input.end());
  if (dt.dimension() < 3) throw core::Error::input("CGAL: the field's particles are coplanar");
  // Cells numbered in CGAL's order, then canonical_order: nothing shared with the slabs' writing.
  Triangulation t;
  t.tets.resize(dt.number_of_finite_cells());
  t.neighbours.resize(t.tets.size());
  std::int32_t count = 0;
  for (auto c : dt.finite_cell_handles()) c->info() = count++;
  for (auto c : dt.finite_cell_handles()) {
    const auto i = static_cast<std::size_t>(c->info());
    for (int k = 0; k < 4; ++k) {
      t.tets[i].vertex[k] = c->vertex(k)->info();
      t.neighbours[i].across[k] = dt.is_infinite(c->neighbor(k)) ? -1 : c->neighbor(k)->info();
    }
  }
  canonical_order(t, points.size(), 1);
  return t;
}

}  // namespace phew::dtfe::detail

#else

#include <phew/core/error.hpp>

namespace phew::dtfe::detail {

Triangulation triangulate_cgal(const FieldPoints&, int, bool) {
  throw Error::internal("this build of phew has no CGAL backend");
}

Triangulation triangulate_cgal_reference(const FieldPoints&) {
  throw Error::internal("this build of phew has no CGAL backend");
}

}  // namespace phew::dtfe::detail

#endif
