// clumps.h5 (phew-merge): peaks with their relevance and clump, the clump and halo catalogues, the
// merger hierarchy and the clump/halo label grids (docs/formats.md). Tables are written distributed:
// each rank passes its rows, which follow the rows of lower ranks.
#pragma once

#include "grid/geometry.hpp"
#include "io/h5.hpp"
#include "mpi/slab.hpp"

#include <optional>
#include <span>

namespace phew::io {

struct PeakMergeRows {
  std::vector<std::int64_t> id, key_neighbour, clump;
  std::vector<double> relevance, key_saddle;
};

struct ClumpRows {
  std::vector<std::int64_t> id, level, parent, halo, n_cells;
  std::vector<double> mass, peak_position, peak_density, saddle_density, mean_density, relevance, center_of_mass;
  // With --particles:
  std::vector<std::int64_t> n_particles;
  std::vector<double> particle_mass, bulk_velocity;
};

struct HaloRows {
  std::vector<std::int64_t> id, n_cells, n_clumps;
  std::vector<double> mass, peak_position;
  std::vector<std::int64_t> n_particles;
  std::vector<double> particle_mass, bulk_velocity;
};

struct HierarchyRows {
  std::vector<std::int64_t> clump, into, level;
  std::vector<double> saddle_density;
};

struct ClumpsMeta {
  double density_threshold = 0;  // from phew-segment
  double relevance = 0;
  std::optional<double> saddle_threshold;  // absolute
  std::string saddle_threshold_text;
  std::optional<double> second_relevance;
  std::optional<double> mass_threshold;  // absolute
  std::string mass_threshold_text;
  bool with_particles = false;
  std::string velocity_units;
};

void write_clumps(File& file, const GridMeta& grid, const mpi::SlabDecomposition& slabs,
                  std::span<const std::int64_t> cell_clump, std::span<const std::int64_t> cell_halo,
                  const PeakMergeRows& peaks, const ClumpRows& clumps, const HaloRows& halos,
                  const HierarchyRows& hierarchy, const ClumpsMeta& meta, const mpi::Comm& comm);

}  // namespace phew::io
