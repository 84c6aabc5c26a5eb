#include <phew/tool/field_file.hpp>

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>
#include <phew/io/amr_grid_file.hpp>
#include <phew/mesh/block_mesh.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/mpi/agree.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace phew::tool {
namespace {

// Calls f.template operator()<float>() when the file stores float32 densities, <double>() otherwise: the
// densities are held as stored (half the memory for float32; the same doubles where they are compared).
template <typename F>
void with_stored_real(bool float32, F&& f) {
  if (float32)
    f.template operator()<float>();
  else
    f.template operator()<double>();
}

// The uniform grid: this rank's block; the ghosts come from the ranks around (the density as stored).
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
    with_stored_real(single, [&]<typename Real>() {
      field.density = io::read_grid_box<Real>(file, g, box.lo, box.hi, mesh::BasicBlockMesh<Real>::shell_cells(box));
    });
  });
  return field;
}

// The adaptive mesh: the leaves above `threshold` of this rank's run of whole coarse cells
// (mesh::CellSpace::rank_cuts). The watershed sees nothing else: a leaf's densest neighbour, when denser
// than the leaf, is above the threshold too, and saddles lie between test leaves. So the mesh is read a
// batch at a time and memory goes with the test leaves, not with the leaves. A float32 file's densities
// are held as stored, as the uniform grid's are.
mesh::LeafField read_leaves(const io::File& file, const grid::GridGeometry& g, double threshold,
                            const mpi::Comm& comm) {
  mesh::LeafField field;
  std::uint64_t kept_here = 0;
  mpi::agree(comm, [&] {
    field.refinement = io::read_amr_refinement(file);
    const std::uint64_t n = io::count_amr_leaves(file);
    field.cuts = mesh::CellSpace::octree(g, field.refinement.levels).rank_cuts(comm.size(), n, [&](std::uint64_t row) {
      return io::read_amr_leaf_rows(file, row, 1).key[0];
    });
    const auto r = static_cast<std::size_t>(comm.rank());
    with_stored_real(io::amr_density_is_float32(file), [&]<typename Real>() {
      auto above = io::read_amr_leaves_above<Real>(file, static_cast<std::uint64_t>(field.cuts[r]),
                                                   static_cast<std::uint64_t>(field.cuts[r + 1]), threshold);
      field.leaves_read = above.read;
      field.densest = above.densest;
      kept_here = above.leaves.key.size();
      field.keys = std::move(above.leaves.key);
      field.density = std::move(above.leaves.density);
    });
  });
  // About 150 B per test leaf at the peak: the leaves kept (12-16 B), the mesh's ghosts, its neighbour
  // lists (about 70 B), the watershed's sets and labels, the saddle candidates, the output rows.
  const auto kept = static_cast<long long>(comm.sum<std::uint64_t>(kept_here));
  mpi::agree(comm, [&] {
    core::check_memory(static_cast<double>(comm.max<std::uint64_t>(kept_here)) * 150.0 * mpi::ranks_on_node(comm),
                       core::available_memory_bytes(),
                       fmt::format("segmenting {} leaves above the threshold", core::log::thousands(kept)));
  });
  core::log::info("adaptive mesh: {} leaves over {} levels above the coarse grid, {} above the threshold",
                  core::log::thousands(static_cast<long long>(comm.sum<std::uint64_t>(field.leaves_read))),
                  field.refinement.levels, core::log::thousands(kept));
  return field;
}

}  // namespace

mesh::Field read_field(const io::File& file, const grid::GridMeta& meta, double threshold, const mpi::Comm& comm) {
  bool adaptive = false;
  mpi::agree(comm, [&] { adaptive = io::is_adaptive_grid(file); });
  if (adaptive) return read_leaves(file, meta.geometry, threshold, comm);
  return read_block(file, meta.geometry, comm);
}

std::vector<double> read_field_cells(const io::File& file, const grid::GridGeometry& geometry,
                                     const std::optional<model::AmrRefinement>& refinement,
                                     std::span<const std::int64_t> cells) {
  if (!refinement) return io::read_grid_cells(file, geometry, cells);
  std::vector<double> out;
  out.reserve(cells.size());
  // The leaves from one test leaf to another 65,536 test leaves on, one read at a time (the densities
  // as stored: no conversion), then a search per test leaf, from the one before.
  constexpr std::size_t kBatch = 1 << 16;
  with_stored_real(io::amr_density_is_float32(file), [&]<typename Real>() {
    model::BasicAmrLeaves<Real> leaves;  // one room for every batch
    for (std::size_t b = 0; b < cells.size(); b += kBatch) {
      const auto batch = cells.subspan(b, std::min(kBatch, cells.size() - b));
      io::read_amr_leaves_into(file, static_cast<std::uint64_t>(batch.front()),
                               static_cast<std::uint64_t>(batch.back()) + 1, leaves);
      auto from = leaves.key.begin();
      for (const std::int64_t c : batch) {
        const auto it = std::lower_bound(from, leaves.key.end(), static_cast<std::uint64_t>(c));
        if (it == leaves.key.end() || *it != static_cast<std::uint64_t>(c))
          throw core::Error::input("{}: no leaf {} of the patches' test cells (not the grid they were made from?)",
                                   file.path(), c);
        out.push_back(static_cast<double>(leaves.density[static_cast<std::size_t>(it - leaves.key.begin())]));
        from = it;
      }
    }
  });
  return out;
}

void write_field(io::File& file, const grid::GridMeta& meta, const mesh::Field& field, io::Precision precision,
                 bool compress, const mpi::Comm& comm) {
  if (const auto* leaves = std::get_if<mesh::LeafField>(&field)) {
    // The keys of a run (cic-project's) are listed from its levels as they are written.
    io::NextKeys next_keys;
    std::optional<mesh::LeafKeyCursor> cursor;
    if (const auto* run = std::get_if<mesh::LeafRun>(&leaves->keys)) {
      cursor.emplace(meta.geometry, leaves->refinement.levels, *run);
      next_keys = [&](std::span<std::uint64_t> out) { cursor->next(out); };
    }
    std::visit(
        [&](const auto& density) {
          if (cursor)
            io::write_amr_grid(file, meta, leaves->refinement, std::span(density), next_keys, precision, compress,
                               comm);
          else
            io::write_amr_grid(file, meta, leaves->refinement,
                               std::span<const std::uint64_t>(std::get<std::vector<std::uint64_t>>(leaves->keys)),
                               std::span(density), precision, compress, comm);
        },
        leaves->density);
    return;
  }
  const auto& block = std::get<mesh::BlockField>(field);
  if (const auto* single = std::get_if<core::RawVector<float>>(&block.density))
    io::write_grid(file, meta, block.blocks, *single, compress);
  else
    io::write_grid(file, meta, block.blocks, std::get<core::RawVector<double>>(block.density), precision, compress);
}

}  // namespace phew::tool
