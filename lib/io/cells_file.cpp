#include <phew/io/cells_file.hpp>

#include <phew/core/error.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/io/table.hpp>

#include <algorithm>
#include <limits>
#include <numeric>

namespace phew::io {
namespace {

// Sorted indices and runs of equal labels compress well: byte-shuffled and deflated in chunks of 64k rows.
constexpr Storage kCellsStorage{1 << 16, 1};

// The root's format_version and /cells/index, this rank's rows after the lower ranks'. Collective.
void write_index(File& f, std::span<const std::int64_t> cells, const std::string& description, const mpi::Comm& comm) {
  f.write_attribute<std::int64_t>("/", "format_version", kCellsFormatVersion);
  if (!f.has("/cells")) f.create_group("/cells");
  f.write_distributed<std::int64_t>("/cells/index", cells, comm, 1, kCellsStorage);
  f.write_attribute("/cells/index", "description", description);
}

}  // namespace

void write_cell_index(File& f, const grid::GridGeometry& g, std::span<const std::int64_t> cells,
                      const mpi::Comm& comm) {
  write_index(
      f, cells,
      "global cell index (C order over [nx][ny][nz]) of every test cell (above the density threshold), ascending",
      comm);

  // Cells per plane: each rank's runs of one plane as (plane, count), gathered (a plane may be shared
  // by ranks), then the running sum.
  const auto plane = static_cast<std::int64_t>(g.plane_cells());
  struct Run {
    std::int64_t plane, cells;
  };
  std::vector<Run> mine;
  for (const std::int64_t c : cells) {
    if (mine.empty() || mine.back().plane != c / plane) mine.push_back({c / plane, 0});
    ++mine.back().cells;
  }
  std::vector<std::int64_t> start(static_cast<std::size_t>(g.shape[0]) + 1, 0);
  for (const Run& r : comm.all_gatherv<Run>(mine)) start[static_cast<std::size_t>(r.plane) + 1] += r.cells;
  std::inclusive_scan(start.begin(), start.end(), start.begin());
  f.write<std::int64_t>("/cells/plane_start", start);
  f.write_attribute("/cells/plane_start", "description",
                    "the cells of plane i are rows plane_start[i] .. plane_start[i+1]-1 of /cells/index");
}

void write_cell_labels(File& f, const std::string& name, std::span<const std::int64_t> labels,
                       const std::string& description, const mpi::Comm& comm) {
  std::int64_t largest = 0;
  for (const std::int64_t l : labels) largest = std::max(largest, l);
  largest = comm.max(largest);
  const std::string path = "/cells/" + name;
  // The type depends on the largest label of all ranks only, so the file is the same on any rank count.
  // Converted here: parallel HDF5 compresses only what needs no conversion on the way.
  auto write_as = [&]<typename T>(T) {
    const std::vector<T> narrow(labels.begin(), labels.end());
    f.write_distributed<T>(path, narrow, comm, 1, kCellsStorage);
  };
  if (largest <= std::numeric_limits<std::uint8_t>::max())
    write_as(std::uint8_t{});
  else if (largest <= std::numeric_limits<std::uint16_t>::max())
    write_as(std::uint16_t{});
  else if (largest <= std::numeric_limits<std::uint32_t>::max())
    write_as(std::uint32_t{});
  else
    write_as(std::uint64_t{});
  f.write_attribute(path, "description", description);
}

void check_cells_format(const File& f, const std::string& remedy) {
  const std::int64_t found =
      f.has_attribute("/", "format_version") ? f.read_attribute_scalar<std::int64_t>("/", "format_version") : 1;
  if (found != kCellsFormatVersion)
    throw core::Error::input("{}: format version {} ({}), but this phew reads version {} (sparse /cells): {}", f.path(),
                             found, found == 1 ? "dense label grids" : "unknown", kCellsFormatVersion, remedy);
}

void write_cell_keys(File& f, std::span<const std::int64_t> keys, const mpi::Comm& comm) {
  write_index(f, keys,
              "key of every test leaf (above the density threshold), ascending: Morton order of its lower corner "
              "on the finest lattice, shifted left by 4, or-ed with the level (docs/formats.md)",
              comm);
}

std::uint64_t count_test_cells(const File& f) { return f.dataset_info("/cells/index").elements(); }

std::int64_t test_cell_at(const File& f, std::uint64_t row) {
  return f.read_rows<std::int64_t>("/cells/index", row, 1)[0];
}

void check_cell_column(const File& f, const std::string& path) {
  const std::uint64_t n = count_test_cells(f), rows = f.dataset_info(path).elements();
  if (rows != n) throw core::Error::input("{}: {} has {} rows, /cells/index {}", f.path(), path, rows, n);
}

CellRows cell_rows(const File& f, std::int64_t begin, std::int64_t end) {
  if (end <= begin) return {};
  return {f.first_row_not_below<std::int64_t>("/cells/index", begin),
          f.first_row_not_below<std::int64_t>("/cells/index", end)};
}

grid::CellLabels read_cell_labels(const File& f, const std::string& name, std::int64_t begin, std::int64_t end,
                                  std::int64_t max_label) {
  check_cells_format(f, "re-run the tool that wrote it");
  grid::CellLabels out;
  const std::uint64_t n = count_test_cells(f);
  const std::string path = "/cells/" + name;
  check_cell_column(f, path);
  if (f.has("/cells/plane_start")) {  // the uniform grid's: checked, since tools that read by plane trust it
    const auto start = f.read<std::int64_t>("/cells/plane_start");
    const std::int64_t nx = read_grid_attributes(f, "/grid", false).geometry.shape[0];
    if (start.size() != static_cast<std::size_t>(nx) + 1 || start.front() != 0 ||
        start.back() != static_cast<std::int64_t>(n) || !std::is_sorted(start.begin(), start.end()))
      throw core::Error::input("{}: /cells/plane_start does not match /cells/index ({} rows) and the grid's {} planes",
                               f.path(), n, nx);
  }
  if (end <= begin) return out;
  const auto [b, e] = cell_rows(f, begin, end);
  out.cell = f.read_rows<std::int64_t>("/cells/index", b, e - b);
  for (std::size_t k = 0; k < out.cell.size(); ++k)
    if (out.cell[k] < begin || out.cell[k] >= end || (k > 0 && out.cell[k] <= out.cell[k - 1]))
      throw core::Error::input("{}: /cells/index row {} is {} (expected ascending cell indices or keys in {}..{})",
                               f.path(), b + k, out.cell[k], begin, end - 1);
  out.label = f.read_rows<std::int64_t>(path, b, e - b);
  check_labels(f, path, out.label, max_label);
  return out;
}

}  // namespace phew::io
