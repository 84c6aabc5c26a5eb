// The cells of a product as the tools read them, one value whichever mesh it holds: the cells of a
// clumps.h5 (mesh::CellSpace and this rank's run of cells, balanced by test cells, with their clump
// labels: deblend, unbind). A grid.h5's density field is lib/tool/field_file.hpp's.
#pragma once

#include <phew/grid/cell_labels.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/model/amr.hpp>
#include <phew/model/patches.hpp>
#include <phew/mpi/comm.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace phew::tool {

// The cell space of a product made on `grid`, refined as `refinement` says (none: the uniform grid).
mesh::CellSpace cell_space(const grid::GridMeta& grid, const std::optional<model::AmrRefinement>& refinement);

struct RankCells {
  std::vector<std::int64_t> cuts;  // [ranks + 1]: rank r holds the cells [cuts[r], cuts[r + 1])
  grid::CellLabels labels;         // this rank's test cells and their clumps
};

// The runs of cells of a patches.h5 over `ranks` ranks, as phew-segment cut them: the uniform grid
// balanced by test cells, the adaptive mesh by the grid's leaves (`grid`: the grid.h5 the patches came
// from). Not collective.
std::vector<std::int64_t> patch_cell_cuts(const io::File& patches, const io::File& grid,
                                          const model::PatchesHeader& header, int ranks);

// Reads only this rank's share of /cells; not collective (call it inside mpi::agree).
RankCells read_rank_clump_cells(const io::File& clumps, const mesh::CellSpace& space, const mpi::Comm& comm);

}  // namespace phew::tool
