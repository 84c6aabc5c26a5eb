#include <phew/tool/cells_input.hpp>

#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>
#include <phew/io/amr_grid_file.hpp>
#include <phew/io/cells_file.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/mesh/block_mesh.hpp>
#include <phew/mpi/agree.hpp>

#include <fmt/format.h>
#include <phew/io/clumps_file.hpp>

namespace phew::tool {
namespace {

// The uniform grid: this rank's block; the ghosts come from the ranks around. A float32 grid is held as
// stored: half the memory, and the same doubles where they are compared.
mesh::BlockField read_block(const io::File& file, const grid::GridGeometry& g, const mpi::Comm& comm) {
  mesh::BlockField field{mpi::BlockDecomposition(g.shape, comm.size()), {}};
  const mpi::BlockDecomposition::Box box = field.blocks.box(comm.rank());
  // Refuses before reading: the density (8 B/cell) and the test-cell bitmap; test cells cost 40 B each at
  // the peak (sorting, labels and the output rows), assumed here for up to a tenth of the cells.
  const double need = static_cast<double>(box.cells()) * 12.5;
  mpi::agree(comm, [&] {
    core::check_memory(need * mpi::ranks_on_node(comm), core::available_memory_bytes(),
                       fmt::format("segmenting a {}x{}x{} grid", g.shape[0], g.shape[1], g.shape[2]));
  });
  bool single = false;
  mpi::agree(comm, [&] { single = io::grid_is_float32(file); });
  mpi::agree(comm, [&] {
    if (single)
      field.density = io::read_grid_box<float>(file, g, box.lo, box.hi, mesh::BlockMesh32::shell_cells(box));
    else
      field.density = io::read_grid_box<double>(file, g, box.lo, box.hi, mesh::BlockMesh::shell_cells(box));
  });
  return field;
}

// The adaptive mesh: this rank's run of whole coarse cells (mesh::CellSpace::rank_cuts).
mesh::LeafField read_leaves(const io::File& file, const grid::GridGeometry& g, const mpi::Comm& comm) {
  mesh::LeafField field;
  model::AmrLeaves leaves;
  mpi::agree(comm, [&] {
    field.refinement = io::read_amr_refinement(file);
    const std::uint64_t n = io::count_amr_leaves(file);
    const auto cuts =
        mesh::CellSpace::octree(g, field.refinement.levels).rank_cuts(comm.size(), n, [&](std::uint64_t row) {
          return io::read_amr_leaf_rows(file, row, 1).key[0];
        });
    const auto r = static_cast<std::size_t>(comm.rank());
    // About 70 B per leaf at the peak: the leaves as read (17 B: the levels checked against the keys), the
    // mesh's ghosts, the watershed's sets and labels.
    const std::uint64_t mine = cuts[r + 1] > cuts[r] ? n / static_cast<std::uint64_t>(comm.size()) : 0;
    core::check_memory(static_cast<double>(mine) * 70.0 * mpi::ranks_on_node(comm), core::available_memory_bytes(),
                       fmt::format("segmenting an adaptive mesh of {} leaves", n));
    leaves = io::read_amr_leaves(file, static_cast<std::uint64_t>(cuts[r]), static_cast<std::uint64_t>(cuts[r + 1]));
  });
  core::log::info("adaptive mesh: {} leaves over {} levels above the coarse grid",
                  core::log::thousands(static_cast<long long>(comm.sum<std::uint64_t>(leaves.size()))),
                  field.refinement.levels);
  field.keys = std::move(leaves.key);
  field.density = std::move(leaves.density);
  return field;
}

}  // namespace

mesh::Field read_field(const io::File& file, const grid::GridMeta& meta, const mpi::Comm& comm) {
  bool adaptive = false;
  mpi::agree(comm, [&] { adaptive = io::is_adaptive_grid(file); });
  if (adaptive) return read_leaves(file, meta.geometry, comm);
  return read_block(file, meta.geometry, comm);
}

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
