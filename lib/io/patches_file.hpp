// patches.h5 (phew-segment): cell labels, the peak table and the saddle graph (docs/formats.md).
#pragma once

#include <phew/grid/cell_labels.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/mpi/slab.hpp>

#include <array>
#include <span>

namespace phew::io {

// A density peak and its patch (/peaks).
struct PatchPeak {
  std::int64_t id = 0;
  std::int64_t cell = 0;  // global index of the peak cell
  std::array<double, 3> position{};
  double density = 0;
  std::int64_t n_cells = 0;
  double mass = 0;
};
const Table<PatchPeak>& patch_peak_table();

// The saddle of two touching patches (/saddles): peak_a < peak_b, the densest point of their boundary.
struct SaddleRow {
  std::int64_t peak_a = 0, peak_b = 0;
  double density = 0;
  std::int64_t cell_a = 0, cell_b = 0;  // where it is reached: cell_a in patch peak_a, cell_b in peak_b
};
const Table<SaddleRow>& saddle_table();

struct PatchesMeta {
  double threshold = 0;            // absolute, grid density units
  std::string threshold_text;      // as given: "80mean"
  std::uint64_t n_test_cells = 0;
  bool refined_positions = false;
};

// The whole product, as one rank holds it: the labels of the test cells in its planes and its rows of the
// tables (which follow the rows of lower ranks).
struct Patches {
  grid::GridMeta grid;
  PatchesMeta meta;
  grid::CellLabels cells;  // this rank's test cells and the peak ID of each
  std::vector<PatchPeak> peaks;
  std::vector<SaddleRow> saddles;
};

// Writes /grid (attributes), /cells (the test cells' labels, io/cells_file.hpp, and the segmentation's
// attributes), /peaks and /saddles.
// Collective.
void write_patches(File& file, const Patches& patches, const mpi::SlabDecomposition& slabs, const mpi::Comm& comm);

// What a reader needs before the tables: the grid, the segmentation and the table sizes. Refuses a file
// of another format version.
struct PatchesHeader {
  grid::GridMeta grid;
  PatchesMeta meta;
  std::uint64_t n_peaks = 0, n_saddles = 0;
};
PatchesHeader read_patches_header(const File& file);
// The test cells of planes [x0, x1) and their peak IDs.
grid::CellLabels read_patch_cells(const File& file, const grid::GridGeometry& grid, std::int64_t x0, std::int64_t x1);
// Rows [begin, begin + count) of the peak and saddle tables (readers that hold only a part of them).
std::vector<PatchPeak> read_patch_peaks(const File& file, std::uint64_t begin, std::uint64_t count);
std::vector<SaddleRow> read_saddles(const File& file, std::uint64_t begin, std::uint64_t count);

}  // namespace phew::io
