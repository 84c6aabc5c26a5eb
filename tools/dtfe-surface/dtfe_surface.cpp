#include "dtfe_surface.hpp"

#include "centers.hpp"
#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>
#include <phew/core/parse.hpp>
#include <phew/io/maps_file.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/tool/snapshot_input.hpp>
#include <phew/tool/threads_option.hpp>

#include <CLI/CLI.hpp>

#include <cmath>

namespace phew::tools {
namespace {

using dtfe::SurfaceMapsSummary;
// The work of the kernel, summed over the fields.
// clang-format off: one column and its constraints per line
const manifest::Fields<SurfaceMapsSummary> kWork =
    manifest::Fields<SurfaceMapsSummary>()
        .field("tetrahedra_crossed", &SurfaceMapsSummary::steps)
        .field("flat_tetrahedra", &SurfaceMapsSummary::flat_tetrahedra)
        .field("points_absorbed", &SurfaceMapsSummary::absorbed)
        .field("margin_min", &SurfaceMapsSummary::margin_min)
        .field("margin_max", &SurfaceMapsSummary::margin_max)
        .field("margin_rounds", &SurfaceMapsSummary::margin_rounds)
        .field("pixels_outside_hull", &SurfaceMapsSummary::pixels_outside)
        .field("fields_outside_hull", &SurfaceMapsSummary::fields_outside)
        .field("seconds_triangulation", &SurfaceMapsSummary::seconds_triangulation)
        .field("seconds_interpolation", &SurfaceMapsSummary::seconds_interpolation);
// clang-format on

// What a run made, as the manifest's summary records it: the maps and the parameters that made them.
struct MapsRecord {
  const dtfe::SurfaceMaps& maps;
  const DtfeParams& params;
  std::size_t n_fields;
  std::vector<std::string> quicklooks;  // the PNG of each field, when asked for
};

// clang-format off: one field per line
const manifest::Fields<MapsRecord> kSummary =
    manifest::Fields<MapsRecord>()
        .field("n_fields", &MapsRecord::n_fields)
        .field("n_particles_in_windows", [](const MapsRecord& r) { return manifest::Json(r.maps.summary.n_particles); })
        .field("window_mass", [](const MapsRecord& r) { return manifest::Json(r.maps.summary.window_mass); })
        .field("map_mass", [](const MapsRecord& r) { return manifest::Json(r.maps.summary.map_mass); })
        .field("rays",
               [](const MapsRecord& r) {
                 const auto side = static_cast<std::uint64_t>(r.params.maps.resolution);
                 return manifest::Json(static_cast<std::uint64_t>(r.n_fields) * side * side *
                                       static_cast<std::uint64_t>(r.params.maps.map.samples));
               })
        .fields(kWork, [](const MapsRecord& r) -> const SurfaceMapsSummary& { return r.maps.summary; })
        .field("units",
               [](const MapsRecord& r) {
                 const model::MapsMeta& meta = r.maps.maps.meta;
                 return manifest::Json{
                     {"sigma", meta.sigma_units()}, {"mass", meta.mass_units}, {"length", meta.length_units}};
               })
        .field("schedule",
               [](const MapsRecord& r) {
                 const SurfaceMapsSummary& s = r.maps.summary;
                 return manifest::Json{{"kind", dtfe::to_string(r.params.maps.schedule)},
                                       {"decomposition", s.decomposition},
                                       {"fields_moved", s.fields_moved},
                                       {"busy_seconds_max", s.busy_seconds_max},
                                       {"busy_seconds_mean", s.busy_seconds_mean},
                                       {"model_samples", s.report.samples},
                                       {"model_c", s.report.model.triangulation.c},
                                       {"model_alpha", s.report.model.interpolation.alpha},
                                       {"model_beta", s.report.model.interpolation.beta}};
               })
        .field_if("quicklooks", [](const MapsRecord& r) -> std::optional<manifest::Json> {
          if (r.quicklooks.empty()) return std::nullopt;
          return manifest::Json(r.quicklooks);
        });
// clang-format on

// The manifest's resolved values and summary (totals over the fields, the schedule's work).
void record(tool::Context& ctx, const dtfe::SurfaceMaps& r, const DtfeParams& c, const std::vector<int>& types,
            const std::string& png_of_field, std::size_t n_fields) {
  const dtfe::SurfaceMapsSummary& s = r.summary;
  const model::MapsMeta& meta = r.maps.meta;
  manifest::Builder& m = ctx.manifest();
  m.parameter("depth_used", s.depth, meta.length_units);
  m.parameter("margin_rule", c.maps.auto_margin ? "auto" : "given");
  m.parameter("margin_used", s.margin_max, meta.length_units);
  m.parameter("size", c.maps.size, meta.length_units);
  m.parameter("backend_used", meta.backend);
  m.parameter("types_used", types);
  m.parameter("periodic", s.periodic);
  std::vector<std::string> quicklooks;
  if (!png_of_field.empty())
    for (std::size_t i = 0; i < n_fields; ++i) quicklooks.push_back(io::quicklook_path(png_of_field, i));
  ctx.summary(kSummary, MapsRecord{r, c, n_fields, std::move(quicklooks)});
}

// What the maps hold and cost: mass in the windows, NaN pixels outside the hull, the schedule's balance.
void log_maps(const dtfe::SurfaceMaps& r, const DtfeParams& c, std::size_t n_fields, const mpi::Comm& comm) {
  const model::Maps& maps = r.maps;
  core::log::info(
      "{} maps: mass {:.6g} of {:.6g} {} in the windows; triangulation {:.2f} s, maps {:.2f} s (summed over fields)",
      n_fields, r.summary.map_mass, r.summary.window_mass, maps.meta.mass_units, r.summary.seconds_triangulation,
      r.summary.seconds_interpolation);
  if (r.summary.pixels_outside > 0)
    core::log::warn(
        "{} pixels in {} of {} maps lie outside the triangulated hull and are NaN ({})",
        core::log::thousands(static_cast<long long>(r.summary.pixels_outside)), r.summary.fields_outside, n_fields,
        c.maps.auto_margin ? "the margin rule reached its widest window: a nearly empty slab?"
                           : "a larger --margin, or the default, which grows until the hull covers the map");
  if (comm.size() > 1)
    core::log::info("schedule {}: busy {:.2f} s max, {:.2f} s mean per rank; {} fields moved",
                    dtfe::to_string(c.maps.schedule), r.summary.busy_seconds_max, r.summary.busy_seconds_mean,
                    r.summary.fields_moved);
}

}  // namespace

void declare_dtfe_options(CLI::App& app, DtfeOptions& opt) {
  app.add_option("snapshot", opt.snapshot,
                 "Snapshot: HDF5 file(s) (Gadget/SWIFT/AREPO), Gadget binary, phew particles or a RAMSES output folder")
      ->required();
  app.add_option(
         "-c,--centers", opt.centers,
         "Field centres: text/CSV (x y z per line), FILE.h5[:/dataset] ([n][3]), or a clumps.h5 (haloes by mass)")
      ->required();
  app.add_option("--top", opt.top, "Use only the first N centres (clumps.h5: the N most massive haloes); 0 = all")
      ->capture_default_str();
  app.add_option("-L,--size", opt.size, "Side of each square map, snapshot length units (> 0)")->required();
  app.add_option("--resolution", opt.resolution, "Pixels per side of each map (> 0)")->required();
  app.add_option("-d,--depth", opt.depth,
                 "Integration depth along the line of sight: a length, or 'box' for the whole box (default: the size)");
  app.add_option(
      "--margin", opt.margin,
      "Extra width triangulated around each map so its edges see no hull boundary (default: per field, size / 10 "
      "doubled until the hull covers the map with half the margin to spare)");
  app.add_option("-a,--axis", opt.axis, "Line of sight: x, y or z (maps are (y, z), (z, x), (x, y))")
      ->capture_default_str();
  app.add_option("-k,--samples", opt.samples, "Rays per pixel in ray mode (> 1: the Monte Carlo mean over the pixel)")
      ->capture_default_str();
  app.add_option("--mode", opt.mode,
                 "ray (one ray per pixel centre, the paper's kernel) or exact (the exact pixel average)")
      ->capture_default_str();
  app.add_option("-b,--backend", opt.backend, "Triangulation: auto (CGAL when built, else Qhull), cgal or qhull")
      ->capture_default_str();
  tool::add_threads_option(app, opt.threads);
  app.add_option("--schedule", opt.schedule,
                 "Work sharing between ranks: none, model (the paper's a-priori schedule) or dynamic")
      ->capture_default_str();
  tool::declare_types_option(app, opt.types, tool::AutoTypes::centres_grid);
  tool::declare_units_option(app, opt.units);
  app.add_option("-p,--precision", opt.precision, "Map precision: float32 or float64")->capture_default_str();
  app.add_flag("--png", opt.png,
               "Also write a PNG quicklook per field (log scale) beside the output: OUTPUT.0001.png ...");
}

DtfeParams check_dtfe_options(const DtfeOptions& opt) {
  DtfeParams c;
  dtfe::SurfaceMapsParams& p = c.maps;
  if (!(opt.size > 0) || !std::isfinite(opt.size))
    throw core::Error::usage("--size {} must be a positive length", opt.size);
  if (opt.resolution <= 0)
    throw core::Error::usage("--resolution {} must be a positive number of pixels", opt.resolution);
  if (opt.resolution > 65536) throw core::Error::usage("--resolution {} is too large (at most 65536)", opt.resolution);
  if (opt.top < 0) throw core::Error::usage("--top {} must be 0 (all) or positive", opt.top);
  p.size = opt.size;
  p.resolution = opt.resolution;
  if (opt.depth.empty())
    p.depth = opt.size;
  else if (opt.depth != "box")
    p.depth = core::parse_number<double>(opt.depth, "--depth");
  if (p.depth && !(*p.depth > 0)) throw core::Error::usage("--depth {} must be a positive length (or box)", *p.depth);
  p.auto_margin = opt.margin.empty();
  p.margin = p.auto_margin ? opt.size / 10 : core::parse_number<double>(opt.margin, "--margin");
  if (p.margin < 0) throw core::Error::usage("--margin {} must not be negative", p.margin);
  if (opt.axis == "x" || opt.axis == "0")
    p.axis = 0;
  else if (opt.axis == "y" || opt.axis == "1")
    p.axis = 1;
  else if (opt.axis == "z" || opt.axis == "2")
    p.axis = 2;
  else
    throw core::Error::usage("--axis '{}': expected x, y or z", opt.axis);
  if (opt.samples < 1) throw core::Error::usage("--samples {} must be at least 1", opt.samples);
  p.map.samples = opt.samples;
  p.map.mode = dtfe::parse_map_mode(opt.mode);
  if (p.map.mode == dtfe::MapMode::exact && opt.samples != 1)
    throw core::Error::usage("--samples applies to --mode ray only (exact mode averages over the whole pixel)");
  p.map.backend = dtfe::parse_backend(opt.backend);
  c.threads = tool::parse_threads(opt.threads);
  p.schedule = dtfe::parse_schedule(opt.schedule);
  if (opt.precision == "float64")
    c.float64 = true;
  else if (opt.precision != "float32")
    throw core::Error::usage("--precision '{}': expected float32 or float64", opt.precision);
  return c;
}

namespace {
// --types: auto takes the types of a clumps.h5's grid (docs/cli.md, "Particle types"); a map may show
// other types than the catalogue was found in (a galaxy's stars around its halo).
std::vector<int> map_types(const particles::SnapshotInfo& info, const DtfeOptions& opt) {
  return chain_types(info, opt.types, centers_grid_types(opt.centers), true);
}
}  // namespace

void run_dtfe_surface(const DtfeOptions& opt, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  DtfeParams c = check_dtfe_options(opt);
  const int node_ranks = mpi::ranks_on_node(comm);
  c.maps.map.threads = tool::threads_to_use(c.threads, ctx);

  ctx.phase("open");
  const std::unique_ptr<particles::SnapshotReader> reader =
      tool::open_snapshot_with_units(opt.snapshot, opt.units, comm, &ctx.manifest());
  std::vector<int> types;
  Centers centers;
  mpi::agree(comm, [&] { types = map_types(reader->info(), opt); });
  ctx.add_external_inputs(reader->info().files, "snapshot");
  ctx.add_inputs([&] { return std::vector<manifest::Input>{centers_input(opt.centers)}; });
  mpi::agree(comm, [&] { centers = read_centers(opt.centers, opt.top); });
  const particles::SnapshotInfo& info = reader->info();
  const std::uint64_t n_total = info.total(types);
  const std::size_t n_fields = centers.position.size();
  for (std::size_t i = 0; opt.png && i < n_fields; ++i) ctx.plan_side_output(io::quicklook_path(ctx.output(), i));
  core::log::info("{}: {} snapshot, {} particles of types {}; {} fields from {} ({})", info.files.front(), info.format,
                  core::log::thousands(static_cast<long long>(n_total)), opt.types, n_fields, opt.centers,
                  centers.source);

  ctx.phase("read");
  mpi::agree(comm, [&] {
    core::check_memory(3.0 * 32.0 * static_cast<double>(n_total) / comm.size() * node_ranks,
                       core::available_memory_bytes(),
                       fmt::format("reading {} particles", core::log::thousands(static_cast<long long>(n_total))));
  });
  particles::ParticleSet particles = read_share(*reader, types, particles::FieldSelection{}, comm);
  dtfe::SurfaceMaps r =
      dtfe::surface_maps({std::move(particles.position), std::move(particles.mass), info.box_size, info.periodic,
                          std::move(centers.position), std::move(centers.id), info.files.front(), opt.centers},
                         c.maps, comm, [&](const std::string& phase) { ctx.phase(phase); });
  particles = particles::ParticleSet{};

  ctx.phase("write");
  model::Maps& maps = r.maps;
  maps.meta.length_units = info.units.length_name();
  maps.meta.mass_units = info.units.mass_name();
  maps.meta.centers_source = centers.source;
  maps.meta.time = info.time;
  maps.meta.redshift = info.redshift;
  maps.meta.float64 = c.float64;
  record(ctx, r, c, types, opt.png ? ctx.output() : std::string(), n_fields);
  log_maps(r, c, n_fields, comm);
  ctx.write_output([&](io::File& f) { io::write_maps(f, maps, comm); });

  if (opt.png) ctx.rank_files(io::quicklooks(ctx.output(), maps, comm));  // committed with the maps
}

}  // namespace phew::tools
