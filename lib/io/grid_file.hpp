// grid.h5 (docs/formats.md, "grid.h5 (cic-project)"): /grid/density [nx][ny][nz] with the grid's
// metadata as attributes of /grid.
#pragma once

#include <phew/core/raw_vector.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/mpi/blocks.hpp>

#include <span>

namespace phew::io {

enum class Precision { f32, f64 };
Precision parse_precision(const std::string& text);  // "float32" | "float64"

// Writes /grid/density (this rank's block, blocks.box(rank), from `density` in C order) and the
// metadata; `compress`: in chunks of one plane, shuffled and deflated (level kGridDeflate), which
// parallel HDF5 writes collectively (a chunk shared by several blocks too). Collective.
inline constexpr int kGridDeflate = 1;  // higher levels cost much more time for a few % (bench/README.md)
void write_grid(File& file, const grid::GridMeta& meta, const mpi::BlockDecomposition& blocks,
                std::span<const double> density, Precision precision, bool compress = false);
// The same from densities already rounded to float32 (written as float32).
void write_grid(File& file, const grid::GridMeta& meta, const mpi::BlockDecomposition& blocks,
                std::span<const float> density, bool compress = false);

// Reads the metadata of a grid file; checks that /grid/density exists with the recorded shape.
grid::GridMeta read_grid_meta(const File& file);

// The mean density of a reference grid (the first snapshot of a series, `--mean-from`), so that "80mean"
// means the same absolute density for every snapshot of an open box, whose region loses or gains
// mass. Error(input) when the reference is not a grid of the same simulation (units, box). Not collective.
double reference_mean_density(const std::string& path, const grid::GridMeta& mine);

// The grid's metadata as attributes of `group` (grid.h5's /grid; later stages copy it so that their
// files explain themselves). Collective.
void write_grid_attributes(File& file, const grid::GridMeta& meta, const std::string& group);
grid::GridMeta read_grid_attributes(const File& file, const std::string& group, bool with_density);

// The densities of some cells (global indices, ascending), read a few planes at a time, and only the
// planes that hold any of them, so that memory goes with the cells, not with the slab.
std::vector<double> read_grid_cells(const File& file, const grid::GridGeometry& g, std::span<const std::int64_t> cells);

// The cells [lo, hi) of the grid (a rank's block, mpi::BlockDecomposition), in C order, each value checked: NaN,
// Inf and negative densities give Error(input) naming the cell. Real: double, or float for a float32
// grid held as stored (grid_is_float32). `spare`: room reserved beyond the cells (a mesh's ghosts), so
// that growing into it does not copy the block.
template <typename Real = double>
core::RawVector<Real> read_grid_box(const File& file, const grid::GridGeometry& g,
                                    const std::array<std::int64_t, 3>& lo, const std::array<std::int64_t, 3>& hi,
                                    std::size_t spare = 0);

// True when /grid/density is stored as float32 (cic-project's default precision).
bool grid_is_float32(const File& file);

}  // namespace phew::io
