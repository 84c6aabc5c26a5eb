#include <phew/mergertree/stages.hpp>

#include <phew/core/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace phew::mergertree {

Simulation simulation_of(const grid::GridMeta& g) {
  return {g.geometry.extent, g.n_particles, g.length_units, g.geometry.periodic};
}

Stage make_stage(std::int64_t snap, double time, const std::vector<model::PeakRow>& peaks,
                 const std::vector<model::PeakMember>& members, const std::vector<model::VoterRow>& voters) {
  Stage st;
  st.snap = snap;
  st.time = time;
  for (const model::PeakRow& p : peaks)
    st.peaks.push_back({p.id, p.from_deblending, p.position, p.velocity, p.mass, {}});
  std::sort(st.peaks.begin(), st.peaks.end(), [](const StagePeak& a, const StagePeak& b) { return a.id < b.id; });
  st.member_id.reserve(members.size());
  st.member_peak.reserve(members.size());
  for (const model::PeakMember& m : members) {
    st.member_id.push_back(m.id);
    st.member_peak.push_back(m.peak);
  }
  for (const model::VoterRow& v : voters) st.voters[v.peak].push_back(v.particle_id);
  return st;
}

void append_stage(Tree& tree, Stage stage, const Simulation& s, bool backwards, const std::string& where) {
  if (!tree.times.empty()) {
    const Simulation& sim = tree.sim;
    // A region (zoom) loses and gains particles; a periodic box keeps them all.
    if (s.box != sim.box || s.units != sim.units || (s.periodic && s.n_particles != sim.n_particles))
      throw core::Error::input(
          "{}: from a different simulation (box {} {}, {} particles) than the tree (box {} {}, {} particles)", where,
          s.box[0], s.units, s.n_particles, sim.box[0], sim.units, sim.n_particles);
    const double last = tree.times.back();
    if (backwards ? !(stage.time < last) : !(stage.time > last))
      throw core::Error::input("{}: time {} is not {} the previous stage's {} (stages out of time order; --backwards?)",
                               where, stage.time, backwards ? "before" : "after", last);
  }
  if (!stage.bound_types.empty()) {
    if (!tree.bound_types.empty() &&
        (tree.bound_types != stage.bound_types || tree.bound_apertures_kpc != stage.bound_apertures_kpc))
      throw core::Error::input(
          "{}: its bound.h5 has per-type columns of other types or apertures than the tree's earlier stages", where);
    tree.bound_types = stage.bound_types;
    tree.bound_apertures_kpc = stage.bound_apertures_kpc;
  }
  tree.sim = s;
  tree.times.push_back(stage.time);
  tree.thresholds.push_back(stage.density_threshold);
  add_stage(tree.state, std::move(stage), tree.params);
}

model::TreeRows to_tree_rows(const Tree& tree) {
  const TreeState& st = tree.state;
  model::TreeRows f;
  // A peak of a stage without per-type columns has NaN in the tree's (a column has a value per type).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> none(tree.bound_types.size(), nan),
      none_apertures(tree.bound_types.size() * tree.bound_apertures_kpc.size(), nan);
  const auto per_type = [&](const std::vector<double>& v) { return v.size() == none.size() ? v : none; };
  const auto per_aperture = [&](const std::vector<double>& v) {
    return v.size() == none_apertures.size() ? v : none_apertures;
  };
  for (const TreeRow& r : st.rows) {
    const BoundProperties& b = r.halo.bound;
    f.peaks.push_back({r.peak.snap,
                       r.peak.id,
                       r.lineage,
                       r.main_progenitor.snap,
                       r.main_progenitor.id,
                       r.n_progenitors,
                       r.progenitor_votes,
                       r.descendant.snap,
                       r.descendant.id,
                       r.merged,
                       r.revived,
                       r.gap,
                       r.artefact,
                       r.from_deblending,
                       r.time,
                       r.mass,
                       r.position,
                       r.velocity,
                       r.halo.host,
                       r.merged_before_revival.snap,
                       r.merged_before_revival.id,
                       r.halo.mvir,
                       r.halo.rvir,
                       r.halo.m200c,
                       b.given,
                       b.mass,
                       b.vmax,
                       b.vrms,
                       b.rs,
                       b.spin_peebles,
                       b.spin_bullock,
                       b.xoff,
                       b.b_to_a,
                       b.c_to_a,
                       b.virial_ratio,
                       b.angular_momentum[0],
                       b.angular_momentum[1],
                       b.angular_momentum[2],
                       per_type(b.mass_type),
                       per_type(b.half_mass_radius_type),
                       per_type(b.velocity_dispersion_type),
                       per_aperture(b.aperture_mass_type)});
  }
  for (std::size_t i = 0; i < tree.times.size(); ++i)
    f.snapshots.push_back(
        {static_cast<std::int64_t>(i), tree.times[i], i < tree.thresholds.size() ? tree.thresholds[i] : 0.0});
  const SimulationUnits& u = tree.units;
  f.state = {st.next_lineage,
             tree.params.min_votes,
             tree.params.graveyard_votes,
             tree.params.graveyard_max_age,
             tree.sim.n_particles,
             tree.sim.box,
             tree.sim.units,
             st.last.snap,
             st.last.time,
             st.last.voters_per_peak,
             u.known ? 1 : 0,
             u.h_scaled ? 1 : 0,
             u.comoving ? 1 : 0,
             u.length_cm,
             u.mass_g,
             u.velocity_cm_per_s,
             u.omega_m,
             u.omega_lambda,
             u.hubble_param,
             tree.bound_types,
             tree.bound_apertures_kpc};
  for (const StagePeak& pk : st.last.peaks)
    f.last_peaks.push_back({pk.id, pk.from_deblending ? 1 : 0, pk.position, pk.velocity, pk.mass});
  for (std::size_t i = 0; i < st.last.member_id.size(); ++i)
    f.last_members.push_back({st.last.member_id[i], st.last.member_peak[i]});
  for (const auto& [peak, ids] : st.last.voters)
    for (std::uint64_t id : ids) f.last_voters.push_back({peak, id});
  for (const auto& [particle, g] : st.graveyard) f.graveyard.push_back({particle, g.peak.snap, g.peak.id, g.died});
  for (std::int64_t id : st.artefact_ids) f.artefacts.push_back({id});
  return f;
}

Tree from_tree_rows(const model::TreeRows& f) {
  Tree tree;
  TreeState& st = tree.state;
  for (const model::TreePeakRow& p : f.peaks) {
    TreeRow r;
    r.peak = {p.snapshot, p.id};
    r.lineage = p.lineage;
    r.main_progenitor = {p.main_progenitor_snapshot, p.main_progenitor_id};
    r.n_progenitors = p.n_progenitors;
    r.progenitor_votes = p.progenitor_votes;
    r.descendant = {p.descendant_snapshot, p.descendant_id};
    r.merged = p.merged;
    r.revived = p.revived_from_graveyard;
    r.gap = p.gap;
    r.artefact = p.artefact;
    r.from_deblending = p.from_deblending;
    r.time = p.time;
    r.mass = p.mass;
    r.position = p.position;
    r.velocity = p.velocity;
    r.halo = {p.host,
              p.mvir,
              p.rvir,
              p.m200c,
              {p.bound,
               p.bound_mass,
               p.vmax,
               p.vrms,
               p.rs,
               p.spin_peebles,
               p.spin_bullock,
               p.xoff,
               p.b_to_a,
               p.c_to_a,
               p.virial_ratio,
               {p.jx, p.jy, p.jz},
               p.bound_mass_type,
               p.bound_half_mass_radius_type,
               p.bound_velocity_dispersion_type,
               p.bound_aperture_mass_type}};
    r.merged_before_revival = {p.merged_before_revival_snapshot, p.merged_before_revival_id};
    st.rows.push_back(r);
  }
  for (const model::TreeSnapshotRow& s : f.snapshots) {
    tree.times.push_back(s.time);
    tree.thresholds.push_back(s.density_threshold);
  }
  const model::TreeStateMeta& m = f.state;
  st.next_lineage = m.next_lineage;
  tree.params = {m.min_votes, m.graveyard_votes, m.graveyard_max_age};
  tree.sim.n_particles = m.n_particles;
  tree.sim.box = m.box_size;
  tree.sim.units = m.length_units;
  tree.units = {m.units_known != 0, m.length_cm, m.mass_g,       m.velocity_cm_per_s, m.h_scaled != 0,
                m.comoving != 0,    m.omega_m,   m.omega_lambda, m.hubble_param};
  tree.bound_types = m.bound_types;
  tree.bound_apertures_kpc = m.bound_apertures_kpc;
  st.last.snap = m.last_snapshot;
  st.last.time = m.last_time;
  st.last.voters_per_peak = m.last_voters_per_peak;
  for (const model::ArtefactRow& a : f.artefacts) st.artefact_ids.push_back(a.id);
  for (const model::StatePeakRow& p : f.last_peaks)
    st.last.peaks.push_back({p.id, p.from_deblending != 0, p.position, p.velocity, p.mass, {}});
  for (const model::StateMemberRow& m2 : f.last_members) {
    st.last.member_id.push_back(m2.particle);
    st.last.member_peak.push_back(m2.peak);
  }
  for (const model::StateVoterRow& v : f.last_voters) st.last.voters[v.peak].push_back(v.particle);
  for (const model::GraveRow& g : f.graveyard) st.graveyard[g.particle] = {{g.peak_snapshot, g.peak_id}, g.died};
  st.has_last = true;
  return tree;
}

TreeCounts count(const TreeState& state) {
  TreeCounts c;
  c.lineages = state.next_lineage - 1;
  for (const TreeRow& r : state.rows) {
    c.mergers += r.merged;
    c.revived += r.revived;
    c.artefacts += r.artefact;
  }
  return c;
}

std::string links_text(const TreeState& st) {
  std::string links =
      "# snapshot peak lineage main_progenitor_snapshot main_progenitor descendant_snapshot descendant "
      "merged revived gap artefact from_deblending progenitor_votes mass\n";
  for (const TreeRow& r : st.rows)
    links +=
        fmt::format("{} {} {} {} {} {} {} {} {} {} {} {} {} {:.10g}\n", r.peak.snap, r.peak.id, r.lineage,
                    r.main_progenitor.snap, r.main_progenitor.id, r.descendant.snap, r.descendant.id, int(r.merged),
                    int(r.revived), r.gap, int(r.artefact), int(r.from_deblending), r.progenitor_votes, r.mass);
  return links;
}

}  // namespace phew::mergertree
