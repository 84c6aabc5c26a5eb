// phew-merge's stage: from the peak patches and their saddles to the clump and halo catalogue (PHEW
// Sec. 2.4-2.7, 3.2-3.6): noise removal by relevance, the saddle hierarchy, the clump and halo of every
// cell, per-clump sums, and (with particles) particle masses and bulk velocities.
#pragma once

#include <phew/core/timer.hpp>
#include <phew/grid/cell_labels.hpp>
#include <phew/model/clumps.hpp>
#include <phew/model/patches.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/particle_set.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace phew::watershed {

// phew-merge's defaults, for the common case of dark-matter particles: the values RAMSES' own PHEW
// documentation gives for dark-matter-only runs (docs/thresholds.md#defaults). Written here only; the
// tool's options, the workflow schema and the docs show them (tests/cli/defaults.bats checks they agree).
inline constexpr double kDefaultRelevance = 3;
inline constexpr const char* kDefaultSaddleThreshold = "200mean";
// The noise floor: RAMSES' mass_threshold for its clumps and merger trees (10 particles in its merger-tree
// runs), applied in the noise removal (docs/thresholds.md#noise-and-the-merger-tree).
inline constexpr const char* kDefaultNoiseFloor = "10particles";

struct CatalogueParams {
  double relevance = kDefaultRelevance;    // noise removal: peaks with peak/key saddle below it merge
  std::optional<double> saddle_threshold;  // absolute; merge clumps whose key saddle is above it
  std::string saddle_threshold_text;
  std::optional<double> second_relevance;  // or: merge again with this higher relevance
  std::optional<double> mass_threshold;    // absolute; the catalogue lists only clumps and haloes this massive
  std::string mass_threshold_text;
  // Absolute; noise removal: a peak lighter than this (with what merged into it) is noise however dense
  // its peak, and merges through its key saddle as an irrelevant one does (watershed::Criterion::min_mass).
  std::optional<double> noise_floor;
  std::string noise_floor_text;
  unsigned shuffle_seed = 0;  // test hook: shuffles the local merging order (must not matter)
  // Of the particles' velocities, as the snapshot names them (Units::peculiar_velocity_name: the readers
  // convert to peculiar); set with particles, unused without.
  std::string velocity_units;
  int threads = 1;  // for the particles' cells; the catalogue is the same for any number
};

// What the stage reads, a part at a time so that no rank holds the whole segmentation: the segmentation
// (patches.h5's rows), the density of its test cells (from the grid it was made from) and, when there are
// particles, this rank's share of the snapshot (positions, masses, velocities). phew-merge reads them
// from the files (tools/phew-merge/catalogue_files.hpp); a test may hold them in memory. Every rank
// calls each function, inside an agreement on errors (mpi::agree): a throw on one rank fails all.
class CatalogueSource {
 public:
  virtual ~CatalogueSource() = default;
  virtual std::string name() const = 0;  // what to call the segmentation in messages (its path)
  virtual model::PatchesHeader header() const = 0;
  // Rows [begin, begin + count) of the peak and saddle tables.
  virtual std::vector<model::PatchPeak> peaks(std::uint64_t begin, std::uint64_t count) const = 0;
  virtual std::vector<model::SaddleRow> saddles(std::uint64_t begin, std::uint64_t count) const = 0;
  // Where each rank's cells begin as global indices (mesh::CellSpace): cut[r] for rank r, cut[ranks]
  // past the last. Whole pencils of a uniform grid balanced by test cells, whole coarse cells of an
  // adaptive mesh balanced by leaves (mesh::CellSpace::rank_cuts). The same on every rank.
  virtual std::vector<std::int64_t> cell_cuts(int ranks) const = 0;
  // The test cells with global indices in [begin, end) with their peak IDs, and the density at some of
  // them (as the patches hold it, or for older patches the grid's).
  virtual grid::CellLabels cells(std::int64_t begin, std::int64_t end) const = 0;
  virtual std::vector<double> densities(std::span<const std::int64_t> cells) const = 0;
  // Whether there are particles, and this rank's share of them (collective; read when the stage needs it).
  virtual bool has_particles() const = 0;
  virtual particles::ParticleSet particles() const = 0;
};

// Counts for the log and the manifest.
struct CatalogueSummary {
  std::int64_t n_peaks = 0;
  std::uint64_t n_clumps = 0, n_halos = 0;
  int noise_levels = 0, hierarchy_levels = 0;
  std::vector<int> noise_rounds, hierarchy_rounds;
  double mass_above_threshold = 0, mass_discarded = 0;
  std::int64_t n_below_noise_floor = 0;  // peaks that were noise by their mass alone
};

struct Catalogue {
  model::Clumps clumps;  // this rank's rows and cells (write them with io::write_clumps)
  CatalogueSummary summary;
};

// Phases: graph, noise, hierarchy, cells, particles (when given), catalogue. Collective.
Catalogue build_catalogue(const CatalogueSource& source, const CatalogueParams& params, const mpi::Comm& comm,
                          const core::PhaseReport& phase = {});

}  // namespace phew::watershed
