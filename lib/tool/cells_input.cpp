#include <phew/tool/cells_input.hpp>

#include <phew/io/amr_grid_file.hpp>
#include <phew/io/cells_file.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/mpi/agree.hpp>

namespace phew::tool {

mesh::CellSpace cell_space(const grid::GridMeta& grid, const std::optional<model::AmrRefinement>& refinement) {
  return refinement ? mesh::CellSpace::octree(grid.geometry, refinement->levels)
                    : mesh::CellSpace::uniform(grid.geometry);
}

std::vector<std::int64_t> patch_cell_cuts(const io::File& patches, const io::File& grid,
                                          const model::PatchesHeader& header, int ranks) {
  const mesh::CellSpace space = cell_space(header.grid, header.refinement);
  if (!header.refinement)
    return space.rank_cuts(ranks, io::count_test_cells(patches), [&](std::uint64_t row) {
      return static_cast<std::uint64_t>(io::test_cell_at(patches, row));
    });
  return space.rank_cuts(ranks, io::count_amr_leaves(grid),
                         [&](std::uint64_t row) { return io::read_amr_leaf_rows(grid, row, 1).key[0]; });
}

RankCells read_rank_clump_cells(const io::File& clumps, const mesh::CellSpace& space, const mpi::Comm& comm) {
  RankCells cells;
  cells.cuts = space.rank_cuts(comm.size(), io::count_test_cells(clumps), [&](std::uint64_t row) {
    return static_cast<std::uint64_t>(io::test_cell_at(clumps, row));
  });
  const auto r = static_cast<std::size_t>(comm.rank());
  cells.labels = io::read_clump_cells(clumps, cells.cuts[r], cells.cuts[r + 1]);
  return cells;
}

}  // namespace phew::tool
