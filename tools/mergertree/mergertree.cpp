#include "mergertree.hpp"

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/core/progress.hpp>
#include <phew/grid/spherical_overdensity.hpp>
#include <phew/io/arbor_file.hpp>
#include <phew/io/atomic_output.hpp>
#include <phew/io/bound_file.hpp>
#include <phew/io/peaks_file.hpp>
#include <phew/io/products.hpp>
#include <phew/io/tree_file.hpp>
#include <phew/io/voters_file.hpp>
#include <phew/mergertree/ctrees.hpp>
#include <phew/mergertree/stages.hpp>
#include <phew/mergertree/tree_stats.hpp>
#include <phew/mpi/agree.hpp>
#include "stage_halos.hpp"
#include <phew/tool/snapshot_input.hpp>
#include <phew/tool/threads_option.hpp>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

namespace phew::tools {
namespace {

namespace fs = std::filesystem;

struct StageFiles {
  std::string peaks, voters;
  std::string bound;  // whose /objects give the peaks' bound properties ("" for none)
};

// "PEAKS[:VOTERS][:BOUND]"; without VOTERS, the file named like PEAKS with "peaks" replaced by
// "voters". VOTERS may itself be a bound.h5, which then gives the properties too.
StageFiles parse_stage(const std::string& text) {
  StageFiles f;
  const auto colon = text.find(':');
  f.peaks = text.substr(0, colon);
  if (colon != std::string::npos) {
    f.voters = text.substr(colon + 1);
    if (const auto second = f.voters.find(':'); second != std::string::npos) {
      f.bound = f.voters.substr(second + 1);
      f.voters.resize(second);
      if (f.bound.empty() || f.bound.find(':') != std::string::npos)
        throw core::Error::usage("stage '{}': give PEAKS[:VOTERS][:BOUND], each a file name", text);
    }
  } else {
    const fs::path p(f.peaks);
    std::string name = p.filename().string();
    const auto at = name.rfind("peaks");
    if (at == std::string::npos)
      throw core::Error::usage("stage '{}': give PEAKS:VOTERS (the voters file cannot be guessed from the name)", text);
    name.replace(at, 5, "voters");
    f.voters = (p.parent_path() / name).string();
  }
  if (!fs::exists(f.voters)) throw core::Error::io("{}: missing voters file {} for this stage", f.peaks, f.voters);
  if (!f.bound.empty() && !fs::exists(f.bound))
    throw core::Error::io("{}: missing bound file {} for this stage", f.peaks, f.bound);
  return f;
}

// A stage's files, checked (kinds, and the voters computed from these peaks) and recorded as inputs.
// A stage where fewer than half the peaks have --min-votes voters (mergertree::VoterCoverage): in the
// log and in the manifest, with the voters' search radius that decided it.
struct FewVoters {
  std::string peaks;
  std::int64_t stage = 0;
  mergertree::VoterCoverage coverage;
  std::string voters_by;  // "search radius R UNITS" or unbind's "most-bound particles"
};

mergertree::Stage read_stage(const StageFiles& files, std::int64_t snap, std::int64_t min_votes, const TreeOptions& opt,
                             int threads, mergertree::Simulation& sim, mergertree::SimulationUnits& units,
                             manifest::Builder& man, std::vector<FewVoters>& few) {
  const auto peaks_in = manifest::check_phew_input(files.peaks, {"peaks"});
  // The voters: voters' (boosted potential), or unbind's most-bound particles of these peaks (bound.h5).
  const auto voters_in = manifest::check_phew_input(files.voters, {"voters", "bound"});
  const bool bound = voters_in.kind == "bound";
  if (!manifest::made_from(files.voters, peaks_in.fingerprint))
    throw core::Error::input("{}: was not computed from {} (stale or swapped voters file)", files.voters, files.peaks);
  io::check_product(files.peaks, peaks_in.kind);  // every declared value of the stage's products
  io::check_product(files.voters, voters_in.kind);
  man.add_input(peaks_in);
  man.add_input(voters_in);
  // The peaks' bound properties: from BOUND, else from VOTERS when that is a bound.h5.
  const std::string properties = !files.bound.empty() ? files.bound : bound ? files.voters : std::string();
  if (!files.bound.empty()) {
    const auto bound_in = manifest::check_phew_input(files.bound, {"bound"});
    if (!manifest::made_from(files.bound, peaks_in.fingerprint))
      throw core::Error::input("{}: was not computed from {} (stale or swapped bound file)", files.bound, files.peaks);
    if (files.bound != files.voters) io::check_product(files.bound, bound_in.kind);
    if (files.bound != files.voters) man.add_input(bound_in);
  }
  const io::File pf = io::File::open_read(files.peaks);
  const io::PeaksHeader header = io::read_peaks_header(pf);
  io::check_peculiar_velocities(header, files.peaks);
  sim = mergertree::simulation_of(header.grid);
  const io::File vf = io::File::open_read(files.voters);
  const std::int64_t per_peak =
      bound ? io::read_bound_header(vf).meta.n_most_bound : io::read_voters_header(vf).meta.n_voters_requested;
  if (min_votes > per_peak)
    throw core::Error::usage("--min-votes {} is more than the {} voters per peak of {}: no peak could ever be linked",
                             min_votes, per_peak, files.voters);
  const std::vector<model::PeakRow> rows = io::read_peak_rows(pf);
  std::vector<model::VoterRow> voters;
  std::string voters_by = "unbind's most-bound particles";
  if (bound) {
    voters = io::read_bound_voters(vf, rows, files.peaks);
  } else {
    io::check_voter_peaks_resolve(vf, rows, files.peaks);
    voters = io::read_voter_rows(vf);
    double radius = 0;
    for (const model::VoterPeakRow& p : io::read_voter_peaks(vf)) radius = std::max(radius, p.search_radius);
    voters_by = fmt::format("voters' search radius {:.4g} {}", radius, header.grid.length_units);
  }
  mergertree::Stage stage = mergertree::make_stage(snap, header.meta.time, rows, io::read_peak_members(pf), voters);
  stage.voters_per_peak = per_peak;
  if (const mergertree::VoterCoverage c = mergertree::voter_coverage(stage, min_votes); c.few()) {
    core::log::warn(
        "{}: only {} of {} peaks have {} voters or more (median {}; {}): their links rest on fewer votes, "
        "and peaks without voters only start lineages; give voters a larger --search-radius (its default "
        "fits the box) or mergertree a lower --min-votes",
        files.peaks, c.with_min_votes, c.peaks, min_votes, c.median_voters, voters_by);
    few.push_back({files.peaks, snap, c, voters_by});
  }
  const mergertree::SimulationUnits u =
      add_stage_halos(stage, files.peaks, header, rows, opt.particles, opt.units, threads, man);
  if (!properties.empty()) add_bound_properties(stage, properties, u);
  if (u.known) units = u;
  return stage;
}

}  // namespace

void declare_tree_options(CLI::App& app, TreeOptions& opt) {
  // An empty name given on purpose is refused, not taken as "no export".
  app.add_option("stages", opt.stages,
                 "Stages PEAKS[:VOTERS][:BOUND] in time order (VOTERS defaults to PEAKS with 'peaks' -> 'voters'; "
                 "a bound.h5 of unbind as VOTERS or BOUND gives the peaks' bound properties)");
  app.add_option("--state", opt.state, "On-the-fly: continue this tree (its state is inside the file)");
  app.add_option("--add", opt.add, "On-the-fly: stages to append to --state (repeatable)");
  app.add_option("--min-votes", opt.min_votes, "Votes a descendant needs to be linked")->capture_default_str();
  app.add_option("--graveyard-votes", opt.graveyard_votes, "Votes needed to revive a dead peak")->capture_default_str();
  app.add_option("--graveyard-max-age", opt.graveyard_max_age, "Snapshots after which a dead peak cannot be revived")
      ->capture_default_str();
  app.add_flag("--backwards", opt.backwards, "Stages go back in time (the method is symmetric in time)");
  app.add_flag("--export-text", opt.export_text, "Also write OUTPUT.links.txt (one line per peak and its links)");
  app.add_option("--export-ctrees", opt.export_ctrees,
                 "Also write DIR/tree_0_0_0.dat, the Consistent-Trees layout ytree and other tools load")
      ->check(tool::non_empty_name);
  app.add_option("--export-arbor", opt.export_arbor,
                 "Also write DIR/arbor.h5 (+ DIR/arbor_0000.h5), ytree's own HDF5 format (ytree.load, ytree >= 2.0)")
      ->check(tool::non_empty_name);
  app.add_option("--stats", opt.stats, "Also write tree-quality statistics to this JSON file (Srisawat et al. 2013)")
      ->check(tool::non_empty_name);
  app.add_option("--stats-min-mass", opt.stats_min_mass,
                 "Statistics over final peaks at least this massive (snapshot mass units; Mvir with --particles)")
      ->capture_default_str();
  app.add_flag("--particles", opt.particles,
               "Virial (Bryan & Norman) and 200c masses and radii of every peak from its snapshot's particles");
  tool::add_threads_option(app, opt.threads, "they find the peaks' centres for --particles");
  tool::declare_units_option(app, opt.units);
}

mergertree::TreeParams check_tree_options(const TreeOptions& opt) {
  if (opt.state.empty() == opt.stages.empty())
    throw core::Error::usage("give the stages (batch), or --state TREE with --add STAGE (on the fly), not both");
  if (!opt.state.empty() && opt.add.empty()) throw core::Error::usage("--state needs --add STAGE");
  if (opt.min_votes < 1 || opt.graveyard_votes < 1 || opt.graveyard_max_age < 0)
    throw core::Error::usage("vote thresholds must be at least 1 and --graveyard-max-age not negative");
  if (!(opt.stats_min_mass >= 0 && opt.stats_min_mass < std::numeric_limits<double>::infinity()))
    throw core::Error::usage("--stats-min-mass {} must be a finite mass, 0 or more", opt.stats_min_mass);
  // A folder of the exports that exists as a file cannot be made (docs/cli.md: exit 4, before any work).
  for (const std::string* dir : {&opt.export_ctrees, &opt.export_arbor}) {
    std::error_code ec;
    if (!dir->empty() && std::filesystem::exists(*dir, ec) && !std::filesystem::is_directory(*dir, ec))
      throw core::Error::io("{}: exists and is not a folder (--export-ctrees and --export-arbor name a folder)", *dir);
  }
  if (opt.backwards && (!opt.export_ctrees.empty() || !opt.export_arbor.empty() || !opt.stats.empty()))
    throw core::Error::usage(
        "--export-ctrees, --export-arbor and --stats describe a tree that goes forwards in time, "
        "not a --backwards one");
  return {opt.min_votes, opt.graveyard_votes, opt.graveyard_max_age};
}

namespace {

// The side outputs asked for, each with its manifest kind; rank 0 makes the content (it holds the tree).
struct SideOutput {
  std::string path, kind;
  bool make_folder;
  std::function<std::string(const mergertree::Tree&)> content;
};

std::vector<SideOutput> side_outputs(const TreeOptions& opt, const std::string& output) {
  std::vector<SideOutput> out;
  if (opt.export_text)
    out.push_back(
        {output + ".links.txt", "text", false, [](const mergertree::Tree& t) { return links_text(t.state); }});
  if (!opt.export_ctrees.empty())
    out.push_back({(fs::path(opt.export_ctrees) / "tree_0_0_0.dat").string(), "consistent-trees", true,
                   [](const mergertree::Tree& t) { return mergertree::ctrees_file(t, "phew mergertree"); }});
  if (!opt.export_arbor.empty()) {
    out.push_back({(fs::path(opt.export_arbor) / "arbor.h5").string(), "ytree-arbor", true,
                   [](const mergertree::Tree& t) { return io::arbor_images(arbor_of(t)).first; }});
    out.push_back({(fs::path(opt.export_arbor) / "arbor_0000.h5").string(), "ytree-arbor-data", true,
                   [](const mergertree::Tree& t) { return io::arbor_images(arbor_of(t)).second; }});
  }
  if (!opt.stats.empty())
    out.push_back({opt.stats, "tree-statistics", false, [min_mass = opt.stats_min_mass](const mergertree::Tree& t) {
                     return mergertree::tree_statistics(t, {min_mass}).dump(1) + "\n";
                   }});
  return out;
}

// Reads each stage and links it to the tree (rank 0).
void link_stages(const std::vector<std::string>& stages, const TreeOptions& opt, int threads, mergertree::Tree& tree,
                 manifest::Builder& man, std::vector<FewVoters>& few) {
  core::Progress progress("link", "snapshots", stages.size());
  for (const std::string& text : stages) {
    const StageFiles files = parse_stage(text);
    mergertree::Simulation sim;
    mergertree::Stage stage = read_stage(files, static_cast<std::int64_t>(tree.times.size()), tree.params.min_votes,
                                         opt, threads, sim, tree.units, man, few);
    append_stage(tree, std::move(stage), sim, opt.backwards, files.peaks);
    core::log::verbose("linked {}: {} peaks", files.peaks, tree.state.last.peaks.size());
    progress.add();
  }
  progress.finish();
}

// The counts of the tree written, and the spherical-overdensity masses --particles could not measure
// (NaN in the tree, counted over every row written).
struct TreeSummary {
  std::size_t n_snapshots = 0, n_peaks = 0;
  mergertree::TreeCounts n;
  std::int64_t links = 0;  // peaks linked to a main progenitor
  std::int64_t no_mvir = 0, no_m200c = 0;
  std::vector<FewVoters> few_voters;
};

const manifest::Fields<TreeSummary> kSummary =
    // clang-format off: one column and its constraints per line
    manifest::Fields<TreeSummary>()
        .field("n_snapshots", &TreeSummary::n_snapshots)
        .field("n_peaks", &TreeSummary::n_peaks)
        .field("n_links", &TreeSummary::links)
        .field("n_lineages", [](const TreeSummary& s) { return manifest::Json(s.n.lineages); })
        .field("n_mergers", [](const TreeSummary& s) { return manifest::Json(s.n.mergers); })
        .field("n_revived", [](const TreeSummary& s) { return manifest::Json(s.n.revived); })
        .field("n_artefacts", [](const TreeSummary& s) { return manifest::Json(s.n.artefacts); })
        .field("stages_with_few_voters", [](const TreeSummary& s) {
          manifest::Json list = manifest::Json::array();
          // clang-format on
          for (const FewVoters& f : s.few_voters)
            list.push_back({{"stage", f.stage},
                            {"peaks_file", f.peaks},
                            {"peaks", f.coverage.peaks},
                            {"peaks_with_min_votes_voters", f.coverage.with_min_votes},
                            {"median_voters", f.coverage.median_voters},
                            {"voters", f.voters_by}});
          return list;
        });
// clang-format off: one column and its constraints per line
const manifest::Fields<TreeSummary> kSoSummary = manifest::Fields<TreeSummary>()
                                                     .field("n_mvir_not_measurable", &TreeSummary::no_mvir)
                                                     .field("n_m200c_not_measurable", &TreeSummary::no_m200c);
// clang-format on

TreeSummary summarise(const mergertree::Tree& tree, std::vector<FewVoters> few) {
  TreeSummary s{tree.times.size(), tree.state.rows.size(), count(tree.state), 0, 0, 0, std::move(few)};
  for (const mergertree::TreeRow& r : tree.state.rows) {
    s.links += !r.main_progenitor.none();
    s.no_mvir += std::isnan(r.halo.mvir);
    s.no_m200c += std::isnan(r.halo.m200c);
  }
  if (s.no_mvir + s.no_m200c > 0)
    core::log::warn(
        "{} of {} peaks have no measurable Mvir and {} no M200c (fewer than {} particles inside the "
        "overdensity around their centre): written as NaN",
        s.no_mvir, s.n_peaks, s.no_m200c, grid::kSoMinParticles);
  core::log::info(
      "{} snapshots, {} peaks, {} links, {} lineages, {} mergers, {} revivals from the graveyard, {} artefacts",
      s.n_snapshots, s.n_peaks, s.links, s.n.lineages, s.n.mergers, s.n.revived, s.n.artefacts);
  if (s.n_snapshots > 1 && s.links == 0 && s.n_peaks > 0)
    core::log::warn("no peak of the {} snapshots was linked to a progenitor: every peak starts its own lineage",
                    s.n_snapshots);
  return s;
}

}  // namespace

void run_mergertree(const TreeOptions& opt, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  mergertree::Tree tree;
  tree.params = check_tree_options(opt);
  // Threads find the peaks' centres for --particles (the linking itself is sequential).
  const int threads = tool::threads_to_use(tool::parse_threads(opt.threads), ctx);
  const std::vector<SideOutput> sides = side_outputs(opt, ctx.output());
  for (const SideOutput& side : sides) ctx.plan_side_output(side.path, side.make_folder);
  // The tree is small and its linking sequential: rank 0 reads, links and holds it; the other ranks
  // only take part in the collective write (docs/tools/mergertree.md, "Parallel").
  if (comm.size() > 1)
    core::log::info("the tree is built on rank 0 alone; the other {} ranks only join the write", comm.size() - 1);

  ctx.phase("read");
  if (!opt.state.empty()) {
    ctx.add_input(opt.state, {"tree"});
    ctx.on_root([&] { tree = mergertree::from_tree_rows(io::read_tree(opt.state)); });
  }

  ctx.phase("link");
  std::vector<FewVoters> few;
  ctx.on_root([&] {
    // What the stages were made from (their snapshots too, which --particles reads) is never an output.
    for (const std::string& text : opt.state.empty() ? opt.stages : opt.add) {
      const StageFiles files = parse_stage(text);
      for (const std::string& f : {files.peaks, files.voters, files.bound})
        if (!f.empty()) ctx.protect_chain(f);
    }
    link_stages(opt.state.empty() ? opt.stages : opt.add, opt, threads, tree, ctx.manifest(), few);
  });
  const TreeSummary summary = summarise(tree, std::move(few));

  ctx.phase("write");
  ctx.manifest().parameter("min_votes_used", tree.params.min_votes);  // rank 0's manifest is the one recorded
  ctx.manifest().parameter("graveyard_votes_used", tree.params.graveyard_votes);
  ctx.manifest().parameter("graveyard_max_age_used", tree.params.graveyard_max_age);
  ctx.summary(kSummary, summary);
  if (opt.particles) ctx.summary(kSoSummary, summary);
  ctx.write_output([&](io::File& f) {
    io::write_tree(f, comm.root() ? to_tree_rows(tree) : model::TreeRows{}, comm);
    // Rank 0 holds the tree; side outputs are committed with tree.h5.
    for (const SideOutput& side : sides) {
      std::string text;
      ctx.on_root([&] {
        text = side.content(tree);
        if (side.make_folder) fs::create_directories(fs::path(side.path).parent_path());
      });
      ctx.side_output(side.path, side.kind, text);
    }
  });
}

}  // namespace phew::tools
