#include "io/patches_file.hpp"

#include "io/grid_file.hpp"

namespace phew::io {

void write_patches(File& file, const GridMeta& grid, const mpi::SlabDecomposition& slabs,
                   std::span<const std::int64_t> labels, const PeakTable& peaks, const SaddleTable& saddles,
                   const PatchesMeta& meta) {
  const GridGeometry& g = grid.geometry;
  file.create_group("/grid");
  write_grid_attributes(file, grid, "/grid");

  file.create_group("/cells");
  const std::vector<std::uint64_t> shape{static_cast<std::uint64_t>(g.shape[0]), static_cast<std::uint64_t>(g.shape[1]),
                                         static_cast<std::uint64_t>(g.shape[2])};
  file.write_rows<std::int64_t, std::int64_t>("/cells/peak", shape, static_cast<std::uint64_t>(slabs.begin(file.rank())),
                                              labels);
  file.write_attribute("/cells/peak", "description", "peak ID of each cell's patch; 0 = below the threshold");
  file.write_attribute("/cells", "threshold", meta.threshold);
  file.write_attribute("/cells", "threshold_text", meta.threshold_text);
  file.write_attribute("/cells", "threshold_over_mean", grid.mean_density > 0 ? meta.threshold / grid.mean_density : 0.0);
  if (grid.critical_density) file.write_attribute("/cells", "threshold_over_critical", meta.threshold / *grid.critical_density);
  file.write_attribute<std::int64_t>("/cells", "neighbourhood", 26);
  file.write_attribute<std::uint64_t>("/cells", "n_test_cells", meta.n_test_cells);

  const auto n = static_cast<std::uint64_t>(peaks.id.size());
  file.create_group("/peaks");
  file.write<std::int64_t>("/peaks/id", peaks.id);
  file.write<std::int64_t>("/peaks/cell", peaks.cell);
  file.write<double>("/peaks/position", {n, 3}, peaks.position);
  file.write<double>("/peaks/density", peaks.density);
  file.write<std::int64_t>("/peaks/n_cells", peaks.n_cells);
  file.write<double>("/peaks/mass", peaks.mass);
  file.write_attribute("/peaks/position", "units", grid.length_units);
  file.write_attribute<std::int8_t>("/peaks/position", "refined", meta.refined_positions ? 1 : 0);
  file.write_attribute("/peaks/density", "units", grid.density_units);
  file.write_attribute("/peaks/mass", "units", grid.mass_units);
  file.write_attribute<std::uint64_t>("/peaks", "count", n);

  file.create_group("/saddles");
  file.write<std::int64_t>("/saddles/peak_a", saddles.peak_a);
  file.write<std::int64_t>("/saddles/peak_b", saddles.peak_b);
  file.write<double>("/saddles/density", saddles.density);
  file.write<std::int64_t>("/saddles/cell_a", saddles.cell_a);
  file.write<std::int64_t>("/saddles/cell_b", saddles.cell_b);
  file.write_attribute("/saddles/density", "units", grid.density_units);
  file.write_attribute<std::uint64_t>("/saddles", "count", static_cast<std::uint64_t>(saddles.peak_a.size()));
}

}  // namespace phew::io
