// The cells of a clumps.h5 as the tools that work through them read them (deblend, unbind): the product's
// mesh as one value, whichever it records (mesh::CellSpace: the uniform grid or the adaptive mesh), and
// this rank's run of cells, balanced by test cells (whole pencils of the grid, whole coarse cells of the
// adaptive mesh), with their clump labels.
#pragma once

#include <phew/grid/cell_labels.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/model/amr.hpp>
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

// Reads only this rank's share of /cells; not collective (call it inside mpi::agree).
RankCells read_rank_clump_cells(const io::File& clumps, const mesh::CellSpace& space, const mpi::Comm& comm);

}  // namespace phew::tool
