// patches.h5 (phew-segment): cell labels, the peak table and the saddle graph (docs/formats.md).
#pragma once

#include "grid/geometry.hpp"
#include "io/h5.hpp"
#include "mpi/slab.hpp"

#include <span>

namespace phew::io {

struct PeakTable {
  std::vector<std::int64_t> id, cell, n_cells;
  std::vector<double> position;  // [n][3]
  std::vector<double> density, mass;
};

struct SaddleTable {
  std::vector<std::int64_t> peak_a, peak_b, cell_a, cell_b;
  std::vector<double> density;
};

struct PatchesMeta {
  double threshold = 0;            // absolute, grid density units
  std::string threshold_text;      // as given: "80mean"
  std::uint64_t n_test_cells = 0;
  bool refined_positions = false;
};

// Writes /grid (attributes), /cells/peak (this rank's planes), /peaks and /saddles (this rank's rows,
// after the rows of lower ranks) and the segmentation attributes of /cells. Collective.
void write_patches(File& file, const GridMeta& grid, const mpi::SlabDecomposition& slabs,
                   std::span<const std::int64_t> labels, const PeakTable& peaks, const SaddleTable& saddles,
                   const PatchesMeta& meta, const mpi::Comm& comm);

}  // namespace phew::io
