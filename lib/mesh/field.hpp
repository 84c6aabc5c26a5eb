// A density field on either mesh, as one rank holds its share: the one value that crosses the seam
// between a grid.h5 and the algorithms, so that a tool never asks which mesh it holds.
//   BlockField  the uniform grid: this rank's block (mpi::BlockDecomposition), cells in C order with room
//               for the ghost shell (BlockMesh::shell_cells), in the file's precision;
//   LeafField   the adaptive mesh (cic-project --refine): a run of whole coarse cells' leaves in key order
//               (CellSpace::rank_cuts), and the refinement that made them; densities in the file's
//               precision. Made by cic-project, the whole run with its leaves' levels for keys
//               (LeafRun); read for the watershed, only the leaves above its threshold, keys listed.
#pragma once

#include <phew/core/raw_vector.hpp>
#include <phew/mesh/leaf_run.hpp>
#include <phew/model/amr.hpp>
#include <phew/mpi/blocks.hpp>

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

namespace phew::mesh {

struct BlockField {
  mpi::BlockDecomposition blocks;
  std::variant<core::RawVector<float>, core::RawVector<double>> density;  // float32 grids held as stored
};

struct LeafField {
  model::AmrRefinement refinement;
  // The leaves' keys (cell_key.hpp): listed, or for a whole run as its leaves' levels.
  std::variant<std::vector<std::uint64_t>, LeafRun> keys;
  std::variant<std::vector<float>, std::vector<double>> density;  // float32 files held as stored
  // Read for the watershed (tool::read_field with a threshold): only the leaves above it are held, of
  // the `leaves_read` leaves of this rank's run of the key order, [cuts[rank], cuts[rank + 1])
  // (CellSpace::rank_cuts), whose densest is `densest`. Empty cuts (cic-project's field to write): every
  // leaf of the run is held, as a LeafRun.
  std::vector<std::int64_t> cuts;
  std::uint64_t leaves_read = 0;
  double densest = 0;
};

using Field = std::variant<BlockField, LeafField>;

// The cells this rank holds: its block's cells or its leaves.
inline std::uint64_t local_cells(const Field& field) {
  if (const auto* leaves = std::get_if<LeafField>(&field))
    return leaves->cuts.empty() ? std::visit([](const auto& k) -> std::uint64_t { return k.size(); }, leaves->keys)
                                : leaves->leaves_read;
  return std::visit([](const auto& d) { return static_cast<std::uint64_t>(d.size()); },
                    std::get<BlockField>(field).density);
}
// What one of them is called in the logs, on a mesh with this refinement (none: the uniform grid) or of
// this field.
inline const char* cell_word(const std::optional<model::AmrRefinement>& refinement) {
  return refinement ? "leaf" : "cell";
}
inline const char* cell_word(const Field& field) { return std::holds_alternative<LeafField>(field) ? "leaf" : "cell"; }

// The refinement that made an adaptive field; none for the uniform grid.
inline std::optional<model::AmrRefinement> refinement_of(const Field& field) {
  if (const auto* leaves = std::get_if<LeafField>(&field)) return leaves->refinement;
  return std::nullopt;
}

}  // namespace phew::mesh
