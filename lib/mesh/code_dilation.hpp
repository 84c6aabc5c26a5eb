// Growing a set of cells by r cells: the cells within r of any of them (a cube around each, wrapped
// into a periodic lattice, clipped to an open one), on one level's lattice of an octree, by Morton codes
// (cell_key.hpp's morton3 of the cell's indices). The octree's refinement grows its heavy cells by the
// buffer and the balance's parents by 1 + buffer (octree.hpp, RAMSES' nexpand and smooth_fine).
#pragma once

#include <phew/grid/geometry.hpp>

#include <cstdint>
#include <vector>

namespace phew::mesh {

// `codes`: sorted and distinct, on the lattice of `level` (the coarse grid's shape * 2^level per axis).
// Returns the grown set, sorted and distinct. The same set whichever way it is found: a bitmap over the
// lattice's codes where that is no larger than the sorted lists would be, else three sorts of lists.
std::vector<std::uint64_t> dilate_codes(const grid::GridGeometry& coarse, int level, std::vector<std::uint64_t> codes,
                                        int r);

}  // namespace phew::mesh
