// The rows of a merger tree (mergertree's result; tree.h5, lib/io/tree_file.hpp): every peak of every
// stage with its links, the stages, and the state the next on-the-fly run continues from. Rows are
// plain: lib/mergertree converts its tree to and from them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace phew::model {

// A peak of a stage and its links (/peaks), sorted by (snapshot, id). A snapshot of -1 means none.
struct TreePeakRow {
  std::int64_t snapshot = 0, id = 0;
  std::int64_t lineage = 0;
  std::int64_t main_progenitor_snapshot = -1, main_progenitor_id = 0;
  std::int64_t n_progenitors = 0, progenitor_votes = 0;
  std::int64_t descendant_snapshot = -1, descendant_id = 0;
  bool merged = false, revived_from_graveyard = false;
  std::int64_t gap = 0;
  bool artefact = false, from_deblending = false;
  double time = 0, mass = 0;
  std::array<double, 3> position{}, velocity{};
  // Read when present (trees from before 2026-11 lack them: 0).
  std::int64_t host = 0;  // central peak of its halo in the same snapshot; 0 = a central
  std::int64_t merged_before_revival_snapshot = -1, merged_before_revival_id = 0;  // -1, 0: none
  double mvir = 0, rvir = 0,
         m200c = 0;  // spherical overdensity (mergertree --particles); NaN = not measurable, 0 = not asked
  // unbind's properties of the peak's bound particles, for a stage given with its bound.h5 (then mvir,
  // rvir and m200c are bound.h5's too): as bound.h5 holds them (0 = not measurable there). Written only
  // by a tree with such a stage; read when present.
  bool bound = false;  // the stage had a bound.h5
  double bound_mass = 0, vmax = 0, vrms = 0, rs = 0, spin_peebles = 0, spin_bullock = 0, xoff = 0, b_to_a = 0,
         c_to_a = 0, virial_ratio = 0;
  double jx = 0, jy = 0, jz = 0;  // angular momentum of the bound particles, physical (bound.h5)
  // Per type of TreeStateMeta::bound_types (bound.h5's inclusive per-type mass, half-mass radius, 1-D
  // velocity dispersion, and aperture masses [aperture][type] of bound_apertures_kpc): NaN for a peak
  // whose stage had none. Written only by a tree with such stages; read when present.
  std::vector<double> bound_mass_type{}, bound_half_mass_radius_type{}, bound_velocity_dispersion_type{},
      bound_aperture_mass_type{};
};

// A stage of the tree (/snapshots).
struct TreeSnapshotRow {
  std::int64_t index = 0;
  double time = 0;
  double density_threshold = 0;  // of the stage's segmentation; read when present (0 = unknown)
};

// The last stage's peaks, membership and voters, and the graveyard (/state).
struct StatePeakRow {
  std::int64_t id = 0;
  std::int64_t from_deblending = 0;  // stored as int64, as it always was
  std::array<double, 3> position{}, velocity{};
  double mass = 0;
};
struct StateMemberRow {
  std::uint64_t particle = 0;
  std::int64_t peak = 0;
};
struct StateVoterRow {
  std::int64_t peak = 0;
  std::uint64_t particle = 0;
};
struct GraveRow {
  std::uint64_t particle = 0;  // a voter of a dead peak
  std::int64_t peak_snapshot = 0, peak_id = 0;
  std::int64_t died = 0;  // snapshot index of the peak's last appearance
};
struct ArtefactRow {
  std::int64_t id = 0;  // an artefact of the last stage (it does not vote)
};

struct TreeStateMeta {
  std::int64_t next_lineage = 1;
  std::int64_t min_votes = 0, graveyard_votes = 0, graveyard_max_age = 0;
  std::uint64_t n_particles = 0;
  std::array<double, 3> box_size{};
  std::string length_units;
  std::int64_t last_snapshot = -1;
  double last_time = 0;
  std::int64_t last_voters_per_peak = 0;  // N_v of the last stage (0: unknown, trees from before 2026-11-28)
  // The simulation's units and cosmology, for the exports (from the stages' snapshot headers; trees
  // from before 2026-11 lack them: units_known 0).
  std::int64_t units_known = 0, h_scaled = 0, comoving = 0;
  double length_cm = 0, mass_g = 0, velocity_cm_per_s = 0;
  double omega_m = 0, omega_lambda = 0, hubble_param = 0;
  std::vector<std::string> bound_types{};     // the types of TreePeakRow's per-type columns; empty: none
  std::vector<double> bound_apertures_kpc{};  // the apertures of its aperture masses, physical kpc
};

// Everything tree.h5 holds, as plain rows: lib/mergertree converts its tree to and from them.
struct TreeRows {
  std::vector<TreePeakRow> peaks;
  std::vector<TreeSnapshotRow> snapshots;
  TreeStateMeta state;
  std::vector<StatePeakRow> last_peaks;
  std::vector<StateMemberRow> last_members;  // sorted by particle ID
  std::vector<StateVoterRow> last_voters;    // by peak, most bound first
  std::vector<GraveRow> graveyard;           // sorted by particle ID
  std::vector<ArtefactRow> artefacts;
};

}  // namespace phew::model
