// A grid.h5's density field as one value whichever mesh it holds (mesh::Field): cic-project writes it,
// phew-segment reads this rank's share of it. The uniform grid is /grid/density, the adaptive mesh
// /grid/leaves (docs/formats.md, "grid.h5").
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/io/h5.hpp>
#include <phew/mesh/field.hpp>
#include <phew/model/amr.hpp>
#include <phew/mpi/comm.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace phew::tool {

// This rank's share of a grid.h5's density field (`meta`: its io::read_mesh_meta) for a watershed at
// `threshold`, checking that it and the watershed's working set fit in the node's memory: the uniform
// grid's block, or of the adaptive mesh's run of leaves those above the threshold (mesh::LeafField).
// Collective.
mesh::Field read_field(const io::File& file, const grid::GridMeta& meta, double threshold, const mpi::Comm& comm);

// The densities of some cells of a grid.h5 (ascending: the uniform grid's global indices, or the leaf
// keys of the adaptive mesh `refinement` says it is), read a batch at a time so that memory goes with the
// cells, not with the mesh. Error(input) when a key is not a leaf of the file. Not collective.
std::vector<double> read_field_cells(const io::File& file, const grid::GridGeometry& geometry,
                                     const std::optional<model::AmrRefinement>& refinement,
                                     std::span<const std::int64_t> cells);

// Writes the field and `meta` as grid.h5: a BlockField as /grid/density (io::write_grid), a LeafField
// as /grid/leaves with its refinement (io::write_amr_grid); `precision` and `compress` as those say.
// Collective.
void write_field(io::File& file, const grid::GridMeta& meta, const mesh::Field& field, io::Precision precision,
                 bool compress, const mpi::Comm& comm);

}  // namespace phew::tool
