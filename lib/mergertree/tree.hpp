// Merger trees of density peaks by voting (Geda & Teyssier 2025, Sec. 4.1, 4.5-4.6, Appendix A).
// Pure algorithm on in-memory snapshots ("stages"); stages.hpp makes them from the rows lib/io reads and
// turns the tree into the rows of tree.h5.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace phew::mergertree {

// A peak of a snapshot: (snapshot index, peak ID). snapshot -1 = none.
struct PeakKey {
  std::int64_t snap = -1, id = 0;
  auto operator<=>(const PeakKey&) const = default;
  bool none() const { return snap < 0; }
};

// unbind's properties of a peak's bound particles (bound.h5's /objects row of the peak), in the snapshot's
// units as bound.h5 holds them: lengths comoving, velocities physical; NaN where unbind could not measure.
struct BoundProperties {
  bool given = false;  // the peak's stage came with a bound.h5
  double mass = 0;     // bound mass, with bound sub-objects (mass_inclusive)
  double vmax = 0, vrms = 0, rs = 0, spin_peebles = 0, spin_bullock = 0, xoff = 0, b_to_a = 0, c_to_a = 0;
  double virial_ratio = 0;                   // T/|U|
  std::array<double, 3> angular_momentum{};  // physical: mass x length x velocity units
  // Per type of the stage's bound_types, inclusive of bound sub-objects (bound.h5's mass_inclusive_type,
  // half_mass_radius_inclusive_type (comoving), velocity_dispersion_inclusive_type, and
  // aperture_mass_inclusive_type [aperture][type] of its bound_apertures_kpc): empty when its bound.h5 has
  // no per-type columns.
  std::vector<double> mass_type{}, half_mass_radius_type{}, velocity_dispersion_type{}, aperture_mass_type{};
};

// The halo a peak sits in and its spherical-overdensity size, carried into the tree for the exports.
struct PeakHalo {
  std::int64_t host = 0;  // ID of the central peak of its halo in the same snapshot; 0: it is a central (or unknown)
  // mergertree --particles (NaN: not measurable there; 0: not asked for), or bound.h5's when bound.given
  // (0: not measurable).
  double mvir = 0, rvir = 0, m200c = 0;
  BoundProperties bound;
};

struct StagePeak {
  std::int64_t id = 0;
  bool from_deblending = false;
  std::array<double, 3> position{}, velocity{};
  double mass = 0;
  PeakHalo halo;
};

// One snapshot's peaks, particle membership (sorted by particle ID) and voters (most bound first).
struct Stage {
  std::int64_t snap = 0;
  double time = 0;
  double density_threshold = 0;  // of the segmentation, comoving grid density units; 0 = unknown
  std::vector<StagePeak> peaks;  // sorted by ID
  std::vector<std::uint64_t> member_id;
  std::vector<std::int64_t> member_peak;
  std::map<std::int64_t, std::vector<std::uint64_t>> voters;
  // N_v: the voters asked of each peak (voters' --n-voters, unbind's --most-bound); 0 when unknown, then
  // the most any peak of the stage has. A peak with fewer voters needs a share of its own (TreeParams).
  std::int64_t voters_per_peak = 0;
  // The types of its peaks' per-type bound properties (bound.h5's attribute types); empty: none.
  std::vector<std::string> bound_types;
  std::vector<double> bound_apertures_kpc;  // their apertures (bound.h5's apertures_kpc)

  // The peak a particle belongs to in this snapshot, 0 for none.
  std::int64_t peak_of(std::uint64_t particle) const;
  // peak_of() of each particle, all at once: the particles in ID order walk member_id once (one by one,
  // each is a binary search with a cache miss a level: most of the linking time at 10^7 members).
  std::vector<std::int64_t> peaks_of(const std::vector<std::uint64_t>& particles) const;
};

// Votes are counted of N_v voters (Geda & Teyssier Sec. 5: 15 and 10 of 20). A peak with n < N_v voters
// (fewer candidates within its search radius) needs the same share of its own, ceil(votes n / N_v), at
// least one: the threshold is a guard against noisy votes (Sec. 4.6, step 3a), not a size cut, and a
// fixed count no peak with few voters can reach would end every such lineage.
struct TreeParams {
  std::int64_t min_votes = 15;
  std::int64_t graveyard_votes = 10;
  std::int64_t graveyard_max_age = 10;  // snapshots; older graveyard entries are dropped
};

struct TreeRow {
  PeakKey peak;
  std::int64_t lineage = 0;
  PeakKey main_progenitor;  // none for a new, revived-from-nothing or artefact peak
  std::int64_t n_progenitors = 0;
  std::int64_t progenitor_votes = 0;  // votes the main progenitor cast for this peak
  PeakKey descendant;                 // the peak this one's lineage (or merger) continues into
  bool merged = false;                // it merged into `descendant` (not its main progenitor)
  bool revived = false;               // linked to its main progenitor through the graveyard
  // A peak recorded as merged that a later peak revives from the graveyard did not merge (it was confused
  // with the other peak for a while): merged is cleared, its descendant becomes the reviving peak, and
  // the peak it had merged into is kept here. none otherwise.
  PeakKey merged_before_revival;
  std::int64_t gap = 0;  // snapshots between this peak and its revived progenitor
  bool artefact = false;
  bool from_deblending = false;
  std::array<double, 3> position{}, velocity{};
  double mass = 0;
  double time = 0;
  PeakHalo halo;
};

struct Grave {
  PeakKey peak;
  std::int64_t died = 0;  // snapshot index of its last appearance
};

// The whole tree so far and what the next snapshot needs.
struct TreeState {
  std::vector<TreeRow> rows;  // every peak of every snapshot, by (snapshot, ID)
  Stage last;                 // the previous snapshot (membership, voters, peaks)
  bool has_last = false;
  std::map<std::uint64_t, Grave> graveyard;  // particle ID -> the dead peak it voted for
  std::int64_t next_lineage = 1;
  std::vector<std::int64_t> artefact_ids;  // artefacts of the previous snapshot (they do not vote)

  // The row of peak `k` (rows are sorted by key: a binary search), or -1 when the tree has none.
  std::ptrdiff_t row_index(const PeakKey& k) const;
  // The row of a peak another row links to (its descendant, main progenitor): an internal error when
  // the tree has no such row.
  std::size_t linked_row(const PeakKey& k) const;
};

// The votes a peak with `voters` voters needs when `required` of `per_peak` are asked (TreeParams).
std::int64_t votes_needed(std::int64_t required, std::size_t voters, std::int64_t per_peak);

// How many of a stage's peaks have the voters to reach `min_votes` with all of them, and the median
// number of voters (peaks without any count 0). A stage where fewer than half do links on few votes, and
// its peaks without voters can only start lineages (mergertree warns).
struct VoterCoverage {
  std::int64_t peaks = 0, with_min_votes = 0, median_voters = 0;
  bool few() const { return peaks > 0 && 2 * with_min_votes < peaks; }
};
VoterCoverage voter_coverage(const Stage& stage, std::int64_t min_votes);

// Links a new snapshot to the tree (steps 1-6 of Sec. 4.6). The new stage becomes state.last.
void add_stage(TreeState& state, Stage stage, const TreeParams& params);

}  // namespace phew::mergertree
