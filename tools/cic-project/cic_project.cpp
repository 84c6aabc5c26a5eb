#include "cic_project.hpp"

#include "grid_choice.hpp"

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>
#include <phew/core/parse.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/particles/projection.hpp>
#include <phew/tool/field_file.hpp>
#include <phew/tool/snapshot_input.hpp>
#include <phew/tool/threads_option.hpp>

#include <CLI/CLI.hpp>

#include <cmath>

namespace phew::tools {
namespace {
constexpr double kSaneDensityRatio[2] = {0.01, 100};  // mean / critical density of a whole cosmological box

// The mesh written, as the manifest records it: the same lines for the uniform grid and the adaptive
// mesh, its refinement besides.
struct MeshRecord {
  const grid::GridMeta& meta;
  std::uint64_t particles_outside = 0;
  std::optional<model::AmrRefinement> refinement;  // none: the uniform grid
};

// clang-format off: one field per line
const manifest::Fields<MeshRecord> kSummary =
    manifest::Fields<MeshRecord>()
        .field("n_particles", [](const MeshRecord& r) { return manifest::Json(r.meta.n_particles); })
        .field("n_particles_outside", &MeshRecord::particles_outside)
        .field("total_mass", [](const MeshRecord& r) { return manifest::Json(r.meta.total_mass); })
        .field("mean_density", [](const MeshRecord& r) { return manifest::Json(r.meta.mean_density); })
        .field("units",
               [](const MeshRecord& r) {
                 return manifest::Json{
                     {"density", r.meta.density_units}, {"mass", r.meta.mass_units}, {"length", r.meta.length_units}};
               })
        .field_if("leaves_per_level",
                  [](const MeshRecord& r) -> std::optional<manifest::Json> {
                    if (!r.refinement) return std::nullopt;
                    return manifest::Json(r.refinement->leaves_per_level);
                  })
        .field_if("mean_over_critical", [](const MeshRecord& r) -> std::optional<manifest::Json> {
          if (!r.meta.critical_density) return std::nullopt;
          return manifest::Json(r.meta.mean_density / *r.meta.critical_density);
        });
// clang-format on

void record_mesh(tool::Context& ctx, const MeshRecord& r, const std::vector<int>& types, const CicParams& params) {
  manifest::Builder& m = ctx.manifest();
  const grid::GridMeta& meta = r.meta;
  m.parameter("grid_shape", meta.geometry.shape);
  m.parameter("grid_origin", meta.geometry.origin, meta.length_units);
  m.parameter("grid_box_size", meta.geometry.extent, meta.length_units);
  m.parameter("periodic", meta.geometry.periodic);
  m.parameter("types_used", types);
  m.parameter("assignment_used", meta.assignment);
  m.parameter("compress", params.compress);
  if (r.refinement) {
    m.parameter("refine_particles", r.refinement->refine_particles);
    m.parameter("refine_mass", r.refinement->refine_mass, meta.mass_units);
    m.parameter("levels", r.refinement->levels);
    m.parameter("buffer", r.refinement->buffer);
  }
  ctx.summary(kSummary, r);
}

}  // namespace

void declare_cic_options(CLI::App& app, CicOptions& opt) {
  app.add_option(
         "snapshot", opt.snapshot,
         "Snapshot: HDF5 file(s) (Gadget/SWIFT/AREPO), Gadget binary, phew particles or a RAMSES output folder; "
         "one piece of a multi-file snapshot finds the others")
      ->required();
  app.add_option("-g,--grid", opt.grid,
                 "Grid cells: N, NX,NY,NZ, or auto (the grid rule: the finest grid on which a cell at the "
                 "--for-threshold density holds at least one particle mass; without --grid, the rule's choice is "
                 "suggested)");
  app.add_option("--for-threshold", opt.for_threshold, "The threshold (NUMBERmean) --grid auto plans for")
      ->capture_default_str();
  tool::declare_types_option(app, opt.types, tool::AutoTypes::dark_matter);
  tool::declare_units_option(app, opt.units);
  app.add_option("--region", opt.region,
                 "Sub-box x0,y0,z0,x1,y1,z1 in snapshot length units (not periodic; particles outside are ignored)");
  app.add_option("--assignment", opt.assignment, "Mass assignment: cic, ngp or tsc")->capture_default_str();
  app.add_option("-p,--precision", opt.precision, "Output precision: float32 or float64")->capture_default_str();
  app.add_option(
      "--refine", opt.refine,
      "An adaptive mesh: split a cell holding more than this many particle masses (RAMSES' m_refine, e.g. 8); "
      "--grid is then the coarse grid");
  app.add_option("--levels", opt.levels,
                 "With --refine: levels of refinement above the coarse grid (RAMSES' levelmax - levelmin)")
      ->capture_default_str();
  app.add_option("--buffer", opt.buffer, "With --refine: cells around a split cell split too (RAMSES' nexpand)")
      ->capture_default_str();
  app.add_flag("--compress", opt.compress,
               "Store the density in chunks of one plane, shuffled and deflated (smaller, slower to write; "
               "bench/README.md has the figures)");
  tool::add_threads_option(app, opt.threads, "they share the deposit (uniform grid or adaptive mesh)");
}

CicParams check_cic_options(const CicOptions& opt) {
  CicParams p;
  p.auto_grid = opt.grid == "auto";
  if (!opt.grid.empty() && !p.auto_grid) p.shape = grid::parse_grid_shape(opt.grid);
  const std::string& t = opt.for_threshold;
  const auto mean = t.size() > 4 && t.ends_with("mean") ? t.substr(0, t.size() - 4) : std::string();
  p.for_threshold = mean.empty() ? 0.0 : core::parse_number<double>(mean, "--for-threshold");
  if (!(p.for_threshold > 0)) throw core::Error::usage("--for-threshold '{}': expected NUMBERmean, e.g. 80mean", t);
  if (!opt.region.empty()) p.region = grid::parse_region(opt.region);
  p.assignment = grid::parse_assignment(opt.assignment);
  p.precision = io::parse_precision(opt.precision);
  p.compress = opt.compress;
  p.threads = tool::parse_threads(opt.threads);
  if (opt.refine != 0) {
    p.octree = particles::octree_params(opt.refine, opt.levels, opt.buffer);
  }
  return p;
}

namespace {

// The mesh in words: the uniform grid's cells, or the octree over them and its leaves per level.
std::string mesh_words(const grid::GridMeta& meta, const std::optional<model::AmrRefinement>& refinement) {
  const auto& n = meta.geometry.shape;
  if (!refinement) return fmt::format("{}x{}x{} cells ({})", n[0], n[1], n[2], meta.assignment);
  std::string levels;
  for (const std::uint64_t leaves : refinement->leaves_per_level)
    levels += fmt::format("{}{}", levels.empty() ? "" : ", ", core::log::thousands(static_cast<long long>(leaves)));
  return fmt::format("an octree over {}x{}x{} cells ({}), leaves per level {}", n[0], n[1], n[2], meta.assignment,
                     levels);
}

// What the deposit did: particles left out of a region, the mass and mean density, and a warning when the
// mean density is far from what a cosmological box holds (wrong units).
void log_projection(const MeshRecord& r, const particles::SnapshotInfo& info, const CicParams& params,
                    std::uint64_t n_total) {
  const grid::GridMeta& meta = r.meta;
  if (r.particles_outside > 0) {
    // In an open box, what leaves a fixed region is lost to every later stage: a warning. A sub-box of a
    // periodic box leaves the rest out on purpose.
    const double fraction =
        static_cast<double>(r.particles_outside) / static_cast<double>(std::max<std::uint64_t>(n_total, 1));
    if (!info.periodic)
      core::log::warn(
          "{} particles ({:.1f}%) lie outside the region and are left out: enlarge --region if they belong to "
          "the structures (docs/tutorial.md, \"Isolated simulations\")",
          core::log::thousands(static_cast<long long>(r.particles_outside)), 100 * fraction);
    else
      core::log::info("{} particles outside the region were ignored",
                      core::log::thousands(static_cast<long long>(r.particles_outside)));
  }
  core::log::info("deposited {} particles, mass {:.6g} {}, on {}; mean density {:.6g} {}",
                  core::log::thousands(static_cast<long long>(meta.n_particles)), meta.total_mass, meta.mass_units,
                  mesh_words(meta, r.refinement), meta.mean_density, meta.density_units);
  if (meta.critical_density) {
    const double ratio = meta.mean_density / *meta.critical_density;
    core::log::info("mean density / critical density = {:.4f} (a = {:.4g}, z = {:.4g})", ratio, info.time,
                    info.redshift);
    // A whole cosmological box holds Omega_m of the critical density; far from it, the units are wrong.
    // Units that were inferred fit; assumed ones that fit nothing were warned about already.
    const bool warned = info.units.source == particles::UnitsSource::assumed && info.units.density_ratio > 0;
    if (info.periodic && info.comoving && !params.region && !warned &&
        (ratio < kSaneDensityRatio[0] || ratio > kSaneDensityRatio[1]))
      core::log::warn(
          "the mean density is {:.4g} times the critical density, where a cosmological box holds about Omega_m: "
          "are the snapshot's units right ({} and {}, source: {})? Give --units if not",
          ratio, info.units.length_name(), info.units.mass_name(), info.units.source_name());
  }
}

}  // namespace

void run_cic_project(const CicOptions& opt, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  const CicParams params = check_cic_options(opt);

  ctx.phase("open");
  const std::unique_ptr<particles::SnapshotReader> reader =
      tool::open_snapshot_with_units(opt.snapshot, opt.units, comm, &ctx.manifest());
  std::vector<int> types;
  grid::GridGeometry geometry;
  mpi::agree(comm, [&] {
    types = selected_types(reader->info(), opt.types);
    geometry = projection_geometry(reader->info(), params.shape, params.region);
    if (params.shape[0] == 0) geometry.shape = auto_grid_shape(reader->info(), types, geometry, params);
  });
  ctx.add_external_inputs(reader->info().files, "snapshot");
  const particles::SnapshotInfo& info = reader->info();
  const std::uint64_t n_total = info.total(types);
  core::log::info("{}: {} snapshot, {} file(s), {} particles of types {}", info.files.front(), info.format,
                  info.files.size(), core::log::thousands(static_cast<long long>(n_total)), opt.types);

  check_projection_memory(geometry, n_total, params.precision, comm);

  const particles::ProjectionParams projection{geometry, params.assignment, params.region.has_value(),
                                               tool::threads_to_use(params.threads, ctx),
                                               params.precision == io::Precision::f32};
  const particles::Projection mesh =
      particles::project(*reader, types, projection, params.octree, comm, [&](const std::string& p) { ctx.phase(p); });
  const MeshRecord record{mesh.meta, mesh.particles_outside, mesh::refinement_of(mesh.field)};
  log_projection(record, info, params, n_total);
  ctx.log_memory_per(mesh::local_cells(mesh.field), mesh::cell_word(mesh.field));

  ctx.phase("write");
  record_mesh(ctx, record, types, params);
  ctx.write_output(
      [&](io::File& f) { tool::write_field(f, mesh.meta, mesh.field, params.precision, params.compress, comm); });
}

}  // namespace phew::tools
