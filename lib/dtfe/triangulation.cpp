#include <phew/dtfe/triangulation.hpp>

#include <phew/core/error.hpp>
#include <phew/dtfe/predicates.hpp>
#include <phew/core/threads.hpp>

#include <algorithm>
#include <limits>

namespace phew::dtfe {
namespace {

// True when all points lie in one plane (exactly, on the lattice).
bool coplanar(const FieldPoints& p) {
  const std::size_t n = p.size();
  const std::int32_t* q = p.q.data();
  // Find two further points making a non-degenerate triangle with point 0, then any point off its plane.
  std::size_t j = 1;
  while (j < n && std::equal(q, q + 3, q + 3 * j)) ++j;
  if (j >= n) return true;
  for (std::size_t k = j + 1; k < n; ++k) {
    // Collinear with 0 and j when the cross product vanishes.
    const std::int64_t a[3] = {q[3 * j] - q[0], q[3 * j + 1] - q[1], q[3 * j + 2] - q[2]};
    const std::int64_t b[3] = {q[3 * k] - q[0], q[3 * k + 1] - q[1], q[3 * k + 2] - q[2]};
    if (a[1] * b[2] - a[2] * b[1] == 0 && a[2] * b[0] - a[0] * b[2] == 0 && a[0] * b[1] - a[1] * b[0] == 0) continue;
    for (std::size_t l = 0; l < n; ++l)
      if (orient3d(q, q + 3 * j, q + 3 * k, q + 3 * l) != 0) return false;
    return true;
  }
  return true;  // all collinear
}

// A point missing from the tetrahedra hands its mass to the nearest vertex (Qhull only, rare: a
// point within its roundoff of another). Points are in Morton order, so the nearest vertex is almost
// always among the neighbours in index order; the whole set is searched only when none is.
std::vector<std::pair<std::int32_t, std::int32_t>> absorb_missing(const FieldPoints& p,
                                                                  const core::RawVector<Tet>& tets) {
  const std::size_t n = p.size();
  std::vector<char> used(n, 0);
  for (const Tet& t : tets)
    for (std::int32_t v : t.vertex) used[static_cast<std::size_t>(v)] = 1;
  std::vector<std::pair<std::int32_t, std::int32_t>> out;
  auto search = [&](std::size_t i, std::size_t lo, std::size_t hi, double& best, std::int32_t& into) {
    for (std::size_t j = lo; j < hi; ++j) {
      if (!used[j]) continue;
      double d2 = 0;
      for (std::size_t k = 0; k < 3; ++k) {
        const double d = static_cast<double>(p.q[3 * i + k]) - static_cast<double>(p.q[3 * j + k]);
        d2 += d * d;
      }
      if (d2 < best) {
        best = d2;
        into = static_cast<std::int32_t>(j);
      }
    }
  };
  constexpr std::size_t kWindow = 256;
  for (std::size_t i = 0; i < n; ++i) {
    if (used[i]) continue;
    double best = std::numeric_limits<double>::infinity();
    std::int32_t into = -1;
    search(i, i > kWindow ? i - kWindow : 0, std::min(n, i + kWindow + 1), best, into);
    if (into < 0) search(i, 0, n, best, into);
    out.emplace_back(static_cast<std::int32_t>(i), into);
  }
  return out;
}

}  // namespace

bool cgal_available() {
#ifdef PHEW_HAVE_CGAL
  return true;
#else
  return false;
#endif
}

Backend parse_backend(const std::string& text) {
  if (text == "auto") return cgal_available() ? Backend::cgal : Backend::qhull;
  if (text == "qhull") return Backend::qhull;
  if (text == "cgal") {
    if (!cgal_available())
      throw core::Error::usage("--backend cgal: this build of phew has no CGAL (use qhull or auto)");
    return Backend::cgal;
  }
  throw core::Error::usage("--backend '{}': expected auto, cgal or qhull", text);
}

const char* to_string(Backend b) { return b == Backend::cgal ? "cgal" : "qhull"; }

double triangulation_bytes_per_point(Backend b) {
  // Measured on clustered particles (bench/dtfe_kernel): the backend's own structure at its peak plus
  // our tetrahedra (6.7 per point, 16 bytes each, 32 with their neighbours), vertices and sorting buffers.
  return b == Backend::cgal ? 1000.0 : 2600.0;
}

Triangulation triangulate(const FieldPoints& points, Backend backend, int threads, bool neighbours) {
  if (points.size() < 4)
    throw core::Error::input("{} distinct particles in the field: a Delaunay triangulation needs at least 4",
                             points.size());
  if (coplanar(points))
    throw core::Error::input("all {} particles of the field lie in one plane: no 3-D triangulation", points.size());
  Triangulation t = backend == Backend::cgal ? detail::triangulate_cgal(points, threads, neighbours)
                                             : detail::triangulate_qhull(points);
  if (t.tets.empty())
    throw core::Error::internal("{} produced no tetrahedra for {} points", to_string(backend), points.size());
  if (t.tets.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw core::Error::input("{} tetrahedra: too many for one field (split it)", t.tets.size());
  // In canonical order the same set of tetrahedra gives the same arrays whichever backend made them
  // and in whatever order, so every later sum is done in the same order (CGAL's come in it).
  if (backend == Backend::qhull) detail::canonical_order(t, points.size(), threads);
  // CGAL keeps every distinct point as a vertex and never makes a flat cell; Qhull may do either.
  if (backend == Backend::cgal) return t;
  t.absorbed = absorb_missing(points, t.tets);
  const std::int32_t* q = points.q.data();
  for (const Tet& tet : t.tets)
    if (orient3d(q + 3 * tet.vertex[0], q + 3 * tet.vertex[1], q + 3 * tet.vertex[2], q + 3 * tet.vertex[3]) == 0)
      ++t.flat_tets;
  return t;
}

}  // namespace phew::dtfe

namespace phew::dtfe::detail {

void canonical_order(Triangulation& tri, std::size_t n_points, int threads) {
  core::RawVector<Tet>& tets = tri.tets;
  const std::size_t m = tets.size();
  const bool linked = tri.linked();
  core::parallel_for(threads, m, 1 << 16, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      Tet& t = tets[i];
      std::int32_t* across = linked ? tri.neighbours[i].across : nullptr;
      // Insertion sort of four (vertex, neighbour) pairs.
      for (int k = 1; k < 4; ++k)
        for (int j = k; j > 0 && t.vertex[j - 1] > t.vertex[j]; --j) {
          std::swap(t.vertex[j - 1], t.vertex[j]);
          if (linked) std::swap(across[j - 1], across[j]);
        }
    }
  });
  // Counting sort by the first vertex (each thread counting and placing its own part of the list,
  // so the order within a vertex's bucket is the list's), then each bucket by the other three.
  const auto parts = static_cast<std::size_t>(std::clamp(threads, 1, 8));  // n counters each
  const std::size_t part = (m + parts - 1) / parts;
  std::vector<std::vector<std::uint32_t>> counts(parts);
  core::parallel_for(threads, parts, 1, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t p = b; p < e; ++p) {
      counts[p].assign(n_points, 0);
      for (std::size_t i = p * part; i < std::min(m, (p + 1) * part); ++i)
        ++counts[p][static_cast<std::size_t>(tets[i].vertex[0])];
    }
  });
  std::vector<std::uint32_t> start(n_points + 1, 0);
  for (std::size_t v = 0; v < n_points; ++v) {  // counts[p][v] becomes part p's first slot for v
    std::uint32_t at = start[v];
    for (auto& c : counts) {
      const std::uint32_t here = c[v];
      c[v] = at;
      at += here;
    }
    start[v + 1] = at;
  }
  std::vector<std::int32_t> order(m);
  core::parallel_for(threads, parts, 1, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t p = b; p < e; ++p)
      for (std::size_t i = p * part; i < std::min(m, (p + 1) * part); ++i)
        order[counts[p][static_cast<std::size_t>(tets[i].vertex[0])]++] = static_cast<std::int32_t>(i);
  });
  counts = {};
  auto less = [&](std::int32_t a, std::int32_t b) {
    const Tet& x = tets[static_cast<std::size_t>(a)];
    const Tet& y = tets[static_cast<std::size_t>(b)];
    return std::lexicographical_compare(x.vertex + 1, x.vertex + 4, y.vertex + 1, y.vertex + 4);
  };
  core::parallel_for(threads, n_points, 1 << 14, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t v = b; v < e; ++v) std::sort(order.begin() + start[v], order.begin() + start[v + 1], less);
  });
  core::RawVector<Tet> out(m);
  core::parallel_for(threads, m, 1 << 16, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) out[i] = tets[static_cast<std::size_t>(order[i])];
  });
  tets.swap(out);
  core::release(out);  // the tetrahedra in their old order: gone before the neighbours' arrays are made
  if (!linked) return;
  std::vector<std::int32_t> where(m);
  core::parallel_for(threads, m, 1 << 16, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) where[static_cast<std::size_t>(order[i])] = static_cast<std::int32_t>(i);
  });
  core::RawVector<TetNeighbours> moved(m);
  core::parallel_for(threads, m, 1 << 16, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      TetNeighbours nb = tri.neighbours[static_cast<std::size_t>(order[i])];
      for (std::int32_t& j : nb.across)
        if (j >= 0) j = where[static_cast<std::size_t>(j)];
      moved[i] = nb;
    }
  });
  tri.neighbours.swap(moved);
}

}  // namespace phew::dtfe::detail
