#include <phew/io/patches_file.hpp>

#include <phew/core/error.hpp>
#include <phew/io/cells_file.hpp>
#include <phew/io/amr_grid_file.hpp>
#include <phew/io/grid_file.hpp>

#include <cmath>

namespace phew::io {

// The rows this file maps (lib/model).
using model::Patches;
using model::PatchesHeader;
using model::PatchPeak;
using model::SaddleRow;

const Table<PatchPeak>& patch_peak_table() {
  // clang-format off: one column and its constraints per line
  static const Table<PatchPeak> t = Table<PatchPeak>()
                                        .column("id", &PatchPeak::id)
                                        .above(0)
                                        .ascending()
                                        .column("cell", &PatchPeak::cell)
                                        .at_least(0)
                                        .column("position", &PatchPeak::position, Unit::length)
                                        .finite()
                                        .column("density", &PatchPeak::density, Unit::density)
                                        .finite()
                                        .above(0)
                                        .non_increasing()
                                        .column("n_cells", &PatchPeak::n_cells)
                                        .at_least(1)
                                        .column("mass", &PatchPeak::mass, Unit::mass)
                                        .finite()
                                        .at_least(0);
  // clang-format on
  return t;
}

const Table<SaddleRow>& saddle_table() {
  // clang-format off: one column and its constraints per line
  static const Table<SaddleRow> t = Table<SaddleRow>()
                                        .column("peak_a", &SaddleRow::peak_a)
                                        .above(0)
                                        .column("peak_b", &SaddleRow::peak_b)
                                        .above(0)
                                        .column("density", &SaddleRow::density, Unit::density)
                                        .finite()
                                        .above(0)
                                        .column("cell_a", &SaddleRow::cell_a)
                                        .at_least(0)
                                        .column("cell_b", &SaddleRow::cell_b)
                                        .at_least(0);
  // clang-format on
  return t;
}

void write_patches(File& file, const Patches& p, const mpi::Comm& comm) {
  const grid::GridMeta& grid = p.grid;
  const grid::GridGeometry& g = grid.geometry;
  file.create_group("/grid");
  write_grid_attributes(file, grid, "/grid");

  if (p.refinement) {
    write_refinement(file, "/grid/refinement", *p.refinement);
    write_cell_keys(file, p.cells.cell, comm);
  } else {
    write_cell_index(file, g, p.cells.cell, comm);
  }
  write_cell_labels(file, "peak", p.cells.label, "peak ID of each test cell's patch", comm);
  if (p.cell_density.size() != p.cells.size())
    throw core::Error::internal("write_patches: {} test cells, {} densities", p.cells.size(), p.cell_density.size());
  // Exact either way: a float32 grid's densities are floats.
  if (p.density_float32)
    file.write_distributed<float>("/cells/density", std::vector<float>(p.cell_density.begin(), p.cell_density.end()),
                                  comm);
  else
    file.write_distributed<double>("/cells/density", p.cell_density, comm);
  file.write_attribute("/cells/density", "units", grid.density_units);
  file.write_attribute("/cells/density", "description", "density of each test cell, as the grid stores it");
  file.write_attribute("/cells", "threshold", p.meta.threshold);
  file.write_attribute("/cells", "threshold_text", p.meta.threshold_text);
  file.write_attribute("/cells", "threshold_over_mean",
                       grid.mean_density > 0 ? p.meta.threshold / grid.mean_density : 0.0);
  if (grid.critical_density)
    file.write_attribute("/cells", "threshold_over_critical", p.meta.threshold / *grid.critical_density);
  file.write_attribute<std::int64_t>("/cells", "neighbourhood", 26);
  file.write_attribute<std::uint64_t>("/cells", "n_test_cells", p.meta.n_test_cells);

  UnitNames units;
  units.length = grid.length_units;
  units.mass = grid.mass_units;
  units.density = grid.density_units;
  patch_peak_table().write(file, "/peaks", p.peaks, units, comm);
  file.write_attribute<std::int8_t>("/peaks/position", "refined", p.meta.refined_positions ? 1 : 0);
  file.write_attribute<std::uint64_t>("/peaks", "count", comm.sum<std::uint64_t>(p.peaks.size()));
  saddle_table().write(file, "/saddles", p.saddles, units, comm);
  file.write_attribute<std::uint64_t>("/saddles", "count", comm.sum<std::uint64_t>(p.saddles.size()));
}

PatchesHeader read_patches_header(const File& f) {
  check_cells_format(f, "re-run phew-segment");
  PatchesHeader h;
  h.grid = read_grid_attributes(f, "/grid", false);
  h.meta.threshold = f.read_attribute_scalar<double>("/cells", "threshold");
  h.meta.threshold_text = f.read_attribute_string("/cells", "threshold_text");
  h.meta.n_test_cells = f.read_attribute_scalar<std::uint64_t>("/cells", "n_test_cells");
  h.meta.refined_positions = f.read_attribute_scalar<std::int64_t>("/peaks/position", "refined") != 0;
  if (f.has("/grid/refinement")) h.refinement = read_refinement(f, "/grid/refinement");
  h.n_peaks = patch_peak_table().size(f, "/peaks");
  h.n_saddles = saddle_table().size(f, "/saddles");
  return h;
}

// IDs read from a file index arrays downstream: every one is checked against the peak table first.
namespace {
// Every test cell lies in the patch of some peak: label 0 would be "no peak".
grid::CellLabels every_cell_has_a_peak(const File& f, grid::CellLabels cells) {
  for (std::size_t i = 0; i < cells.label.size(); ++i)
    if (cells.label[i] == 0)
      throw core::Error::input("{}: /cells/peak labels the test cell {} with peak 0 (every test cell has a peak)",
                               f.path(), cells.cell[i]);
  return cells;
}
}  // namespace

grid::CellLabels read_patch_cells(const File& f, std::int64_t begin, std::int64_t end) {
  const auto n_peaks = static_cast<std::int64_t>(patch_peak_table().size(f, "/peaks"));
  return every_cell_has_a_peak(f, read_cell_labels(f, "peak", begin, end, n_peaks));
}

std::optional<std::vector<double>> read_patch_cell_densities(const File& f, std::int64_t begin, std::int64_t end) {
  if (!f.has("/cells/density")) return std::nullopt;
  check_cell_column(f, "/cells/density");
  if (const TypeInfo info = f.dataset_info("/cells/density"); info.cls != TypeInfo::Class::floating)
    throw core::Error::input("{}: /cells/density is {}, expected floating point", f.path(), info.describe());
  const auto [b, e] = cell_rows(f, begin, end);
  if (b == e) return std::vector<double>{};
  std::vector<double> out = f.read_rows<double>("/cells/density", b, e - b);
  const double threshold = f.read_attribute_scalar<double>("/cells", "threshold");
  for (std::size_t k = 0; k < out.size(); ++k)
    if (!std::isfinite(out[k]) || !(out[k] > threshold))
      throw core::Error::input(
          "{}: /cells/density row {} is {}, not above the threshold {} (every test cell's density is; re-run "
          "phew-segment)",
          f.path(), b + k, out[k], threshold);
  return out;
}

// Whether a peak's cell is a cell of the mesh: a linear index of the uniform grid, or the key of a cell
// of the adaptive mesh (its level at most the refinement's, its corner on the finest lattice).
class MeshCells {
 public:
  explicit MeshCells(const File& f) : geometry_(read_grid_attributes(f, "/grid", false).geometry) {
    if (f.has("/grid/refinement")) levels_ = read_refinement(f, "/grid/refinement").levels;
  }
  bool holds(std::int64_t cell) const {
    if (cell < 0) return false;
    if (levels_ < 0) return static_cast<std::uint64_t>(cell) < geometry_.cells();
    const auto key = static_cast<std::uint64_t>(cell);
    if (static_cast<int>(key & 0xF) > levels_) return false;
    std::array<std::int64_t, 3> corner{};  // the Morton code above the level's 4 bits, x in bit 2 of each triple
    for (int b = 0; b < 20; ++b)
      for (int d = 0; d < 3; ++d)
        corner[static_cast<std::size_t>(d)] |= static_cast<std::int64_t>((key >> (4 + 3 * b + 2 - d)) & 1) << b;
    for (std::size_t d = 0; d < 3; ++d)
      if (corner[d] >= (geometry_.shape[d] << levels_)) return false;
    return true;
  }

 private:
  grid::GridGeometry geometry_;
  int levels_ = -1;  // -1: a uniform grid
};

std::vector<PatchPeak> read_patch_peaks(const File& f, std::uint64_t begin, std::uint64_t count) {
  // The columns' constraints (patch_peak_table), and: peaks numbered 1, 2, ... in row order, each at a
  // cell of the mesh.
  std::vector<PatchPeak> rows = patch_peak_table().read(f, "/peaks", begin, count);
  const MeshCells mesh(f);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].id != static_cast<std::int64_t>(begin + i + 1))
      throw core::Error::input("{}: /peaks/id row {} is {} (peaks are numbered 1, 2, ... in row order)", f.path(),
                               begin + i, rows[i].id);
    if (!mesh.holds(rows[i].cell))
      throw core::Error::input("{}: /peaks/cell row {} is {}, not a cell of the mesh", f.path(), begin + i,
                               rows[i].cell);
  }
  return rows;
}

std::vector<SaddleRow> read_saddles(const File& f, std::uint64_t begin, std::uint64_t count) {
  // The columns' constraints (saddle_table), and: two different peaks of /peaks, the lower ID first
  // (check_saddles_below_peaks compares the densities, once for the whole file).
  std::vector<SaddleRow> rows = saddle_table().read(f, "/saddles", begin, count);
  const auto n = static_cast<std::int64_t>(patch_peak_table().size(f, "/peaks"));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SaddleRow& r = rows[i];
    if (r.peak_a < 1 || r.peak_b > n || !(r.peak_a < r.peak_b))
      throw core::Error::input(
          "{}: saddle row {} joins peaks {} and {} (expected two different IDs in 1..{}, the lower first)", f.path(),
          begin + i, r.peak_a, r.peak_b, n);
  }
  return rows;
}

void check_saddles_below_peaks(const File& f) {
  const auto density = f.read<double>("/peaks/density");
  const std::uint64_t n = saddle_table().size(f, "/saddles");
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
  for (std::uint64_t b = 0; b < n; b += kChunk)
    for (std::size_t i = 0; const SaddleRow& r : read_saddles(f, b, std::min(kChunk, n - b))) {
      const double lower =
          std::min(density[static_cast<std::size_t>(r.peak_a - 1)], density[static_cast<std::size_t>(r.peak_b - 1)]);
      if (!(r.density <= lower))
        throw core::Error::input(
            "{}: /saddles/density row {} is {:g}, above the density {:g} of peak {} or {} it joins", f.path(), b + i,
            r.density, lower, r.peak_a, r.peak_b);
      ++i;
    }
}

}  // namespace phew::io
