// CGAL's Delaunay triangulation as phew's CGAL backend uses it: one definition of the kernel and of
// the vertex and cell types for every translation unit that builds a triangulation (cgal_backend.cpp,
// cgal_slabs.cpp). Only for builds with CGAL (PHEW_HAVE_CGAL), and only for those files.
//
// CGAL's containers take their blocks from its default allocator. An arena of 64 MiB chunks on
// transparent huge pages was tried (2026-11-29) and taken out (2026-12-01): in alternating runs it
// made the triangulation of 10^6 points 0.35-1.5 s slower at one thread, the kernel zeroing 2 MiB
// pages ahead of the cells that fill them (bench/README.md, "CGAL's cells off huge pages").
#pragma once

#include <phew/dtfe/predicates.hpp>
#include <phew/dtfe/triangulation.hpp>

#include <CGAL/Delaunay_triangulation_3.h>
#include <CGAL/Delaunay_triangulation_cell_base_3.h>
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/Triangulation_cell_base_with_info_3.h>
#include <CGAL/Triangulation_vertex_base_with_info_3.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace phew::dtfe::detail::cgal {

using K = CGAL::Exact_predicates_inexact_constructions_kernel;
// A vertex knows its point's index in the FieldPoints; a cell's info is free for the algorithms.
using Vb = CGAL::Triangulation_vertex_base_with_info_3<std::int32_t, K>;
using Cb = CGAL::Triangulation_cell_base_with_info_3<std::int32_t, K, CGAL::Delaunay_triangulation_cell_base_3<K>>;
using Delaunay = CGAL::Delaunay_triangulation_3<K, CGAL::Triangulation_data_structure_3<Vb, Cb>>;
using Point = K::Point_3;

// Point i of the field in lattice units scaled into [-1, 1] (exactly: by a power of two).
inline Point point(const FieldPoints& p, std::size_t i) {
  constexpr double scale = 1.0 / static_cast<double>(kQuantMax);
  return {p.q[3 * i] * scale, p.q[3 * i + 1] * scale, p.q[3 * i + 2] * scale};
}

}  // namespace phew::dtfe::detail::cgal
