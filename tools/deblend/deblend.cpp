#include "deblend.hpp"

#include "clump_peak_file.hpp"

#include <phew/core/error.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/io/peaks_file.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/tool/cells_input.hpp>
#include <phew/tool/snapshot_input.hpp>
#include <phew/tool/threads_option.hpp>

#include <CLI/CLI.hpp>

#include <cmath>
#include <optional>

namespace phew::tools {

void declare_deblend_options(CLI::App& app, DeblendOptions& opt) {
  app.add_option("clumps", opt.clumps, "Clumps from phew-merge (clumps.h5)")->required();
  app.add_option("snapshot", opt.snapshot, "The snapshot the grid was made from")->required();
  app.add_option("-f,--bin-fraction", opt.bin_fraction, "Velocity bin size in units of the patch escape velocity")
      ->capture_default_str();
  app.add_option("--min-particles", opt.min_particles,
                 "Fewest particles for a patch to be deblended and for a velocity peak to be kept")
      ->capture_default_str();
  app.add_option("--velocity-relevance", opt.velocity_relevance,
                 "Relevance threshold (peak / key saddle) for velocity peaks, > 1")
      ->capture_default_str();
  tool::declare_types_option(app, opt.types, tool::AutoTypes::grid);
  app.add_flag("--allow-other-types", opt.allow_other_types, "Accept --types other than those the grid was made of");
  tool::declare_units_option(app, opt.units);
  app.add_flag("--off", opt.off, "No velocity deblending: every patch passes through as one peak (peaks.h5 as usual)");
  tool::add_threads_option(app, opt.threads, "they split patches side by side");
}

phasespace::DeblendParams check_deblend_options(const DeblendOptions& opt) {
  if (!(opt.bin_fraction > 0) || !std::isfinite(opt.bin_fraction))
    throw core::Error::usage("--bin-fraction {} must be a finite number > 0", opt.bin_fraction);
  if (!(opt.velocity_relevance > 1) || !std::isfinite(opt.velocity_relevance))
    throw core::Error::usage("--velocity-relevance {} must be a finite number above 1", opt.velocity_relevance);
  if (opt.min_particles < 2) throw core::Error::usage("--min-particles {} must be at least 2", opt.min_particles);
  phasespace::DeblendParams p;
  p.bin_fraction = opt.bin_fraction;
  p.min_particles = opt.min_particles;
  p.velocity_relevance = opt.velocity_relevance;
  p.split = !opt.off;
  p.threads = tool::parse_threads(opt.threads);  // 0: auto, resolved on the ranks
  return p;
}

namespace {

// clang-format off: one column and its constraints per line
const manifest::Fields<phasespace::Deblended> kSummary =
    manifest::Fields<phasespace::Deblended>()
        .field("n_peaks", &phasespace::Deblended::n_peaks)
        .field("n_split_patches", &phasespace::Deblended::n_split)
        .field("n_new_peaks", &phasespace::Deblended::n_new)
        .field("n_particles_in_patches", &phasespace::Deblended::n_particles);
// clang-format on

}  // namespace

namespace {

// The frame the escape velocities were computed in, and the particle types read.
void record_used(manifest::Builder& m, const phasespace::DeblendParams& params, const particles::Units& units,
                 const std::vector<int>& types) {
  m.parameter("gravitational_constant", params.G, tool::gravitational_constant_units(units));
  m.parameter("scale_factor_used", params.scale_factor);
  m.parameter("types_used", types);
}

}  // namespace

void run_deblend(const DeblendOptions& opt, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  phasespace::DeblendParams params = check_deblend_options(opt);

  ctx.phase("open");
  std::vector<int> types;
  std::optional<io::File> clumps;
  model::Peaks out;
  mesh::CellSpace space = mesh::CellSpace::uniform({});  // the clumps' mesh, uniform or adaptive
  std::int64_t n_clump_peaks = 0;
  ctx.add_input(opt.clumps, {"clumps"});  // the kind first: a wrong file is named as such, not by a missing dataset
  const std::unique_ptr<particles::SnapshotReader> reader =
      tool::open_snapshot_with_units({opt.snapshot}, opt.units, comm, &ctx.manifest());
  const particles::SnapshotInfo& info = reader->info();
  mpi::agree(comm, [&] {
    clumps.emplace(io::File::open_read(opt.clumps));
    if (!info.has_velocities) throw core::Error::input("{}: the snapshot has no velocities", opt.snapshot);
    types = chain_types(info, opt.types, manifest::grid_types_in_chain(opt.clumps), opt.allow_other_types);
    const io::ClumpsHeader header = io::read_clumps_header(*clumps);
    out.grid = header.grid;
    space = tool::cell_space(header.grid, header.refinement);
    n_clump_peaks = static_cast<std::int64_t>(header.n_peaks);
    check_snapshot_matches_grid(info, out.grid, opt.snapshot, opt.clumps);
  });
  ctx.add_inputs([&] { return manifest::snapshot_inputs_in_chain(opt.clumps, info.files); });
  // Positions are comoving, velocities peculiar (the readers convert); v_e compares physical quantities.
  params.G = info.units.gravitational_constant();
  params.scale_factor = info.comoving ? info.time : 1.0;
  params.threads = tool::threads_to_use(params.threads, ctx);

  ctx.phase("read");
  particles::FieldSelection fields;
  fields.ids = fields.velocities = true;
  const particles::ParticleSet particles = read_share(*reader, types, fields, comm);
  // Each rank takes a run of cells balanced by test cells (the work here: their particles).
  tool::RankCells cells;
  mpi::agree(comm, [&] { cells = tool::read_rank_clump_cells(*clumps, space, comm); });
  phasespace::Deblended d =
      deblend_patches(space, cells.cuts, particles, cells.labels, n_clump_peaks, ClumpPeakFile(*clumps), params, comm,
                      [&](const std::string& p) { ctx.phase(p); });
  clumps.reset();

  ctx.phase("write");
  record_used(ctx.manifest(), params, info.units, types);
  ctx.summary(kSummary, d);
  out.meta = {info.time, info.redshift, params.G, n_clump_peaks + 1, info.units.peculiar_velocity_name()};
  out.peaks = std::move(d.peaks);
  out.particles = std::move(d.particles);
  ctx.write_output([&](io::File& f) { io::write_peaks(f, out, comm); });
}

}  // namespace phew::tools
