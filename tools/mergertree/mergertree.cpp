#include "mergertree.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/atomic_output.hpp"
#include "io/grid_file.hpp"
#include "manifest/fingerprint.hpp"
#include "mergertree/tree.hpp"
#include "mpi/agree.hpp"

#include <cmath>
#include <filesystem>

namespace phew {
namespace {

namespace fs = std::filesystem;

struct StageFiles {
  std::string peaks, voters;
};

// "PEAKS[:VOTERS]"; without VOTERS, the file named like PEAKS with "peaks" replaced by "voters".
StageFiles parse_stage(const std::string& text) {
  StageFiles f;
  const auto colon = text.find(':');
  f.peaks = text.substr(0, colon);
  if (colon != std::string::npos) {
    f.voters = text.substr(colon + 1);
  } else {
    const fs::path p(f.peaks);
    std::string name = p.filename().string();
    const auto at = name.rfind("peaks");
    if (at == std::string::npos)
      throw Error::usage("stage '{}': give PEAKS:VOTERS (the voters file cannot be guessed from the name)", text);
    name.replace(at, 5, "voters");
    f.voters = (p.parent_path() / name).string();
  }
  if (!fs::exists(f.voters)) throw Error::input("{}: missing voters file {} for this stage", f.peaks, f.voters);
  return f;
}

// What identifies the simulation a stage comes from.
struct Simulation {
  std::array<double, 3> box{};
  std::uint64_t n_particles = 0;  // in the grid: all of them in a periodic box, only those inside a region
  std::string units;
  bool periodic = true;
};

Stage read_stage(const StageFiles& files, std::int64_t snap, Simulation& sim, manifest::Builder& man, bool root) {
  if (root) {
    const auto peaks_in = manifest::check_phew_input(files.peaks, {"peaks"});
    const auto voters_in = manifest::check_phew_input(files.voters, {"voters"});
    // The voters must have been computed from this peaks file.
    const auto vm = manifest::read_manifest(files.voters);
    bool from_these = false;
    for (const auto& in : vm.value("inputs", manifest::Json::array()))
      from_these |= in.value("fingerprint", "") == peaks_in.fingerprint;
    if (!from_these) throw Error::input("{}: was not computed from {} (stale or swapped voters file)", files.voters, files.peaks);
    man.add_input(peaks_in);
    man.add_input(voters_in);
  }
  Stage st;
  st.snap = snap;
  const io::File pf = io::File::open_read(files.peaks);
  const GridMeta g = io::read_grid_attributes(pf, "/grid", false);
  sim = {g.geometry.extent, g.n_particles, g.length_units, g.geometry.periodic};
  st.time = pf.read_attribute_scalar<double>("/", "time");
  const auto id = pf.read<std::int64_t>("/peaks/id");
  const auto pos = pf.read<double>("/peaks/position");
  const auto vel = pf.read<double>("/peaks/velocity");
  const auto mass = pf.read<double>("/peaks/mass");
  const auto deb = pf.read<std::int64_t>("/peaks/from_deblending");
  for (std::size_t i = 0; i < id.size(); ++i)
    st.peaks.push_back({id[i], deb[i] != 0, {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]},
                        {vel[3 * i], vel[3 * i + 1], vel[3 * i + 2]}, mass[i]});
  std::sort(st.peaks.begin(), st.peaks.end(), [](const StagePeak& a, const StagePeak& b) { return a.id < b.id; });
  st.member_id = pf.read<std::uint64_t>("/particles/id");
  st.member_peak = pf.read<std::int64_t>("/particles/peak");
  const io::File vf = io::File::open_read(files.voters);
  const auto vp = vf.read<std::int64_t>("/voters/peak");
  const auto vid = vf.read<std::uint64_t>("/voters/particle_id");
  for (std::size_t i = 0; i < vp.size(); ++i) st.voters[vp[i]].push_back(vid[i]);
  return st;
}

// --- the state file ------------------------------------------------------------------------

template <typename T, typename F>
std::vector<T> column(const std::vector<TreeRow>& rows, F f) {
  std::vector<T> v;
  v.reserve(rows.size());
  for (const TreeRow& r : rows) v.push_back(static_cast<T>(f(r)));
  return v;
}

void write_state(io::File& f, const TreeState& st, const TreeParams& p, const Simulation& sim,
                 const std::vector<StageFiles>& history, const std::vector<double>& times) {
  const auto& rows = st.rows;
  f.create_group("/peaks");
  f.write<std::int64_t>("/peaks/snapshot", column<std::int64_t>(rows, [](const TreeRow& r) { return r.peak.snap; }));
  f.write<std::int64_t>("/peaks/id", column<std::int64_t>(rows, [](const TreeRow& r) { return r.peak.id; }));
  f.write<std::int64_t>("/peaks/lineage", column<std::int64_t>(rows, [](const TreeRow& r) { return r.lineage; }));
  f.write<std::int64_t>("/peaks/main_progenitor_snapshot", column<std::int64_t>(rows, [](const TreeRow& r) { return r.main_progenitor.snap; }));
  f.write<std::int64_t>("/peaks/main_progenitor_id", column<std::int64_t>(rows, [](const TreeRow& r) { return r.main_progenitor.id; }));
  f.write<std::int64_t>("/peaks/n_progenitors", column<std::int64_t>(rows, [](const TreeRow& r) { return r.n_progenitors; }));
  f.write<std::int64_t>("/peaks/progenitor_votes", column<std::int64_t>(rows, [](const TreeRow& r) { return r.progenitor_votes; }));
  f.write<std::int64_t>("/peaks/descendant_snapshot", column<std::int64_t>(rows, [](const TreeRow& r) { return r.descendant.snap; }));
  f.write<std::int64_t>("/peaks/descendant_id", column<std::int64_t>(rows, [](const TreeRow& r) { return r.descendant.id; }));
  f.write<std::int8_t>("/peaks/merged", column<std::int8_t>(rows, [](const TreeRow& r) { return r.merged; }));
  f.write<std::int8_t>("/peaks/revived_from_graveyard", column<std::int8_t>(rows, [](const TreeRow& r) { return r.revived; }));
  f.write<std::int64_t>("/peaks/gap", column<std::int64_t>(rows, [](const TreeRow& r) { return r.gap; }));
  f.write<std::int8_t>("/peaks/artefact", column<std::int8_t>(rows, [](const TreeRow& r) { return r.artefact; }));
  f.write<std::int8_t>("/peaks/from_deblending", column<std::int8_t>(rows, [](const TreeRow& r) { return r.from_deblending; }));
  f.write<double>("/peaks/time", column<double>(rows, [](const TreeRow& r) { return r.time; }));
  f.write<double>("/peaks/mass", column<double>(rows, [](const TreeRow& r) { return r.mass; }));
  std::vector<double> pos, vel;
  for (const TreeRow& r : rows) {
    pos.insert(pos.end(), r.position.begin(), r.position.end());
    vel.insert(vel.end(), r.velocity.begin(), r.velocity.end());
  }
  f.write<double>("/peaks/position", {rows.size(), 3}, pos);
  f.write<double>("/peaks/velocity", {rows.size(), 3}, vel);

  f.create_group("/snapshots");
  std::vector<std::int64_t> idx;
  for (std::size_t i = 0; i < history.size(); ++i) idx.push_back(static_cast<std::int64_t>(i));
  f.write<std::int64_t>("/snapshots/index", idx);
  f.write<double>("/snapshots/time", times);
  // The stages' paths are provenance (the manifest lists them with their fingerprints), not data.

  // What the next --add needs: the last snapshot, the graveyard, the counters and parameters.
  f.create_group("/state");
  f.write_attribute<std::int64_t>("/state", "next_lineage", st.next_lineage);
  f.write_attribute<std::int64_t>("/state", "min_votes", p.min_votes);
  f.write_attribute<std::int64_t>("/state", "graveyard_votes", p.graveyard_votes);
  f.write_attribute<std::int64_t>("/state", "graveyard_max_age", p.graveyard_max_age);
  f.write_attribute<std::uint64_t>("/state", "n_particles", sim.n_particles);
  f.write_attribute<double>("/state", "box_size", std::span<const double>(sim.box.data(), 3));
  f.write_attribute("/state", "length_units", sim.units);
  f.write_attribute<std::int64_t>("/state", "last_snapshot", st.last.snap);
  f.write_attribute<double>("/state", "last_time", st.last.time);
  f.write<std::int64_t>("/state/artefact_ids", st.artefact_ids);
  std::vector<std::int64_t> pid, pdeb;
  std::vector<double> ppos, pvel, pmass;
  for (const StagePeak& pk : st.last.peaks) {
    pid.push_back(pk.id);
    pdeb.push_back(pk.from_deblending);
    ppos.insert(ppos.end(), pk.position.begin(), pk.position.end());
    pvel.insert(pvel.end(), pk.velocity.begin(), pk.velocity.end());
    pmass.push_back(pk.mass);
  }
  f.write<std::int64_t>("/state/peak_id", pid);
  f.write<std::int64_t>("/state/peak_from_deblending", pdeb);
  f.write<double>("/state/peak_position", {pid.size(), 3}, ppos);
  f.write<double>("/state/peak_velocity", {pid.size(), 3}, pvel);
  f.write<double>("/state/peak_mass", pmass);
  f.write<std::uint64_t>("/state/member_id", st.last.member_id);
  f.write<std::int64_t>("/state/member_peak", st.last.member_peak);
  std::vector<std::int64_t> vpk;
  std::vector<std::uint64_t> vid;
  for (const auto& [k, ids] : st.last.voters)
    for (std::uint64_t i : ids) {
      vpk.push_back(k);
      vid.push_back(i);
    }
  f.write<std::int64_t>("/state/voter_peak", vpk);
  f.write<std::uint64_t>("/state/voter_particle", vid);
  std::vector<std::uint64_t> gp;
  std::vector<std::int64_t> gs, gi, gd;
  for (const auto& [particle, g] : st.graveyard) {
    gp.push_back(particle);
    gs.push_back(g.peak.snap);
    gi.push_back(g.peak.id);
    gd.push_back(g.died);
  }
  f.write<std::uint64_t>("/state/graveyard_particle", gp);
  f.write<std::int64_t>("/state/graveyard_peak_snapshot", gs);
  f.write<std::int64_t>("/state/graveyard_peak_id", gi);
  f.write<std::int64_t>("/state/graveyard_died", gd);
}

TreeState read_state(const std::string& path, TreeParams& p, Simulation& sim, std::vector<StageFiles>& history,
                     std::vector<double>& times) {
  TreeState st;
  try {
    const io::File f = io::File::open_read(path);
    const auto snap = f.read<std::int64_t>("/peaks/snapshot");
    const auto id = f.read<std::int64_t>("/peaks/id");
    const auto lin = f.read<std::int64_t>("/peaks/lineage");
    const auto mps = f.read<std::int64_t>("/peaks/main_progenitor_snapshot");
    const auto mpi_ = f.read<std::int64_t>("/peaks/main_progenitor_id");
    const auto np = f.read<std::int64_t>("/peaks/n_progenitors");
    const auto pv = f.read<std::int64_t>("/peaks/progenitor_votes");
    const auto ds = f.read<std::int64_t>("/peaks/descendant_snapshot");
    const auto di = f.read<std::int64_t>("/peaks/descendant_id");
    const auto mg = f.read<std::int64_t>("/peaks/merged");
    const auto rv = f.read<std::int64_t>("/peaks/revived_from_graveyard");
    const auto gap = f.read<std::int64_t>("/peaks/gap");
    const auto art = f.read<std::int64_t>("/peaks/artefact");
    const auto deb = f.read<std::int64_t>("/peaks/from_deblending");
    const auto t = f.read<double>("/peaks/time");
    const auto m = f.read<double>("/peaks/mass");
    const auto pos = f.read<double>("/peaks/position");
    const auto vel = f.read<double>("/peaks/velocity");
    for (std::size_t i = 0; i < id.size(); ++i) {
      TreeRow r;
      r.peak = {snap[i], id[i]};
      r.lineage = lin[i];
      r.main_progenitor = {mps[i], mpi_[i]};
      r.n_progenitors = np[i];
      r.progenitor_votes = pv[i];
      r.descendant = {ds[i], di[i]};
      r.merged = mg[i] != 0;
      r.revived = rv[i] != 0;
      r.gap = gap[i];
      r.artefact = art[i] != 0;
      r.from_deblending = deb[i] != 0;
      r.time = t[i];
      r.mass = m[i];
      r.position = {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]};
      r.velocity = {vel[3 * i], vel[3 * i + 1], vel[3 * i + 2]};
      st.rows.push_back(r);
    }
    times = f.read<double>("/snapshots/time");
    history.resize(times.size());  // only the count matters: the next stage's snapshot index
    const std::string s = "/state";
    st.next_lineage = f.read_attribute_scalar<std::int64_t>(s, "next_lineage");
    p.min_votes = f.read_attribute_scalar<std::int64_t>(s, "min_votes");
    p.graveyard_votes = f.read_attribute_scalar<std::int64_t>(s, "graveyard_votes");
    p.graveyard_max_age = f.read_attribute_scalar<std::int64_t>(s, "graveyard_max_age");
    sim.n_particles = f.read_attribute_scalar<std::uint64_t>(s, "n_particles");
    const auto box = f.read_attribute<double>(s, "box_size");
    sim.box = {box.at(0), box.at(1), box.at(2)};
    sim.units = f.read_attribute_string(s, "length_units");
    st.last.snap = f.read_attribute_scalar<std::int64_t>(s, "last_snapshot");
    st.last.time = f.read_attribute_scalar<double>(s, "last_time");
    st.artefact_ids = f.read<std::int64_t>("/state/artefact_ids");
    const auto pid = f.read<std::int64_t>("/state/peak_id");
    const auto pdeb = f.read<std::int64_t>("/state/peak_from_deblending");
    const auto ppos = f.read<double>("/state/peak_position");
    const auto pvel = f.read<double>("/state/peak_velocity");
    const auto pmass = f.read<double>("/state/peak_mass");
    for (std::size_t i = 0; i < pid.size(); ++i)
      st.last.peaks.push_back({pid[i], pdeb[i] != 0, {ppos[3 * i], ppos[3 * i + 1], ppos[3 * i + 2]},
                               {pvel[3 * i], pvel[3 * i + 1], pvel[3 * i + 2]}, pmass[i]});
    st.last.member_id = f.read<std::uint64_t>("/state/member_id");
    st.last.member_peak = f.read<std::int64_t>("/state/member_peak");
    const auto vpk = f.read<std::int64_t>("/state/voter_peak");
    const auto vid = f.read<std::uint64_t>("/state/voter_particle");
    for (std::size_t i = 0; i < vpk.size(); ++i) st.last.voters[vpk[i]].push_back(vid[i]);
    const auto gp = f.read<std::uint64_t>("/state/graveyard_particle");
    const auto gs = f.read<std::int64_t>("/state/graveyard_peak_snapshot");
    const auto gi = f.read<std::int64_t>("/state/graveyard_peak_id");
    const auto gd = f.read<std::int64_t>("/state/graveyard_died");
    for (std::size_t i = 0; i < gp.size(); ++i) st.graveyard[gp[i]] = {{gs[i], gi[i]}, gd[i]};
    st.has_last = true;
  } catch (const Error& e) {
    throw Error::input("{}: not a readable merger-tree state ({})", path, e.what());
  }
  return st;
}

// A plain table of links and Consistent-Trees-style columns.
void export_text(const std::string& output, const TreeState& st) {
  std::string links = "# snapshot peak lineage main_progenitor_snapshot main_progenitor descendant_snapshot descendant "
                      "merged revived gap artefact from_deblending progenitor_votes mass\n";
  for (const TreeRow& r : st.rows)
    links += fmt::format("{} {} {} {} {} {} {} {} {} {} {} {} {} {:.10g}\n", r.peak.snap, r.peak.id, r.lineage,
                         r.main_progenitor.snap, r.main_progenitor.id, r.descendant.snap, r.descendant.id, int(r.merged),
                         int(r.revived), r.gap, int(r.artefact), int(r.from_deblending), r.progenitor_votes, r.mass);
  io::write_text_atomically(output + ".links.txt", links);
  // Consistent-Trees-style: one row per peak, ids unique over the tree (the row number), desc_id = -1
  // when the lineage ends; scale is the snapshot's time (the scale factor of cosmological runs).
  std::map<PeakKey, std::size_t> row;
  for (std::size_t i = 0; i < st.rows.size(); ++i) row[st.rows[i].peak] = i;
  std::string ct = "#scale(0) id(1) desc_scale(2) desc_id(3) num_prog(4) mvir(5) x(6) y(7) z(8) vx(9) vy(10) vz(11) "
                   "Tree_root_ID(12) Orig_halo_ID(13) Snap_idx(14) mmp?(15)\n";
  for (std::size_t i = 0; i < st.rows.size(); ++i) {
    const TreeRow& r = st.rows[i];
    const bool has_desc = !r.descendant.none();
    const TreeRow* d = has_desc ? &st.rows[row.at(r.descendant)] : nullptr;
    const bool mmp = d && d->main_progenitor == r.peak;
    ct += fmt::format("{:.8g} {} {:.8g} {} {} {:.8g} {:.10g} {:.10g} {:.10g} {:.8g} {:.8g} {:.8g} {} {} {} {}\n", r.time, i,
                      d ? d->time : -1.0, d ? static_cast<long long>(row.at(r.descendant)) : -1LL, r.n_progenitors, r.mass,
                      r.position[0], r.position[1], r.position[2], r.velocity[0], r.velocity[1], r.velocity[2], r.lineage,
                      r.peak.id, r.peak.snap, int(mmp));
  }
  io::write_text_atomically(output + ".ctrees.txt", ct);
}

}  // namespace

void declare_tree_options(CLI::App& app, TreeOptions& opt) {
  app.add_option("stages", opt.stages, "Stages PEAKS[:VOTERS] in time order (VOTERS defaults to PEAKS with 'peaks' -> 'voters')");
  app.add_option("--state", opt.state, "On-the-fly: continue this tree (its state is inside the file)");
  app.add_option("--add", opt.add, "On-the-fly: stages to append to --state (repeatable)");
  app.add_option("--min-votes", opt.min_votes, "Votes a descendant needs to be linked")->capture_default_str();
  app.add_option("--graveyard-votes", opt.graveyard_votes, "Votes needed to revive a dead peak")->capture_default_str();
  app.add_option("--graveyard-max-age", opt.graveyard_max_age, "Snapshots after which a dead peak cannot be revived")
      ->capture_default_str();
  app.add_flag("--backwards", opt.backwards, "Stages go back in time (the method is symmetric in time)");
  app.add_flag("--export-text", opt.export_text, "Also write OUTPUT.links.txt and OUTPUT.ctrees.txt");
}

void run_mergertree(const TreeOptions& opt, Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  if (opt.state.empty() == opt.stages.empty())
    throw Error::usage("give the stages (batch), or --state TREE with --add STAGE (on the fly), not both");
  if (!opt.state.empty() && opt.add.empty()) throw Error::usage("--state needs --add STAGE");
  if (opt.min_votes < 1 || opt.graveyard_votes < 1 || opt.graveyard_max_age < 0)
    throw Error::usage("vote thresholds must be at least 1 and --graveyard-max-age not negative");

  // The tree is small and deterministic: every rank builds it, rank 0's copy is written.
  ctx.phase("read");
  TreeParams params{opt.min_votes, opt.graveyard_votes, opt.graveyard_max_age};
  TreeState state;
  Simulation sim;
  std::vector<StageFiles> history;
  std::vector<double> times;
  const auto& new_stages = opt.state.empty() ? opt.stages : opt.add;
  mpi::agree(comm, [&] {
    if (!opt.state.empty()) {
      if (comm.root()) ctx.manifest().add_input(manifest::check_phew_input(opt.state, {"tree"}));
      state = read_state(opt.state, params, sim, history, times);
    }
  });

  ctx.phase("link");
  mpi::agree(comm, [&] {
    for (const std::string& text : new_stages) {
      const StageFiles files = parse_stage(text);
      Simulation s;
      Stage stage = read_stage(files, static_cast<std::int64_t>(history.size()), s, ctx.manifest(), comm.root());
      if (!history.empty()) {
        // A region (zoom) loses and gains particles; a periodic box keeps them all.
        if (s.box != sim.box || s.units != sim.units || (s.periodic && s.n_particles != sim.n_particles))
          throw Error::input("{}: from a different simulation (box {} {}, {} particles) than the tree (box {} {}, {} particles)",
                             files.peaks, s.box[0], s.units, s.n_particles, sim.box[0], sim.units, sim.n_particles);
        const double last = times.back();
        if (opt.backwards ? !(stage.time < last) : !(stage.time > last))
          throw Error::input("{}: time {} is not {} the previous stage's {} (stages out of time order; --backwards?)",
                             files.peaks, stage.time, opt.backwards ? "before" : "after", last);
      }
      sim = s;
      history.push_back(files);
      times.push_back(stage.time);
      add_stage(state, std::move(stage), params);
      log::verbose("linked {}: {} peaks", files.peaks, state.last.peaks.size());
    }
  });
  std::int64_t lineages = state.next_lineage - 1, mergers = 0, revived = 0, artefacts = 0;
  for (const TreeRow& r : state.rows) {
    mergers += r.merged;
    revived += r.revived;
    artefacts += r.artefact;
  }
  log::info("{} snapshots, {} peaks, {} lineages, {} mergers, {} revivals from the graveyard, {} artefacts",
            history.size(), state.rows.size(), lineages, mergers, revived, artefacts);

  ctx.phase("write");
  io::AtomicOutput out(ctx.output(), comm);
  io::File f = io::File::create(out.temp_path(), comm);
  write_state(f, state, params, sim, history, times);
  auto& m = ctx.manifest();
  m.parameter("min_votes_used", params.min_votes);
  m.parameter("graveyard_votes_used", params.graveyard_votes);
  m.parameter("graveyard_max_age_used", params.graveyard_max_age);
  m.summary("n_snapshots", history.size());
  m.summary("n_peaks", state.rows.size());
  m.summary("n_lineages", lineages);
  m.summary("n_mergers", mergers);
  m.summary("n_revived", revived);
  m.summary("n_artefacts", artefacts);
  if (opt.export_text) mpi::agree(comm, [&] {
      if (comm.root()) export_text(ctx.output(), state);
    });
  ctx.finish_output(f, out);
}

}  // namespace phew
