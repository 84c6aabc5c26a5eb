#include "mergertree.hpp"

#include "stage_files.hpp"

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/grid/spherical_overdensity.hpp>
#include <phew/io/arbor_file.hpp>
#include <phew/io/tree_file.hpp>
#include <phew/mergertree/ctrees.hpp>
#include <phew/mergertree/stages.hpp>
#include <phew/mergertree/tree_stats.hpp>
#include <phew/tool/snapshot_input.hpp>
#include <phew/tool/threads_option.hpp>

#include <CLI/CLI.hpp>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

namespace phew::tools {
namespace {

namespace fs = std::filesystem;

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

// The counts of the tree written, and the spherical-overdensity masses --particles could not measure
// (NaN in the tree, counted over every row written).
struct TreeSummary {
  std::size_t n_snapshots = 0, n_peaks = 0;
  mergertree::TreeCounts n;
  std::int64_t links = 0;  // peaks linked to a main progenitor
  std::int64_t no_mvir = 0, no_m200c = 0;
  std::vector<FewVoters> few_voters;
};

// clang-format off: one column and its constraints per line
const manifest::Fields<TreeSummary> kSummary =
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
          for (const FewVoters& f : s.few_voters)
            list.push_back({{"stage", f.stage},
                            {"peaks_file", f.peaks},
                            {"peaks", f.coverage.peaks},
                            {"peaks_with_min_votes_voters", f.coverage.with_min_votes},
                            {"median_voters", f.coverage.median_voters},
                            {"voters", f.voters_by}});
          return list;
        });
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
    const std::vector<std::string>& stages = opt.state.empty() ? opt.stages : opt.add;
    protect_stage_chains(stages, ctx);
    link_stages(stages, opt, threads, tree, ctx.manifest(), few);
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
