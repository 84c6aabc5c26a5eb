#include "io/patches_file.hpp"

#include "io/grid_file.hpp"

namespace phew::io {

void write_patches(File& file, const GridMeta& grid, const mpi::SlabDecomposition& slabs,
                   std::span<const std::int64_t> labels, const PeakTable& peaks, const SaddleTable& saddles,
                   const PatchesMeta& meta, const mpi::Comm& comm) {
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

  const auto n = comm.sum<std::uint64_t>(peaks.id.size());
  file.create_group("/peaks");
  file.write_distributed<std::int64_t>("/peaks/id", peaks.id, comm);
  file.write_distributed<std::int64_t>("/peaks/cell", peaks.cell, comm);
  file.write_distributed<double>("/peaks/position", peaks.position, comm, 3);
  file.write_distributed<double>("/peaks/density", peaks.density, comm);
  file.write_distributed<std::int64_t>("/peaks/n_cells", peaks.n_cells, comm);
  file.write_distributed<double>("/peaks/mass", peaks.mass, comm);
  file.write_attribute("/peaks/position", "units", grid.length_units);
  file.write_attribute<std::int8_t>("/peaks/position", "refined", meta.refined_positions ? 1 : 0);
  file.write_attribute("/peaks/density", "units", grid.density_units);
  file.write_attribute("/peaks/mass", "units", grid.mass_units);
  file.write_attribute<std::uint64_t>("/peaks", "count", n);

  file.create_group("/saddles");
  file.write_distributed<std::int64_t>("/saddles/peak_a", saddles.peak_a, comm);
  file.write_distributed<std::int64_t>("/saddles/peak_b", saddles.peak_b, comm);
  file.write_distributed<double>("/saddles/density", saddles.density, comm);
  file.write_distributed<std::int64_t>("/saddles/cell_a", saddles.cell_a, comm);
  file.write_distributed<std::int64_t>("/saddles/cell_b", saddles.cell_b, comm);
  file.write_attribute("/saddles/density", "units", grid.density_units);
  file.write_attribute<std::uint64_t>("/saddles", "count", comm.sum<std::uint64_t>(saddles.peak_a.size()));
}

}  // namespace phew::io
