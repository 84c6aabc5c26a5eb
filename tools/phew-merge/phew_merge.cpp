#include "phew_merge.hpp"

#include "catalogue_files.hpp"

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/io/patches_file.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/tool/field_file.hpp>
#include <phew/tool/snapshot_input.hpp>
#include <phew/tool/test_hooks.hpp>
#include <phew/tool/threads_option.hpp>
#include <phew/watershed/catalogue.hpp>

#include <CLI/CLI.hpp>

#include <cmath>

namespace phew::tools {
namespace {

// The patches' input and the grid they were made from (the one recorded in their manifest unless given),
// checked against each other and recorded. Returns the grid's path.
std::string check_inputs(const MergeOptions& opt, tool::Context& ctx) {
  ctx.add_input(opt.patches, {"patches"});
  std::string grid_path = opt.grid;
  manifest::RecordedInput recorded;
  ctx.on_root([&] {
    recorded = manifest::recorded_input(opt.patches, 0);
    if (grid_path.empty()) grid_path = recorded.path;
  });
  ctx.comm().broadcast(grid_path);
  const manifest::Input grid = ctx.add_input(grid_path, {"grid"});
  ctx.on_root([&] {
    if (grid.fingerprint != recorded.fingerprint)
      throw core::Error::input("{}: is not the grid {} was made from (stale or swapped upstream file)", grid_path,
                               opt.patches);
  });
  return grid_path;
}

const manifest::Fields<watershed::CatalogueSummary> kSummary =
    // clang-format off: one column and its constraints per line
    manifest::Fields<watershed::CatalogueSummary>()
        .field("n_peaks", &watershed::CatalogueSummary::n_peaks)
        .field("n_clumps_level0", &watershed::CatalogueSummary::n_clumps)
        .field("n_haloes", &watershed::CatalogueSummary::n_halos)
        .field("noise_levels", &watershed::CatalogueSummary::noise_levels)
        .field("n_below_noise_floor", &watershed::CatalogueSummary::n_below_noise_floor)
        .field("noise_rounds_per_level", &watershed::CatalogueSummary::noise_rounds)
        .field("hierarchy_levels", &watershed::CatalogueSummary::hierarchy_levels)
        .field("hierarchy_rounds_per_level", &watershed::CatalogueSummary::hierarchy_rounds)
        .field("mass_above_threshold", &watershed::CatalogueSummary::mass_above_threshold)
        .field("mass_in_clumps",
               [](const watershed::CatalogueSummary& s) {
                 return manifest::Json(s.mass_above_threshold - s.mass_discarded);
               })
        .field("mass_discarded", &watershed::CatalogueSummary::mass_discarded);
// clang-format on

// The stage's parameters: the checked options, thresholds resolved against the grid.
watershed::CatalogueParams catalogue_params(const MergeParams& checked, const grid::GridMeta& grid) {
  watershed::CatalogueParams params;
  params.relevance = checked.relevance;
  params.second_relevance = checked.second_relevance;
  params.shuffle_seed = tool::test_shuffle_seed();  // the merging order must not matter
  if (checked.saddle) params.saddle_threshold = checked.saddle->resolve(grid.mean_density, grid.critical_density);
  if (checked.mass) params.mass_threshold = checked.mass->resolve(grid.particle_mass);
  // The floor's particle: the particles' mass, or their mean mass when they differ (gas and dark matter),
  // as cic-project's refinement counts them. A grid of no particles has no peaks to floor.
  const double per_particle = grid.particle_mass > 0 ? grid.particle_mass
                              : grid.n_particles > 0 ? grid.total_mass / static_cast<double>(grid.n_particles)
                                                     : 0.0;
  if (checked.noise_floor && (per_particle > 0 || checked.noise_floor->unit == core::MassThreshold::Unit::absolute)) {
    params.noise_floor = checked.noise_floor->resolve(per_particle);
    params.noise_floor_text = checked.noise_floor->to_string();
  }
  params.saddle_threshold_text = checked.saddle ? checked.saddle->to_string() : "";
  params.mass_threshold_text = checked.mass ? checked.mass->to_string() : "";
  return params;
}

// The thresholds in effect, in the manifest: the saddle threshold used (the default, or none with
// --second-relevance), not the option's default text.
void record_thresholds(manifest::Builder& m, const MergeParams& checked, const watershed::CatalogueParams& params,
                       const grid::GridMeta& grid, double density_threshold) {
  using manifest::Json;
  m.parameter("saddle-threshold", checked.saddle ? checked.saddle->to_string() : "none");
  m.parameter("saddle_threshold_used", params.saddle_threshold ? Json(*params.saddle_threshold) : Json(nullptr),
              grid.density_units);
  m.parameter("mass_threshold_used", params.mass_threshold ? Json(*params.mass_threshold) : Json(nullptr),
              grid.mass_units);
  m.parameter("noise_floor_used", params.noise_floor ? Json(*params.noise_floor) : Json(nullptr), grid.mass_units);
  m.parameter("density_threshold", density_threshold, grid.density_units);
}

// The text exports of --export-text (io::catalogue_text), beside the output.
constexpr const char* kTextSuffixes[] = {".clumps.txt", ".clumps.csv", ".halos.txt", ".halos.csv"};

}  // namespace

void declare_merge_options(CLI::App& app, MergeOptions& opt) {
  app.add_option("patches", opt.patches, "Peak patches from phew-segment (patches.h5)")->required();
  app.add_option("--grid", opt.grid, "The density grid (default: the one recorded in the patches manifest)");
  app.add_option("-r,--relevance", opt.relevance, "Relevance threshold for noise removal (peak / key saddle), > 1")
      ->capture_default_str();
  app.add_option("-s,--saddle-threshold", opt.saddle_threshold,
                 "Merge clumps whose key saddle is above this density: absolute, 200mean or 200crit; none: every "
                 "clump is its own halo")
      ->default_str(watershed::kDefaultSaddleThreshold);
  app.add_option("--second-relevance", opt.second_relevance,
                 "Instead of a saddle threshold, merge clumps again with this higher relevance threshold");
  app.add_option(
      "-m,--mass-threshold", opt.mass_threshold,
      "Only list clumps and haloes at least this massive: absolute or 10particles (filters the catalogue only)");
  app.add_option("--noise-floor", opt.noise_floor,
                 "Peaks lighter than this are noise and merge into their key neighbour: absolute or 10particles; "
                 "none for no floor")
      ->default_str(watershed::kDefaultNoiseFloor);
  app.add_option("--particles", opt.particles,
                 "Snapshot: give each particle its clump and halo, add particle masses and bulk velocities");
  tool::declare_types_option(app, opt.types, tool::AutoTypes::grid);
  app.add_flag("--allow-other-types", opt.allow_other_types, "Accept --types other than those the grid was made of");
  tool::declare_units_option(app, opt.units);
  app.add_flag("--export-text", opt.export_text,
               "Also write OUTPUT.clumps.txt and OUTPUT.halos.txt (RAMSES columns) and .csv versions");
  tool::add_threads_option(app, opt.threads, "they find the cells of --particles");
}

MergeParams check_merge_options(const MergeOptions& opt) {
  MergeParams o{opt.relevance, std::nullopt, std::nullopt,
                std::nullopt,  std::nullopt, tool::parse_threads(opt.threads)};
  if (!(opt.relevance > 1) || !std::isfinite(opt.relevance))
    throw core::Error::usage(
        "--relevance {} must be a finite number above 1 (a peak is relevant when peak/saddle >= it)", opt.relevance);
  // --second-relevance replaces the default saddle threshold; given together with -s it is refused below.
  const bool second = opt.second_relevance != 0;
  const std::string saddle =
      opt.saddle_threshold.empty() && !second ? watershed::kDefaultSaddleThreshold : opt.saddle_threshold;
  if (!saddle.empty() && saddle != "none") o.saddle = core::DensityThreshold::parse(saddle);
  if (second) {
    if (!(opt.second_relevance > opt.relevance) || !std::isfinite(opt.second_relevance))
      throw core::Error::usage("--second-relevance {} must be a finite number above --relevance {}",
                               opt.second_relevance, opt.relevance);
    if (o.saddle) throw core::Error::usage("give --saddle-threshold or --second-relevance, not both");
    o.second_relevance = opt.second_relevance;
  }
  if (!opt.mass_threshold.empty()) o.mass = core::MassThreshold::parse(opt.mass_threshold);
  const std::string floor = opt.noise_floor.empty() ? watershed::kDefaultNoiseFloor : opt.noise_floor;
  if (floor != "none") o.noise_floor = core::MassThreshold::parse(floor);
  if (!opt.units.empty() && opt.particles.empty())
    throw core::Error::usage("--units describes the snapshot of --particles: give both or neither");
  return o;
}

namespace {

// --particles: the snapshot the grid was made from, as deblend and voters require, opened and checked
// now; the stage reads this rank's share with velocities when it needs them. None without --particles.
std::function<particles::ParticleSet()> particles_reader(const MergeOptions& opt, const grid::GridMeta& grid,
                                                         watershed::CatalogueParams& params, tool::Context& ctx) {
  if (opt.particles.empty()) return {};
  std::shared_ptr<const particles::SnapshotReader> reader =
      tool::open_snapshot_with_units({opt.particles}, opt.units, ctx.comm(), &ctx.manifest());
  params.velocity_units = reader->info().units.peculiar_velocity_name();
  std::vector<int> types;
  mpi::agree(ctx.comm(), [&] {
    types = chain_types(reader->info(), opt.types, manifest::grid_types_in_chain(opt.patches), opt.allow_other_types);
    check_snapshot_matches_grid(reader->info(), grid, opt.particles, opt.patches);
  });
  ctx.add_inputs([&] { return manifest::snapshot_inputs_in_chain(opt.patches, reader->info().files); });
  return [reader, types, &comm = ctx.comm()] {
    particles::FieldSelection fields;
    fields.velocities = true;
    return read_share(*reader, types, fields, comm);
  };
}

}  // namespace

void run_phew_merge(const MergeOptions& opt, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  const MergeParams checked = check_merge_options(opt);
  if (opt.export_text)
    for (const char* suffix : kTextSuffixes) ctx.plan_side_output(ctx.output() + suffix);

  ctx.phase("open");
  const std::string grid_path = check_inputs(opt, ctx);
  std::optional<io::File> pf, gf;
  model::PatchesHeader header;
  watershed::CatalogueParams params;
  mpi::agree(comm, [&] {
    pf.emplace(io::File::open_read(opt.patches));
    gf.emplace(io::File::open_read(grid_path));
    header = io::read_patches_header(*pf);
    params = catalogue_params(checked, header.grid);
  });
  params.threads = tool::threads_to_use(checked.threads, ctx);
  const grid::GridMeta& grid = header.grid;

  CatalogueFiles input(*pf, *gf, header);
  input.particles_reader = particles_reader(opt, grid, params, ctx);

  const watershed::Catalogue catalogue =
      build_catalogue(input, params, comm, [&](const std::string& p) { ctx.phase(p); });
  const model::Clumps& clumps = catalogue.clumps;
  const watershed::CatalogueSummary& summary = catalogue.summary;
  ctx.log_memory_per(clumps.cells.size(), std::string("test ") + mesh::cell_word(clumps.refinement));
  pf.reset();
  gf.reset();
  core::log::info("mass above the threshold {:.6g}: in clumps {:.6g}, discarded as noise {:.6g} {}",
                  summary.mass_above_threshold, summary.mass_above_threshold - summary.mass_discarded,
                  summary.mass_discarded, grid.mass_units);

  ctx.phase("write");
  record_thresholds(ctx.manifest(), checked, params, grid, clumps.meta.density_threshold);
  ctx.summary(kSummary, summary);
  ctx.write_output([&](io::File& f) {
    io::write_clumps(f, clumps, comm);
    if (!opt.export_text) return;
    ctx.phase("export");  // rank 0 writes the catalogue out: only it gathers the rows
    const auto text = io::catalogue_text(comm.gatherv_to_root<model::Clump>(clumps.clumps),
                                         comm.gatherv_to_root<model::Halo>(clumps.halos), clumps.grid, clumps.meta);
    for (const auto& [suffix, content] : text) ctx.side_output(ctx.output() + suffix, "text", content);
  });
}

}  // namespace phew::tools
