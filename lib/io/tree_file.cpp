#include <phew/io/tree_file.hpp>

#include <phew/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <set>

namespace phew::io {

// The rows this file maps (lib/model).
using model::ArtefactRow;
using model::GraveRow;
using model::StateMemberRow;
using model::StatePeakRow;
using model::StateVoterRow;
using model::TreePeakRow;
using model::TreeRows;
using model::TreeSnapshotRow;
using model::TreeStateMeta;

const Table<StatePeakRow>& state_peak_table() {
  // clang-format off: one column and its constraints per line
  static const Table<StatePeakRow> t = Table<StatePeakRow>()
                                           .column("peak_id", &StatePeakRow::id)
                                           .above(0)
                                           .unique()
                                           .column("peak_from_deblending", &StatePeakRow::from_deblending)
                                           .at_least(0)
                                           .at_most(1)
                                           .column("peak_position", &StatePeakRow::position)
                                           .finite()
                                           .column("peak_velocity", &StatePeakRow::velocity)
                                           .finite()
                                           .column("peak_mass", &StatePeakRow::mass)
                                           .finite()
                                           .at_least(0);
  // clang-format on
  return t;
}
const Table<StateMemberRow>& state_member_table() {
  static const Table<StateMemberRow> t =
      // clang-format off: one column and its constraints per line
      Table<StateMemberRow>()
          .column("member_id", &StateMemberRow::particle)
          .ascending()
          .column("member_peak", &StateMemberRow::peak)
          .refers_to("/state/peak_id");
  // clang-format on
  return t;
}
const Table<StateVoterRow>& state_voter_table() {
  static const Table<StateVoterRow> t =
      // clang-format off: one column and its constraints per line
      Table<StateVoterRow>()
          .column("voter_peak", &StateVoterRow::peak)
          .refers_to("/state/peak_id")
          .column("voter_particle", &StateVoterRow::particle);
  // clang-format on
  return t;
}
const Table<GraveRow>& grave_table() {
  // clang-format off: one column and its constraints per line
  static const Table<GraveRow> t = Table<GraveRow>()
                                       .column("graveyard_particle", &GraveRow::particle)
                                       .ascending()
                                       .column("graveyard_peak_snapshot", &GraveRow::peak_snapshot)
                                       .at_least(0)
                                       .column("graveyard_peak_id", &GraveRow::peak_id)
                                       .above(0)
                                       .column("graveyard_died", &GraveRow::died)
                                       .at_least(0);
  // clang-format on
  return t;
}
const Table<ArtefactRow>& artefact_table() {
  static const Table<ArtefactRow> t =
      Table<ArtefactRow>().column("artefact_ids", &ArtefactRow::id).refers_to("/state/peak_id");
  return t;
}

namespace {

// Rank 0's state attributes, on every rank (attributes are written collectively with the same values).
TreeStateMeta shared(TreeStateMeta m, const mpi::Comm& comm) {
  std::string units = m.length_units;
  comm.broadcast(m.next_lineage);
  comm.broadcast(m.min_votes);
  comm.broadcast(m.graveyard_votes);
  comm.broadcast(m.graveyard_max_age);
  comm.broadcast(m.n_particles);
  comm.broadcast(m.box_size);
  comm.broadcast(m.last_snapshot);
  comm.broadcast(m.last_time);
  comm.broadcast(m.last_voters_per_peak);
  for (std::int64_t* v : {&m.units_known, &m.h_scaled, &m.comoving}) comm.broadcast(*v);
  for (double* v : {&m.length_cm, &m.mass_g, &m.velocity_cm_per_s, &m.omega_m, &m.omega_lambda, &m.hubble_param})
    comm.broadcast(*v);
  comm.broadcast(units);
  m.length_units = units;
  auto n_types = static_cast<std::int64_t>(m.bound_types.size());
  comm.broadcast(n_types);
  m.bound_types.resize(static_cast<std::size_t>(n_types));
  for (std::string& t : m.bound_types) comm.broadcast(t);
  auto n_apertures = static_cast<std::int64_t>(m.bound_apertures_kpc.size());
  comm.broadcast(n_apertures);
  m.bound_apertures_kpc.resize(static_cast<std::size_t>(n_apertures));
  for (double& r : m.bound_apertures_kpc) comm.broadcast(r);
  return m;
}

}  // namespace

const Table<TreePeakRow>& tree_peak_table() {
  // clang-format off: one column and its constraints per line
  static const Table<TreePeakRow> t =
      Table<TreePeakRow>()
          .column("snapshot", &TreePeakRow::snapshot)
          .at_least(0)
          .non_decreasing()
          .column("id", &TreePeakRow::id)
          .above(0)
          .column("lineage", &TreePeakRow::lineage)
          .above(0)
          .column("main_progenitor_snapshot", &TreePeakRow::main_progenitor_snapshot)
          .at_least(-1)
          .column("main_progenitor_id", &TreePeakRow::main_progenitor_id)
          .column("n_progenitors", &TreePeakRow::n_progenitors)
          .at_least(0)
          .column("progenitor_votes", &TreePeakRow::progenitor_votes)
          .at_least(0)
          .column("descendant_snapshot", &TreePeakRow::descendant_snapshot)
          .at_least(-1)
          .column("descendant_id", &TreePeakRow::descendant_id)
          .column("merged", &TreePeakRow::merged)
          .at_least(0)
          .at_most(1)
          .column("revived_from_graveyard", &TreePeakRow::revived_from_graveyard)
          .at_least(0)
          .at_most(1)
          .column("gap", &TreePeakRow::gap)
          .at_least(0)
          .column("artefact", &TreePeakRow::artefact)
          .at_least(0)
          .at_most(1)
          .column("from_deblending", &TreePeakRow::from_deblending)
          .at_least(0)
          .at_most(1)
          .column("time", &TreePeakRow::time)
          .finite()
          .column("mass", &TreePeakRow::mass)
          .finite()
          .at_least(0)
          .column("position", &TreePeakRow::position)
          .finite()
          .column("velocity", &TreePeakRow::velocity)
          .finite()
          .column("host", &TreePeakRow::host, Unit::none, "", true)
          .column("merged_before_revival_snapshot", &TreePeakRow::merged_before_revival_snapshot, Unit::none, "", true)
          .column("merged_before_revival_id", &TreePeakRow::merged_before_revival_id, Unit::none, "", true)
          .column("mvir", &TreePeakRow::mvir, Unit::none, "", true)
          .measured()
          .at_least(0)
          .column("rvir", &TreePeakRow::rvir, Unit::none, "", true)
          .measured()
          .at_least(0)
          .column("m200c", &TreePeakRow::m200c, Unit::none, "", true)
          .measured()
          .at_least(0)
          .column("bound", &TreePeakRow::bound, Unit::none,
                  "1: the stage came with unbind's bound.h5, which gave mvir, rvir, "
                  "m200c and the columns below (NaN in them = not measurable there)",
                  true)
          .column("bound_mass", &TreePeakRow::bound_mass, Unit::none,
                  "bound mass with bound sub-objects (mass_inclusive), snapshot mass units", true)
          .column("vmax", &TreePeakRow::vmax, Unit::none, "physical, snapshot velocity units", true)
          .column("vrms", &TreePeakRow::vrms, Unit::none, "physical, snapshot velocity units", true)
          .column("rs", &TreePeakRow::rs, Unit::none,
                  "NFW scale radius of a profile fit (rs_fit), comoving snapshot length units", true)
          .column("spin_peebles", &TreePeakRow::spin_peebles, Unit::none, "", true)
          .column("spin_bullock", &TreePeakRow::spin_bullock, Unit::none, "", true)
          .column("xoff", &TreePeakRow::xoff, Unit::none,
                  "offset of the centre from the centre of mass, comoving snapshot length units", true)
          .column("b_to_a", &TreePeakRow::b_to_a, Unit::none, "", true)
          .column("c_to_a", &TreePeakRow::c_to_a, Unit::none, "", true)
          .column("virial_ratio", &TreePeakRow::virial_ratio, Unit::none, "T/|U|", true)
          .column("jx", &TreePeakRow::jx, Unit::none,
                  "angular momentum of the bound particles, physical (bound.h5 units)", true)
          .column("jy", &TreePeakRow::jy, Unit::none, "", true)
          .column("jz", &TreePeakRow::jz, Unit::none, "", true)
          .column("bound_mass_type", &TreePeakRow::bound_mass_type, Unit::none,
                  "[n][types]: bound mass of each type with bound sub-objects (mass_inclusive_type), snapshot mass "
                  "units; the types in the attribute bound_types of /peaks; NaN: the stage had none",
                  true)
          .measured()
          .at_least(0)
          .column("bound_half_mass_radius_type", &TreePeakRow::bound_half_mass_radius_type, Unit::none,
                  "[n][types]: half-mass radius of each type's bound particles (half_mass_radius_inclusive_type), "
                  "comoving snapshot length units",
                  true)
          .measured()
          .at_least(0)
          .column("bound_velocity_dispersion_type", &TreePeakRow::bound_velocity_dispersion_type, Unit::none,
                  "[n][types]: 1-D velocity dispersion of each type's bound particles "
                  "(velocity_dispersion_inclusive_type), physical snapshot velocity units",
                  true)
          .measured()
          .at_least(0)
          .column("bound_aperture_mass_type", &TreePeakRow::bound_aperture_mass_type, Unit::none,
                  "[n][apertures][types]: each type's bound mass within each aperture (aperture_mass_inclusive_type; "
                  "the attribute bound_apertures_kpc of /peaks)",
                  true)
          .measured()
          .at_least(0);
  // clang-format on
  return t;
}

const Table<TreeSnapshotRow>& tree_snapshot_table() {
  static const Table<TreeSnapshotRow> t =
      // clang-format off: one column and its constraints per line
      Table<TreeSnapshotRow>()
          .column("index", &TreeSnapshotRow::index)
          .at_least(0)
          .ascending()
          .column("time", &TreeSnapshotRow::time)
          .finite()
          .column("density_threshold", &TreeSnapshotRow::density_threshold, Unit::none, "", true)
          .finite()
          .at_least(0);
  // clang-format on
  return t;
}

void write_tree(File& f, const TreeRows& t, const mpi::Comm& comm) {
  // Only rank 0's rows: a table's rows are the concatenation of every rank's.
  auto mine = [&](const auto& rows) { return comm.root() ? rows : std::decay_t<decltype(rows)>{}; };
  const UnitNames none;
  std::set<std::string> optional = {
      "host", "mvir", "rvir", "m200c", "merged_before_revival_snapshot", "merged_before_revival_id"};
  // unbind's columns only in a tree with a stage that had a bound.h5 (rank 0 holds the rows).
  std::int64_t bound =
      std::any_of(t.peaks.begin(), t.peaks.end(), [](const TreePeakRow& p) { return p.bound; }) ? 1 : 0;
  comm.broadcast(bound);
  if (bound != 0)
    optional.insert({"bound", "bound_mass", "vmax", "vrms", "rs", "spin_peebles", "spin_bullock", "xoff", "b_to_a",
                     "c_to_a", "virial_ratio", "jx", "jy", "jz"});
  // The per-type columns when a stage had them: [n][types], the types named on /peaks.
  const TreeStateMeta types = shared(t.state, comm);
  RowShapes shapes;
  if (!types.bound_types.empty()) {
    for (const char* name : {"bound_mass_type", "bound_half_mass_radius_type", "bound_velocity_dispersion_type"}) {
      optional.insert(name);
      shapes[name] = {types.bound_types.size()};
    }
    if (!types.bound_apertures_kpc.empty()) {
      optional.insert("bound_aperture_mass_type");
      shapes["bound_aperture_mass_type"] = {types.bound_apertures_kpc.size(), types.bound_types.size()};
    }
  }
  tree_peak_table().write(f, "/peaks", mine(t.peaks), none, comm, optional, shapes);
  if (!types.bound_types.empty()) f.write_attribute("/peaks", "bound_types", types.bound_types);
  if (!types.bound_apertures_kpc.empty())
    f.write_attribute<double>("/peaks", "bound_apertures_kpc", std::span<const double>(types.bound_apertures_kpc));
  f.write_attribute("/peaks/merged_before_revival_id", "description",
                    "a peak revived from the graveyard after it was recorded as merged: the peak it had merged into");
  f.write_attribute("/peaks/host", "description",
                    "ID of the central peak of the peak's halo in the same snapshot; 0 = a central");
  f.write_attribute("/peaks/mvir", "description",
                    "virial mass (Bryan & Norman 1998), snapshot mass units; NaN = not measurable, 0 = no --particles");
  f.write_attribute("/peaks/rvir", "description",
                    "virial radius, comoving snapshot length units; NaN = not measurable, 0 = no --particles");
  f.write_attribute("/peaks/m200c", "description",
                    "mass within the outermost radius of mean density 200 rho_crit(z); NaN = not measurable, 0 = no "
                    "--particles");
  f.write_attribute("/peaks/velocity", "description", "peculiar velocity (physical), snapshot velocity units");
  // The stages' paths are provenance (the manifest lists them with their fingerprints), not data.
  tree_snapshot_table().write(f, "/snapshots", mine(t.snapshots), none, comm, {"density_threshold"});

  // What the next --add needs: the last snapshot, the graveyard, the counters and parameters.
  const TreeStateMeta m = shared(t.state, comm);
  f.create_group("/state");
  const std::string s = "/state";
  f.write_attribute<std::int64_t>(s, "next_lineage", m.next_lineage);
  f.write_attribute<std::int64_t>(s, "min_votes", m.min_votes);
  f.write_attribute<std::int64_t>(s, "graveyard_votes", m.graveyard_votes);
  f.write_attribute<std::int64_t>(s, "graveyard_max_age", m.graveyard_max_age);
  f.write_attribute<std::uint64_t>(s, "n_particles", m.n_particles);
  f.write_attribute<double>(s, "box_size", std::span<const double>(m.box_size.data(), 3));
  f.write_attribute(s, "length_units", m.length_units);
  f.write_attribute<std::int64_t>(s, "last_snapshot", m.last_snapshot);
  f.write_attribute<double>(s, "last_time", m.last_time);
  f.write_attribute<std::int64_t>(s, "last_voters_per_peak", m.last_voters_per_peak);
  f.write_attribute<std::int64_t>(s, "units_known", m.units_known);
  f.write_attribute<std::int64_t>(s, "h_scaled", m.h_scaled);
  f.write_attribute<std::int64_t>(s, "comoving", m.comoving);
  f.write_attribute<double>(s, "length_in_cm", m.length_cm);
  f.write_attribute<double>(s, "mass_in_g", m.mass_g);
  f.write_attribute<double>(s, "velocity_in_cm_per_s", m.velocity_cm_per_s);
  f.write_attribute<double>(s, "omega_m", m.omega_m);
  f.write_attribute<double>(s, "omega_lambda", m.omega_lambda);
  f.write_attribute<double>(s, "hubble_param", m.hubble_param);
  f.write_attribute<std::int64_t>(s, "peculiar_velocities", 1);
  artefact_table().write(f, s, mine(t.artefacts), none, comm);
  state_peak_table().write(f, s, mine(t.last_peaks), none, comm);
  state_member_table().write(f, s, mine(t.last_members), none, comm);
  state_voter_table().write(f, s, mine(t.last_voters), none, comm);
  grave_table().write(f, s, mine(t.graveyard), none, comm);
}

TreeRows read_tree(const std::string& path) {
  TreeRows t;
  try {
    const File f = File::open_read(path);
    t.peaks = tree_peak_table().read(f, "/peaks");
    t.snapshots = tree_snapshot_table().read(f, "/snapshots");
    const std::string s = "/state";
    TreeStateMeta& m = t.state;
    m.next_lineage = f.read_attribute_scalar<std::int64_t>(s, "next_lineage");
    m.min_votes = f.read_attribute_scalar<std::int64_t>(s, "min_votes");
    m.graveyard_votes = f.read_attribute_scalar<std::int64_t>(s, "graveyard_votes");
    m.graveyard_max_age = f.read_attribute_scalar<std::int64_t>(s, "graveyard_max_age");
    m.n_particles = f.read_attribute_scalar<std::uint64_t>(s, "n_particles");
    const auto box = f.read_attribute<double>(s, "box_size");
    if (box.size() != 3) throw core::Error::input("attribute box_size of /state has {} values, 3 expected", box.size());
    m.box_size = {box[0], box[1], box[2]};
    m.length_units = f.read_attribute_string(s, "length_units");
    m.last_snapshot = f.read_attribute_scalar<std::int64_t>(s, "last_snapshot");
    m.last_time = f.read_attribute_scalar<double>(s, "last_time");
    if (f.has_attribute(s, "last_voters_per_peak"))
      m.last_voters_per_peak = f.read_attribute_scalar<std::int64_t>(s, "last_voters_per_peak");
    if (f.has_attribute(s, "units_known")) {
      m.units_known = f.read_attribute_scalar<std::int64_t>(s, "units_known");
      m.h_scaled = f.read_attribute_scalar<std::int64_t>(s, "h_scaled");
      m.comoving = f.read_attribute_scalar<std::int64_t>(s, "comoving");
      m.length_cm = f.read_attribute_scalar<double>(s, "length_in_cm");
      m.mass_g = f.read_attribute_scalar<double>(s, "mass_in_g");
      m.velocity_cm_per_s = f.read_attribute_scalar<double>(s, "velocity_in_cm_per_s");
      m.omega_m = f.read_attribute_scalar<double>(s, "omega_m");
      m.omega_lambda = f.read_attribute_scalar<double>(s, "omega_lambda");
      m.hubble_param = f.read_attribute_scalar<double>(s, "hubble_param");
    }
    if (f.has_attribute("/peaks", "bound_types")) m.bound_types = f.read_attribute_strings("/peaks", "bound_types");
    if (f.has_attribute("/peaks", "bound_apertures_kpc"))
      m.bound_apertures_kpc = f.read_attribute<double>("/peaks", "bound_apertures_kpc");
    const std::size_t n_types = m.bound_types.size(), n_apertures = m.bound_apertures_kpc.size();
    for (const TreePeakRow& r : t.peaks)
      if (r.bound_mass_type.size() != n_types || r.bound_half_mass_radius_type.size() != n_types ||
          r.bound_velocity_dispersion_type.size() != n_types ||
          r.bound_aperture_mass_type.size() != n_types * n_apertures)
        throw core::Error::input(
            "/peaks: per-type columns of {} values, the attributes bound_types and bound_apertures_kpc name {} types "
            "and {} apertures",
            r.bound_mass_type.size(), n_types, n_apertures);
    t.artefacts = artefact_table().read(f, s);
    t.last_peaks = state_peak_table().read(f, s);
    // Trees before 2026-11-26 held the velocities as Gadget stores them, u = v_pec / sqrt(a).
    if (!f.has_attribute(s, "peculiar_velocities") && m.comoving != 0) {
      for (TreePeakRow& r : t.peaks)
        for (double& v : r.velocity) v *= std::sqrt(r.time);
      for (StatePeakRow& r : t.last_peaks)
        for (double& v : r.velocity) v *= std::sqrt(m.last_time);
    }
    t.last_members = state_member_table().read(f, s);
    t.last_voters = state_voter_table().read(f, s);
    t.graveyard = grave_table().read(f, s);
  } catch (const core::Error& e) {
    throw core::Error::input("{}: not a readable merger-tree state ({})", path, e.what());
  }
  return t;
}

}  // namespace phew::io
