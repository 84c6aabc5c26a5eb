// patches.h5 (phew-segment): cell labels, the peak table and the saddle graph (docs/formats.md).
#pragma once

#include <phew/grid/cell_labels.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/model/patches.hpp>
#include <phew/mpi/slab.hpp>

#include <array>
#include <optional>
#include <span>
#include <vector>

namespace phew::io {

// The columns of each table (the rows are lib/model/patches.hpp's).
const Table<model::PatchPeak>& patch_peak_table();
const Table<model::SaddleRow>& saddle_table();

// Writes /grid (attributes), /cells (the test cells' labels, io/cells_file.hpp, and the segmentation's
// attributes), /peaks and /saddles.
// Collective.
void write_patches(File& file, const model::Patches& patches, const mpi::Comm& comm);

// What a reader needs before the tables (model::PatchesHeader). Refuses a file of another format version.
model::PatchesHeader read_patches_header(const File& file);
// The test cells with global indices (or, on an adaptive mesh, leaf keys) in [begin, end) and their
// peak IDs.
grid::CellLabels read_patch_cells(const File& file, std::int64_t begin, std::int64_t end);
// The densities of those cells (/cells/density), each checked finite and above the threshold (a test
// cell's); none for a file without them (phew-segment before 2026-11-29), whose readers take them from
// the grid. Error(input) for a column of the wrong length, or a value no watershed at this threshold
// keeps.
std::optional<std::vector<double>> read_patch_cell_densities(const File& file, std::int64_t begin, std::int64_t end);
// Rows [begin, begin + count) of the peak and saddle tables (readers that hold only a part of them).
std::vector<model::PatchPeak> read_patch_peaks(const File& file, std::uint64_t begin, std::uint64_t count);
std::vector<model::SaddleRow> read_saddles(const File& file, std::uint64_t begin, std::uint64_t count);
// Every saddle's density is at most the densities of the two peaks it joins (no watershed makes a saddle
// above a peak). Reads the peaks' densities whole and the saddles a chunk at a time. Throws Error(input).
void check_saddles_below_peaks(const File& file);

}  // namespace phew::io
