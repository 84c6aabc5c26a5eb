#include <phew/io/cells_file.hpp>

#include <phew/core/error.hpp>
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
                      const mpi::SlabDecomposition& slabs, const mpi::Comm& comm) {
  write_index(f, cells,
              "global cell index (C order over [nx][ny][nz]) of every test cell (above the density threshold), ascending",
              comm);

  // Cells per plane, gathered in rank order = plane order, then their running sum.
  const std::int64_t x0 = slabs.begin(comm.rank()), plane = static_cast<std::int64_t>(g.plane_cells());
  std::vector<std::int64_t> per_plane(static_cast<std::size_t>(slabs.planes(comm.rank())), 0);
  for (const std::int64_t c : cells) ++per_plane[static_cast<std::size_t>(c / plane - x0)];
  const std::vector<std::int64_t> all = comm.all_gatherv<std::int64_t>(per_plane);
  std::vector<std::int64_t> start(all.size() + 1, 0);
  std::inclusive_scan(all.begin(), all.end(), start.begin() + 1);
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
    throw core::Error::input("{}: format version {} ({}), but this phew reads version {} (sparse /cells): {}", f.path(), found,
                       found == 1 ? "dense label grids" : "unknown", kCellsFormatVersion, remedy);
}

grid::CellLabels read_cell_labels(const File& f, const grid::GridGeometry& g, const std::string& name, std::int64_t x0,
                            std::int64_t x1, std::int64_t max_label) {
  check_cells_format(f, "re-run the tool that wrote it");
  if (f.has("/grid/refinement"))
    throw core::Error::input("{}: made on an adaptive mesh (cic-project --refine), which this tool does not read yet", f.path());
  grid::CellLabels out;
  if (x1 <= x0) return out;
  const auto n = static_cast<std::int64_t>(f.dataset_info("/cells/index").elements());
  const auto start = f.read<std::int64_t>("/cells/plane_start");
  const bool ordered = std::is_sorted(start.begin(), start.end());
  if (start.size() != static_cast<std::size_t>(g.shape[0]) + 1 || start.front() != 0 || start.back() != n || !ordered)
    throw core::Error::input("{}: /cells/plane_start does not match /cells/index ({} rows) and the grid's {} planes", f.path(),
                       n, g.shape[0]);
  const auto b = static_cast<std::uint64_t>(start[static_cast<std::size_t>(x0)]);
  const auto e = static_cast<std::uint64_t>(start[static_cast<std::size_t>(x1)]);
  out.cell = f.read_rows<std::int64_t>("/cells/index", b, e - b);
  const auto plane = static_cast<std::int64_t>(g.plane_cells());
  const std::int64_t lo = x0 * plane, hi = x1 * plane;
  for (std::size_t k = 0; k < out.cell.size(); ++k)
    if (out.cell[k] < lo || out.cell[k] >= hi || (k > 0 && out.cell[k] <= out.cell[k - 1]))
      throw core::Error::input("{}: /cells/index row {} is {} (expected ascending cell indices of planes {}..{})", f.path(),
                         b + k, out.cell[k], x0, x1 - 1);
  const std::string path = "/cells/" + name;
  if (f.dataset_info(path).elements() != static_cast<std::uint64_t>(n))
    throw core::Error::input("{}: {} has {} rows, /cells/index {}", f.path(), path, f.dataset_info(path).elements(), n);
  out.label = f.read_rows<std::int64_t>(path, b, e - b);
  check_labels(f, path, out.label, max_label);
  return out;
}

void write_cell_keys(File& f, std::span<const std::int64_t> keys, const mpi::Comm& comm) {
  write_index(f, keys,
              "key of every test leaf (above the density threshold), ascending: Morton order of its lower corner "
              "on the finest lattice, shifted left by 4, or-ed with the level (docs/formats.md)",
              comm);
}

std::uint64_t count_test_cells(const File& f) { return f.dataset_info("/cells/index").elements(); }

std::int64_t test_cell_at(const File& f, std::uint64_t row) { return f.read_rows<std::int64_t>("/cells/index", row, 1)[0]; }

grid::CellLabels read_cell_labels_in_keys(const File& f, const std::string& name, std::int64_t key_begin,
                                          std::int64_t key_end, std::int64_t max_label) {
  check_cells_format(f, "re-run the tool that wrote it");
  grid::CellLabels out;
  const std::uint64_t n = count_test_cells(f);
  const std::string path = "/cells/" + name;
  if (f.dataset_info(path).elements() != n)
    throw core::Error::input("{}: {} has {} rows, /cells/index {}", f.path(), path, f.dataset_info(path).elements(), n);
  if (key_end <= key_begin) return out;
  const std::uint64_t b = f.first_row_not_below<std::int64_t>("/cells/index", key_begin);
  const std::uint64_t e = f.first_row_not_below<std::int64_t>("/cells/index", key_end);
  out.cell = f.read_rows<std::int64_t>("/cells/index", b, e - b);
  for (std::size_t k = 0; k < out.cell.size(); ++k)
    if (out.cell[k] < key_begin || out.cell[k] >= key_end || (k > 0 && out.cell[k] <= out.cell[k - 1]))
      throw core::Error::input("{}: /cells/index row {} is {} (expected ascending leaf keys)", f.path(), b + k, out.cell[k]);
  out.label = f.read_rows<std::int64_t>(path, b, e - b);
  check_labels(f, path, out.label, max_label);
  return out;
}

}  // namespace phew::io
