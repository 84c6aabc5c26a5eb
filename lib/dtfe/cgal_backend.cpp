// CGAL backend: Delaunay_triangulation_3 with exact predicates (Epick). Built only when CGAL was
// found (PHEW_HAVE_CGAL); otherwise a stub that cannot be reached (parse_backend refuses "cgal").
//
// CGAL's 3-D triangulations are GPL-3 (phew is GPL-3.0-or-later, see README). The insertion of a
// range sorts the points along a Hilbert curve first, so the build is fast and its cell order has
// good locality. With threads > 1 the points are triangulated in slabs, one sequential triangulation
// per thread (cgal_slabs.cpp): the same tetrahedra (unique in general position, and CGAL breaks
// cospherical ties by a symbolic perturbation that depends on the points alone), which triangulate()
// puts in a canonical order.
#include <phew/dtfe/triangulation.hpp>

#ifdef PHEW_HAVE_CGAL

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/dtfe/cgal_delaunay.hpp>

#include <optional>

namespace phew::dtfe::detail {
namespace {

// Our arrays from a finished triangulation: cells numbered in iteration order, infinite neighbours -1
// (or no neighbours at all).
HugeVector<Tet> to_tets(cgal::Delaunay& dt, bool neighbours) {
  HugeVector<Tet> tets(dt.number_of_finite_cells());
  std::size_t count = 0;
  if (!neighbours) {
    for (auto c : dt.finite_cell_handles()) {
      Tet& t = tets[count++];
      for (int k = 0; k < 4; ++k) t.vertex[k] = c->vertex(k)->info(), t.neighbour[k] = -1;
    }
    return tets;
  }
  for (auto c : dt.finite_cell_handles()) c->info() = static_cast<std::int32_t>(count++);
  for (auto c : dt.finite_cell_handles()) {
    Tet& t = tets[static_cast<std::size_t>(c->info())];
    for (int k = 0; k < 4; ++k) {
      t.vertex[k] = c->vertex(k)->info();
      const auto nb = c->neighbor(k);
      t.neighbour[k] = dt.is_infinite(nb) ? -1 : nb->info();
    }
  }
  return tets;
}

// Below this many points slabs hardly pay for their ghosts; low enough that the property scenes'
// fields (tests/property: 1,000-8,000 particles) take this path too.
constexpr std::size_t kSlabsMin = 1000;
// Below this many points the arena does not pay for its pages.
constexpr std::size_t kArenaMin = 50000;

}  // namespace

HugeVector<Tet> triangulate_cgal(const FieldPoints& points, int threads, bool neighbours) {
  const std::size_t n = points.size();
  if (threads > 1 && n >= kSlabsMin)
    if (std::optional<HugeVector<Tet>> tets = triangulate_cgal_slabs(points, threads, threads, 5, neighbours))
      return std::move(*tets);
  std::vector<std::pair<cgal::Point, std::int32_t>> input;
  input.reserve(n);
  for (std::size_t i = 0; i < n; ++i) input.emplace_back(cgal::point(points, i), static_cast<std::int32_t>(i));
  // The triangulation's containers allocate through CGAL_ALLOCATOR: large ones in huge pages; a small
  // one would only pay for zeroing a 2 MiB page. Opened before the triangulation so that it closes
  // after the triangulation is gone.
  HugeVector<Tet> tets;
  {
    std::optional<CgalArena> blocks;
    if (n >= kArenaMin) blocks.emplace();
    cgal::Delaunay dt(input.begin(), input.end());
    core::release(input);
    if (dt.dimension() < 3) throw core::Error::input("CGAL: the field's particles are coplanar");
    tets = to_tets(dt, neighbours);
  }
  canonical_order(tets, n, threads, neighbours);  // after the triangulation is gone: its copy is large
  return tets;
}

}  // namespace phew::dtfe::detail

#else

#include <phew/core/error.hpp>

namespace phew::dtfe::detail {

HugeVector<Tet> triangulate_cgal(const FieldPoints&, int, bool) {
  throw Error::internal("this build of phew has no CGAL backend");
}

}  // namespace phew::dtfe::detail

#endif
