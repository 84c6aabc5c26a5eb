// phew-merge's stage: from the peak patches and their saddles to the clump and halo catalogue (PHEW
// Sec. 2.4-2.7, 3.2-3.6): noise removal by relevance, the saddle hierarchy, the clump and halo of every
// cell, per-clump sums, and (with particles) particle masses and bulk velocities.
#pragma once

#include <phew/core/timer.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/io/patches_file.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/particle_set.hpp>

#include <functional>
#include <optional>

namespace phew::watershed {

// phew-merge's defaults, for the common case of dark-matter particles: the values RAMSES' own PHEW
// documentation gives for dark-matter-only runs (docs/thresholds.md#defaults). Written here only; the
// tool's options, the workflow schema and the docs show them (tests/cli/defaults.bats checks they agree).
inline constexpr double kDefaultRelevance = 3;
inline constexpr const char* kDefaultSaddleThreshold = "200mean";

struct CatalogueParams {
  double relevance = kDefaultRelevance;    // noise removal: peaks with peak/key saddle below it merge
  std::optional<double> saddle_threshold;  // absolute; merge clumps whose key saddle is above it
  std::string saddle_threshold_text;
  std::optional<double> second_relevance;  // or: merge again with this higher relevance
  std::optional<double> mass_threshold;    // absolute; the catalogue lists only clumps and haloes this massive
  std::string mass_threshold_text;
  unsigned shuffle_seed = 0;               // test hook: shuffles the local merging order (must not matter)
};

// What the stage reads: patches.h5 and the grid it was made from (both open on every rank), and, when
// `particles` is given, this rank's share of the snapshot (positions, masses, velocities), read when
// the stage needs it (collective).
struct CatalogueInput {
  const io::File& patches;
  const io::File& grid;
  std::function<particles::ParticleSet()> particles;
  // Of the particles' velocities, as the snapshot names them (Units::peculiar_velocity_name: the readers
  // convert to peculiar); set with `particles`, unused without.
  std::string velocity_units = "";
};

// Counts for the log and the manifest.
struct CatalogueSummary {
  std::int64_t n_peaks = 0;
  std::uint64_t n_clumps = 0, n_halos = 0;
  int noise_levels = 0, hierarchy_levels = 0;
  std::vector<int> noise_rounds, hierarchy_rounds;
  double mass_above_threshold = 0, mass_discarded = 0;
};

// Phases: graph, noise, hierarchy, cells, particles (when given), catalogue. Collective.
io::Clumps build_catalogue(const CatalogueInput& in, const CatalogueParams& params, const mpi::Comm& comm,
                           CatalogueSummary& summary, const core::PhaseReport& phase = {});

}  // namespace phew::watershed
