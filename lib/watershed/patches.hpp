// phew-segment's stage: the peak patches of a density grid, their peaks and the saddles between them
// (PHEW Sec. 2.2-2.3, 3.1), as the rows of patches.h5.
#pragma once

#include <phew/core/timer.hpp>
#include <phew/model/amr.hpp>
#include <phew/mesh/field.hpp>
#include <phew/model/patches.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/blocks.hpp>
#include <phew/mpi/slab.hpp>

#include <vector>

namespace phew::watershed {

struct SegmentParams {
  double threshold = 0;           // absolute density; cells strictly above it are test cells
  std::string threshold_text;     // as given ("80mean"), recorded in the file
  bool refine_positions = false;  // quadratic fit of the 3x3x3 neighbourhood of each peak cell
  int threads = 1;                // for the neighbour searches; the result is the same for any number
};

struct Segmented {
  model::Patches patches;  // this rank's labels and rows (write them with io::write_patches)
  int label_rounds = 0;    // ghost label exchange rounds (provenance: it depends on the decomposition)
  double densest = 0;      // the densest cell of the whole mesh (for the warning on an empty result)
};

// Segments this rank's block of `grid` (`blocks.box(rank)`): `density` holds its cells in C order
// (io::read_grid_box); the ghosts come from the ranks around (mesh::BlockMesh). Peaks and saddles are
// rows owned by blocks of peak IDs, so each rank's rows follow the lower ranks'; the test cells come
// back sorted, each rank holding an equal share of the range of global indices (the ranks' cells in
// rank order are /cells/index, as io::write_patches writes them). Collective. Phases: watershed, saddles, peaks.
Segmented segment_patches(const grid::GridMeta& grid, const mpi::BlockDecomposition& blocks,
                          core::RawVector<double> density, const SegmentParams& params, const mpi::Comm& comm,
                          const core::PhaseReport& phase = {});
// The same with a float32 grid's densities as stored (half the memory; the same rows).
Segmented segment_patches(const grid::GridMeta& grid, const mpi::BlockDecomposition& blocks,
                          core::RawVector<float> density, const SegmentParams& params, const mpi::Comm& comm,
                          const core::PhaseReport& phase = {});

// The same on an adaptive mesh (cic-project --refine): this rank's leaves above the threshold (keys and
// densities, in key order, of its run of whole coarse cells, mesh::CellSpace::rank_cuts), as
// tool::read_field reads them (mesh::LeafField), their neighbours found across levels (mesh::OctreeMesh). Cell sums use
// each leaf's own volume; peaks sit at their leaf's centre. Error(usage) for --refine-positions.
// Collective.
Segmented segment_octree_patches(const grid::GridMeta& grid, mesh::LeafField leaves, const SegmentParams& params,
                                 const mpi::Comm& comm, const core::PhaseReport& phase = {});

// The one entry for either mesh (mesh::Field, as tool::read_field reads it): segment_patches on the
// uniform grid, segment_octree_patches on the adaptive mesh. Collective.
Segmented segment_field(const grid::GridMeta& grid, mesh::Field field, const SegmentParams& params,
                        const mpi::Comm& comm, const core::PhaseReport& phase = {});

}  // namespace phew::watershed
