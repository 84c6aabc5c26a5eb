#include "io/clumps_file.hpp"

#include "io/grid_file.hpp"

namespace phew::io {
namespace {

template <typename T>
std::span<const T> span_of(const std::vector<T>& v) {
  return {v.data(), v.size()};
}

}  // namespace

void write_clumps(File& f, const GridMeta& grid, const mpi::SlabDecomposition& slabs,
                  std::span<const std::int64_t> cell_clump, std::span<const std::int64_t> cell_halo,
                  const PeakMergeRows& peaks, const ClumpRows& clumps, const HaloRows& halos,
                  const HierarchyRows& hierarchy, const ClumpsMeta& meta, const mpi::Comm& comm) {
  const GridGeometry& g = grid.geometry;
  f.create_group("/grid");
  write_grid_attributes(f, grid, "/grid");

  const std::vector<std::uint64_t> shape{static_cast<std::uint64_t>(g.shape[0]), static_cast<std::uint64_t>(g.shape[1]),
                                         static_cast<std::uint64_t>(g.shape[2])};
  const auto row = static_cast<std::uint64_t>(slabs.begin(comm.rank()));
  f.create_group("/cells");
  f.write_rows<std::int64_t, std::int64_t>("/cells/clump", shape, row, cell_clump);
  f.write_rows<std::int64_t, std::int64_t>("/cells/halo", shape, row, cell_halo);
  f.write_attribute("/cells/clump", "description", "level-0 clump ID of each cell; 0 = below threshold or noise");
  f.write_attribute("/cells/halo", "description", "halo ID of each cell; 0 = below threshold or noise");

  const std::string m = "/";
  f.write_attribute(m, "density_threshold", meta.density_threshold);
  f.write_attribute(m, "relevance_threshold", meta.relevance);
  if (meta.saddle_threshold) {
    f.write_attribute(m, "saddle_threshold", *meta.saddle_threshold);
    f.write_attribute(m, "saddle_threshold_text", meta.saddle_threshold_text);
  }
  if (meta.second_relevance) f.write_attribute(m, "second_relevance_threshold", *meta.second_relevance);
  if (meta.mass_threshold) {
    f.write_attribute(m, "mass_threshold", *meta.mass_threshold);
    f.write_attribute(m, "mass_threshold_text", meta.mass_threshold_text);
  }

  f.create_group("/peaks");
  f.write_distributed<std::int64_t>("/peaks/id", span_of(peaks.id), comm);
  f.write_distributed<double>("/peaks/relevance", span_of(peaks.relevance), comm);
  f.write_distributed<double>("/peaks/key_saddle", span_of(peaks.key_saddle), comm);
  f.write_distributed<std::int64_t>("/peaks/key_neighbour", span_of(peaks.key_neighbour), comm);
  f.write_distributed<std::int64_t>("/peaks/clump", span_of(peaks.clump), comm);
  f.write_attribute("/peaks/key_saddle", "units", grid.density_units);
  f.write_attribute("/peaks/clump", "description", "level-0 clump the peak belongs to after noise removal; 0 = discarded");

  f.create_group("/clumps");
  f.write_distributed<std::int64_t>("/clumps/id", span_of(clumps.id), comm);
  f.write_distributed<std::int64_t>("/clumps/level", span_of(clumps.level), comm);
  f.write_distributed<std::int64_t>("/clumps/parent", span_of(clumps.parent), comm);
  f.write_distributed<std::int64_t>("/clumps/halo", span_of(clumps.halo), comm);
  f.write_distributed<std::int64_t>("/clumps/n_cells", span_of(clumps.n_cells), comm);
  f.write_distributed<double>("/clumps/mass", span_of(clumps.mass), comm);
  f.write_distributed<double>("/clumps/peak_position", span_of(clumps.peak_position), comm, 3);
  f.write_distributed<double>("/clumps/peak_density", span_of(clumps.peak_density), comm);
  f.write_distributed<double>("/clumps/saddle_density", span_of(clumps.saddle_density), comm);
  f.write_distributed<double>("/clumps/mean_density", span_of(clumps.mean_density), comm);
  f.write_distributed<double>("/clumps/relevance", span_of(clumps.relevance), comm);
  f.write_distributed<double>("/clumps/center_of_mass", span_of(clumps.center_of_mass), comm, 3);
  for (const char* d : {"/clumps/peak_density", "/clumps/saddle_density", "/clumps/mean_density"})
    f.write_attribute(d, "units", grid.density_units);
  f.write_attribute("/clumps/mass", "units", grid.mass_units);
  f.write_attribute("/clumps/peak_position", "units", grid.length_units);
  f.write_attribute("/clumps/center_of_mass", "units", grid.length_units);

  f.create_group("/halos");
  f.write_distributed<std::int64_t>("/halos/id", span_of(halos.id), comm);
  f.write_distributed<std::int64_t>("/halos/n_cells", span_of(halos.n_cells), comm);
  f.write_distributed<double>("/halos/mass", span_of(halos.mass), comm);
  f.write_distributed<double>("/halos/peak_position", span_of(halos.peak_position), comm, 3);
  f.write_distributed<std::int64_t>("/halos/n_clumps", span_of(halos.n_clumps), comm);
  f.write_attribute("/halos/mass", "units", grid.mass_units);
  f.write_attribute("/halos/peak_position", "units", grid.length_units);

  if (meta.with_particles) {
    f.write_distributed<std::int64_t>("/clumps/n_particles", span_of(clumps.n_particles), comm);
    f.write_distributed<double>("/clumps/particle_mass", span_of(clumps.particle_mass), comm);
    f.write_distributed<double>("/clumps/bulk_velocity", span_of(clumps.bulk_velocity), comm, 3);
    f.write_distributed<std::int64_t>("/halos/n_particles", span_of(halos.n_particles), comm);
    f.write_distributed<double>("/halos/particle_mass", span_of(halos.particle_mass), comm);
    f.write_distributed<double>("/halos/bulk_velocity", span_of(halos.bulk_velocity), comm, 3);
    f.write_attribute("/clumps/particle_mass", "units", grid.mass_units);
    f.write_attribute("/clumps/bulk_velocity", "units", meta.velocity_units);
    f.write_attribute("/halos/bulk_velocity", "units", meta.velocity_units);
  }

  f.create_group("/hierarchy");
  f.write_distributed<std::int64_t>("/hierarchy/clump", span_of(hierarchy.clump), comm);
  f.write_distributed<std::int64_t>("/hierarchy/into", span_of(hierarchy.into), comm);
  f.write_distributed<std::int64_t>("/hierarchy/level", span_of(hierarchy.level), comm);
  f.write_distributed<double>("/hierarchy/saddle_density", span_of(hierarchy.saddle_density), comm);
  f.write_attribute("/hierarchy", "description",
                    "saddle-threshold mergers: clump merged into `into` through a saddle of this level (PHEW Sec. 2.6)");
}

}  // namespace phew::io
