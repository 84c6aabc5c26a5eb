// Neighbour links for tetrahedra gathered from several partial triangulations (cgal_slabs.cpp).
//
// Each tetrahedron arrives with, across the face opposite vertex[k], either its neighbour's index
// (>= 0, known to be right) or the opposite vertex w of the cell that was its neighbour where it was
// found, as -(w + 2) ("mirror"), or -1 on that triangulation's hull. Near a slab's edge the slab may
// not have known the true neighbour, but then the tetrahedron the mirror names does not exist: a
// mirror is either right or detectably wrong.
#pragma once

#include <phew/dtfe/triangulation.hpp>

namespace phew::dtfe::detail {

// Replaces mirrors and -1 by tetrahedron indices (-1 on the hull of all points). `tets` must be in
// canonical order (canonical_order) and be the whole triangulation of `n_points` points: a face is
// linked by a right mirror on either side, or else by matching the faces left over. Throws
// Error(internal) when a face is shared by more than two tetrahedra.
void link_mirrors(const core::RawVector<Tet>& tets, core::RawVector<TetNeighbours>& neighbours, std::size_t n_points,
                  int threads);

}  // namespace phew::dtfe::detail
