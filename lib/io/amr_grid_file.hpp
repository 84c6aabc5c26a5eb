// The adaptive grid.h5 (docs/formats.md, "grid.h5 with an adaptive mesh"): the uniform grid's /grid
// attributes (the coarse grid's shape and cells), the refinement as attributes of /grid/leaves, and the
// leaves in key order as /grid/leaves/{key, level, density}, in place of /grid/density.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/io/h5.hpp>
#include <phew/model/amr.hpp>
#include <phew/mpi/comm.hpp>

#include <functional>
#include <span>
#include <vector>

namespace phew::io {

// Whether a grid file holds an adaptive mesh (/grid/leaves) rather than a uniform one (/grid/density).
bool is_adaptive_grid(const File& file);

// Writes the metadata, the refinement and this rank's run of leaves (their keys, which hold the level,
// and densities) after the runs of lower ranks (the runs in rank order are the mesh in key order), a
// piece of kLeafPiece rows at a time: `next_keys` fills the next keys of the run, piece after piece, so
// that the keys need never be held whole (mesh::LeafRun). `compress`: chunks of kLeafChunk rows,
// shuffled and deflated. Collective.
inline constexpr std::uint64_t kLeafChunk = 1 << 16;
inline constexpr std::uint64_t kLeafPiece = 16 * kLeafChunk;
using NextKeys = std::function<void(std::span<std::uint64_t>)>;
void write_amr_grid(File& file, const grid::GridMeta& meta, const model::AmrRefinement& refinement,
                    std::span<const double> density, const NextKeys& next_keys, Precision precision, bool compress,
                    const mpi::Comm& comm);
void write_amr_grid(File& file, const grid::GridMeta& meta, const model::AmrRefinement& refinement,
                    std::span<const float> density, const NextKeys& next_keys, Precision precision, bool compress,
                    const mpi::Comm& comm);
// The same with the keys listed.
void write_amr_grid(File& file, const grid::GridMeta& meta, const model::AmrRefinement& refinement,
                    std::span<const std::uint64_t> keys, std::span<const double> density, Precision precision,
                    bool compress, const mpi::Comm& comm);
void write_amr_grid(File& file, const grid::GridMeta& meta, const model::AmrRefinement& refinement,
                    std::span<const std::uint64_t> keys, std::span<const float> density, Precision precision,
                    bool compress, const mpi::Comm& comm);
// Whether the leaves' densities are stored as float32 (cic-project's default --precision).
bool amr_density_is_float32(const File& file);

// The refinement and the number of leaves; Error(input) when the file is not an adaptive grid or its
// refinement is not one cic-project could have written.
model::AmrRefinement read_amr_refinement(const File& file);
// The coarse grid's metadata (/grid's attributes, as a uniform grid has them).
grid::GridMeta read_amr_grid_meta(const File& file);
// The metadata of any grid.h5, whichever mesh it holds.
grid::GridMeta read_mesh_meta(const File& file);
std::uint64_t count_amr_leaves(const File& file);

// The leaves with keys in [key_begin, key_end), found by a binary search of /grid/leaves/key (a few
// small reads) and read in one piece, the densities as Real (float only for a float32 file). Not
// collective.
template <typename Real = double>
model::BasicAmrLeaves<Real> read_amr_leaves(const File& file, std::uint64_t key_begin, std::uint64_t key_end);
// The same into `out`, its columns' room kept from one read to the next (a reader of many batches).
template <typename Real>
void read_amr_leaves_into(const File& file, std::uint64_t key_begin, std::uint64_t key_end,
                          model::BasicAmrLeaves<Real>& out);

// The leaves with keys in [key_begin, key_end) denser than `above` (the watershed's test leaves), read a
// batch of rows at a time so that memory goes with the leaves kept, not with the mesh; every row read is
// checked as read_amr_leaves checks it. `read`: the leaves in the range; `densest`: the densest of them.
template <typename Real>
struct AmrLeavesAbove {
  model::BasicAmrLeaves<Real> leaves;
  std::uint64_t read = 0;
  double densest = 0;
};
template <typename Real>
AmrLeavesAbove<Real> read_amr_leaves_above(const File& file, std::uint64_t key_begin, std::uint64_t key_end,
                                           double above);
// The refinement as attributes of a group: /grid/leaves of grid.h5, /grid/refinement of the products
// made from it (patches.h5, clumps.h5).
void write_refinement(File& file, const std::string& group, const model::AmrRefinement& refinement);
model::AmrRefinement read_refinement(const File& file, const std::string& group);
// Leaves [begin, begin + count) by position.
template <typename Real = double>
model::BasicAmrLeaves<Real> read_amr_leaf_rows(const File& file, std::uint64_t begin, std::uint64_t count);

}  // namespace phew::io
