// CGAL backend: Delaunay_triangulation_3 with exact predicates (Epick). Built only when CGAL was
// found (PHEW_HAVE_CGAL); otherwise a stub that cannot be reached (parse_backend refuses "cgal").
//
// CGAL's 3-D triangulations are GPL-3 (phew is GPL-3.0-or-later, see README). The insertion of a
// range sorts the points along a Hilbert curve first, so the build is fast and its cell order has
// good locality. With TBB (CGAL_LINKED_WITH_TBB) and threads > 1 the insertion is parallel: the
// triangulation is the same (unique in general position, and CGAL breaks cospherical ties by a
// symbolic perturbation that does not depend on insertion order), only the order of its cells
// differs from run to run, and triangulate() puts them in a canonical order.
#include <phew/dtfe/triangulation.hpp>

#ifdef PHEW_HAVE_CGAL

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/dtfe/cgal_arena.hpp>
#include <phew/dtfe/predicates.hpp>

// CGAL's containers take their blocks from the arena while one is open (cgal_arena.hpp). Before any
// CGAL header, which would define the default.
#define CGAL_ALLOCATOR(T) phew::dtfe::detail::CgalArenaAllocator<T>

#include <CGAL/Delaunay_triangulation_3.h>
#include <CGAL/Delaunay_triangulation_cell_base_3.h>
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/Triangulation_cell_base_with_info_3.h>
#include <CGAL/Triangulation_vertex_base_with_info_3.h>

#ifdef CGAL_LINKED_WITH_TBB
#include <tbb/task_arena.h>
#endif

#include <cmath>
#include <optional>
#include <utility>

namespace phew::dtfe::detail {
namespace {

using K = CGAL::Exact_predicates_inexact_constructions_kernel;
using Vb = CGAL::Triangulation_vertex_base_with_info_3<std::int32_t, K>;
using Cb = CGAL::Triangulation_cell_base_with_info_3<std::int32_t, K, CGAL::Delaunay_triangulation_cell_base_3<K>>;
using Delaunay = CGAL::Delaunay_triangulation_3<K, CGAL::Triangulation_data_structure_3<Vb, Cb>>;
#ifdef CGAL_LINKED_WITH_TBB
using ParallelDelaunay =
    CGAL::Delaunay_triangulation_3<K, CGAL::Triangulation_data_structure_3<Vb, Cb, CGAL::Parallel_tag>>;
#endif

// Our arrays from a finished triangulation: cells numbered in iteration order, infinite neighbours -1.
template <typename DT>
HugeVector<Tet> to_tets(DT& dt) {
  std::int32_t count = 0;
  for (auto c : dt.finite_cell_handles()) c->info() = count++;
  HugeVector<Tet> tets(static_cast<std::size_t>(count));
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

// Below this many points a parallel insertion does not pay for its locks.
constexpr std::size_t kParallelMin = 50000;
// Below this many points the arena does not pay for its pages.
constexpr std::size_t kArenaMin = 50000;

}  // namespace

HugeVector<Tet> triangulate_cgal(const FieldPoints& points, int threads) {
  const std::size_t n = points.size();
  std::vector<std::pair<K::Point_3, std::int32_t>> input;
  input.reserve(n);
  const int shift = -static_cast<int>(kQuantBits);
  for (std::size_t i = 0; i < n; ++i)
    input.emplace_back(K::Point_3(std::ldexp(static_cast<double>(points.q[3 * i]), shift),
                                  std::ldexp(static_cast<double>(points.q[3 * i + 1]), shift),
                                  std::ldexp(static_cast<double>(points.q[3 * i + 2]), shift)),
                       static_cast<std::int32_t>(i));
#ifdef CGAL_LINKED_WITH_TBB
  if (threads > 1 && n >= kParallelMin) {
    // Lattice coordinates are within [-1, 1]: one lock grid over that cube.
    ParallelDelaunay::Lock_data_structure locks(CGAL::Bbox_3(-1, -1, -1, 1, 1, 1), 50);
    ParallelDelaunay dt(&locks);
    tbb::task_arena arena(threads);
    arena.execute([&] { dt.insert(input.begin(), input.end()); });
    core::release(input);
    if (dt.dimension() < 3) throw core::Error::input("CGAL: the field's particles are coplanar");
    dt.set_lock_data_structure(nullptr);
    return to_tets(dt);
  }
#else
  (void)threads;
#endif
  // The sequential triangulation's containers allocate through CGAL_ALLOCATOR (the parallel one's
  // through TBB's allocator). Large ones in huge pages; a small one would only pay for zeroing a 2 MiB
  // page. Opened before the triangulation so that it closes after the triangulation is gone.
  std::optional<CgalArena> blocks;
  if (n >= kArenaMin) blocks.emplace();
  Delaunay dt(input.begin(), input.end());
  core::release(input);
  if (dt.dimension() < 3) throw core::Error::input("CGAL: the field's particles are coplanar");
  return to_tets(dt);
}

}  // namespace phew::dtfe::detail

#else

#include <phew/core/error.hpp>

namespace phew::dtfe::detail {

HugeVector<Tet> triangulate_cgal(const FieldPoints&, int) {
  throw Error::internal("this build of phew has no CGAL backend");
}

}  // namespace phew::dtfe::detail

#endif
