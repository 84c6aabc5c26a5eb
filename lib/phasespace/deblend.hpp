// deblend's stage (Geda & Teyssier 2025, Sec. 3.2-3.3): the particles of every level-0 clump's patch
// gathered on one rank, their velocities split (velocity_split.hpp), and the peaks of peaks.h5 with
// every patch particle's peak.
#pragma once

#include <phew/core/timer.hpp>
#include <phew/grid/cell_labels.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/model/peaks.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/particle_set.hpp>

#include <array>
#include <map>
#include <span>
#include <vector>

namespace phew::phasespace {

struct DeblendParams {
  double bin_fraction = 0.25;       // velocity bin size in units of the patch's escape velocity
  std::int64_t min_particles = 20;  // fewer: the patch is not split, a velocity peak is not kept
  bool split = true;                // false (deblend --off): every patch is one peak, as phew-merge made it
  double velocity_relevance = 3;    // noise removal in velocity space, > 1
  double G = 0;                     // the gravitational constant in the snapshot's units
  double scale_factor = 1;          // a of a comoving snapshot (comoving distances x a), else 1
  int threads = 1;                  // patches split side by side; the same peaks for any number
};

// Where the stage reads the clumps' peak positions, only those it needs, so that no rank holds the
// whole catalogue: deblend reads them from clumps.h5 (tools/deblend/clump_peak_file.hpp), a test holds
// them in memory. Called once per rank, inside an agreement on errors.
class ClumpPeakSource {
 public:
  virtual ~ClumpPeakSource() = default;
  // The peak positions of the clumps among `ids` (sorted) that are in the catalogue.
  virtual std::map<std::int64_t, std::array<double, 3>> peak_positions(const std::vector<std::int64_t>& ids) const = 0;
};

struct Deblended {
  std::vector<model::PeakRow> peaks;         // this rank's rows, after the lower ranks' (sorted by ID)
  std::vector<model::PeakMember> particles;  // this rank's rows, after the lower ranks' (sorted by particle ID)
  // Totals over the ranks:
  std::int64_t n_peaks = 0, n_particles = 0;
  std::int64_t n_split = 0;    // patches split into several peaks
  std::int64_t n_new = 0;      // peaks found only in velocity space
  std::int64_t n_skipped = 0;  // patches whose clump is not in the catalogue (phew-merge --mass-threshold)
};

// Deblends the patches of the level-0 clumps of a mesh (`space`: a uniform grid, or an octree whose test
// cells are leaves): `clumps` are the test cells of this rank's run of cells (`cuts`, from
// space.rank_cuts) with their level-0 clump, `particles` this rank's share of the
// snapshot (ids, velocities, masses), `n_clump_peaks` the number of peaks of the segmentation (new IDs
// are numbered above it). The primary velocity peak of a patch keeps its clump's ID; the others get new
// IDs by (clump ID, velocity peak), so nothing depends on the rank count. Collective.
// Phases: members, deblend.
Deblended deblend_patches(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts,
                          const particles::ParticleSet& particles, const grid::CellLabels& clumps,
                          std::int64_t n_clump_peaks, const ClumpPeakSource& catalogue, const DeblendParams& params,
                          const mpi::Comm& comm, const core::PhaseReport& phase = {});

}  // namespace phew::phasespace
