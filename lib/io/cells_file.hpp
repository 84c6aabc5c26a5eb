// /cells of patches.h5 and clumps.h5: the labels of the test cells only (format version 2,
// docs/formats.md). Storage grows with the structures, not with the box:
//   /cells/index        int64 [n]: the global index (i*ny + j)*nz + k of every test cell, ascending
//   /cells/plane_start  int64 [nx+1]: the cells of plane i are rows [plane_start[i], plane_start[i+1])
//   /cells/NAME         [n]: a label per cell (peak, clump, halo), in the smallest unsigned integer type
//                       that holds the largest label
// Version 1 (before) stored dense int64 grids [nx][ny][nz] and had no format_version attribute.
#pragma once

#include <phew/grid/cell_labels.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/mpi/comm.hpp>

#include <span>
#include <string>

namespace phew::io {

// The root attribute "format_version" of patches.h5 and clumps.h5.
inline constexpr std::int64_t kCellsFormatVersion = 2;

// Writes the root's format_version, /cells/index and /cells/plane_start from this rank's cells
// (ascending, and after every cell of the ranks below: any cut of the index range). Collective.
void write_cell_index(File& f, const grid::GridGeometry& g, std::span<const std::int64_t> cells, const mpi::Comm& comm);
// Writes /cells/NAME: this rank's labels, one per cell given to write_cell_index and in its order.
// Collective.
void write_cell_labels(File& f, const std::string& name, std::span<const std::int64_t> labels,
                       const std::string& description, const mpi::Comm& comm);

// Refuses a file of another layout: Error(input) naming the version found and the one this phew reads,
// and what to re-run (`remedy`, e.g. "re-run phew-segment").
void check_cells_format(const File& f, const std::string& remedy);

// On an adaptive mesh (the product has /grid/refinement): /cells/index holds leaf keys, ascending, and
// no plane_start; readers find a range of keys by binary search. Collective.
void write_cell_keys(File& f, std::span<const std::int64_t> keys, const mpi::Comm& comm);
// How many test cells the file lists, and the global index of one (a row of /cells/index).
std::uint64_t count_test_cells(const File& f);
std::int64_t test_cell_at(const File& f, std::uint64_t row);
// A column of /cells (its path) checked to hold a row per test cell: Error(input) naming the file if not.
void check_cell_column(const File& f, const std::string& path);
// The rows of /cells/index whose cells (global indices or leaf keys) lie in [begin, end): a binary search,
// a few small reads. Empty when end <= begin.
struct CellRows {
  std::uint64_t begin = 0, end = 0;
};
CellRows cell_rows(const File& f, std::int64_t begin, std::int64_t end);
// The test cells with global indices (or leaf keys) in [begin, end) and their labels of /cells/NAME,
// found by binary search in /cells/index. Error(input) naming the file when the index is not ascending,
// a uniform grid's /cells/plane_start does not match it, or a label is outside 0..max_label.
grid::CellLabels read_cell_labels(const File& f, const std::string& name, std::int64_t begin, std::int64_t end,
                                  std::int64_t max_label);

}  // namespace phew::io
