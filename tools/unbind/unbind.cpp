#include "unbind.hpp"

#include "unbind_input.hpp"

#include <phew/core/error.hpp>
#include <phew/io/bound_file.hpp>
#include <phew/tool/snapshot_input.hpp>
#include <phew/tool/threads_option.hpp>
#include <phew/unbind/catalogue.hpp>
#include <phew/unbind/frame.hpp>
#include <phew/unbind/gas.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>

namespace phew::tools {

void declare_unbind_options(CLI::App& app, UnbindOptions& opt) {
  app.add_option("clumps", opt.clumps, "Clumps from phew-merge (clumps.h5), or deblend's peaks (peaks.h5)")->required();
  app.add_option("snapshot", opt.snapshot, "The snapshot the grid was made from")->required();
  app.add_option("--potential", opt.potential,
                 "profile: spherical, from the bound mass profile around the centre (RAMSES); tree: pairwise, "
                 "Barnes-Hut (direct summation below 2000 particles)")
      ->capture_default_str();
  app.add_option("--centre", opt.centre,
                 "The centre the potential and the properties use: peak, most-bound, potential-minimum, "
                 "shrinking-sphere, centre-of-mass")
      ->capture_default_str();
  app.add_option("--softening", opt.softening,
                 "Plummer softening, comoving, in the snapshot's length units (default: 1/30 of the mean "
                 "interparticle spacing of the grid)");
  app.add_flag("--saddle", opt.saddle,
               "A sub-object keeps only the particles that cannot escape over its key saddle (RAMSES' saddle_pot; "
               "implies --potential-of-all; reads the patches.h5 the clumps were made from)");
  app.add_flag("--potential-of-all", opt.potential_of_all,
               "The potential of every particle given to an object, bound or not (RAMSES' default), instead of "
               "the bound ones' recomputed at every pass");
  app.add_option("--min-bound", opt.min_bound,
                 "Fewest bound particles an object keeps; fewer: it dissolves into its parent")
      ->capture_default_str();
  app.add_option("--most-bound", opt.most_bound, "Most-bound particles listed per object (/most_bound)")
      ->capture_default_str();
  app.add_option("--max-iterations", opt.max_iterations, "Removal passes per object at most")->capture_default_str();
  tool::declare_types_option(app, opt.types, tool::AutoTypes::grid);
  app.add_flag("--allow-other-types", opt.allow_other_types, "Accept --types other than those the grid was made of");
  tool::declare_units_option(app, opt.units);
  tool::add_threads_option(app, opt.threads, "each unbinds whole haloes");
  app.add_option(
         "--batch-particles", opt.batch_particles,
         "Particles a rank gathers and unbinds at once, in whole haloes (a bigger halo alone): bounds its memory")
      ->capture_default_str();
  app.add_option("--apertures", opt.apertures_kpc,
                 "Radii of the spherical apertures of the per-type masses, physical kpc, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--export-yt", opt.export_yt,
                 "Also write the objects with bound particles as a halo catalogue yt loads (NAME.0.h5: yt's "
                 "halo_catalog frontend)")
      ->check(tool::non_empty_name);
}

UnbindParams check_unbind_options(const UnbindOptions& opt) {
  UnbindParams c;
  c.params.potential = unbind::parse_potential_mode(opt.potential);
  c.params.centre = unbind::parse_centre_kind(opt.centre);
  // The profile potential is spherical about the centre, so its deepest particle is the one nearest the
  // centre: a centre taken from it only follows itself (docs/tools/unbind.md).
  if (c.params.potential == unbind::PotentialMode::profile &&
      (c.params.centre == unbind::CentreKind::most_bound || c.params.centre == unbind::CentreKind::potential_minimum))
    throw core::Error::usage(
        "--centre {} needs --potential tree: the profile potential is spherical about the centre, so "
        "the particle it makes deepest is the one nearest the centre",
        opt.centre);
  // With the bound particles' potential a saddle threshold cascades (docs/unbind-method.md, "Whose potential").
  c.params.saddle = opt.saddle;
  c.params.potential_of_all = opt.potential_of_all || opt.saddle;
  if (opt.softening && !(*opt.softening >= 0 && std::isfinite(*opt.softening)))
    throw core::Error::usage("--softening {} must be a finite length >= 0 (leave it out for the default)",
                             *opt.softening);
  c.softening = opt.softening;
  if (opt.min_bound < 1) throw core::Error::usage("--min-bound {} must be at least 1", opt.min_bound);
  if (opt.most_bound < 0) throw core::Error::usage("--most-bound {} must be at least 0", opt.most_bound);
  if (opt.batch_particles < 1) throw core::Error::usage("--batch-particles {} must be at least 1", opt.batch_particles);
  if (opt.max_iterations < 1) throw core::Error::usage("--max-iterations {} must be at least 1", opt.max_iterations);
  c.params.min_bound = static_cast<std::size_t>(opt.min_bound);
  c.params.n_most_bound = static_cast<std::size_t>(opt.most_bound);
  c.params.max_iterations = opt.max_iterations;
  c.threads = tool::parse_threads(opt.threads);
  if (opt.apertures_kpc.size() > model::kMaxApertures)
    throw core::Error::usage("--apertures: {} radii, at most {}", opt.apertures_kpc.size(), model::kMaxApertures);
  for (const double r : opt.apertures_kpc)
    if (!(r > 0 && std::isfinite(r)))
      throw core::Error::usage("--apertures: {} is not a radius (physical kpc, > 0)", r);
  if (!opt.export_yt.empty()) {
    // yt finds the files of a catalogue as PREFIX.N.h5 (its halo_catalog frontend).
    const std::string name = opt.export_yt.substr(opt.export_yt.find_last_of('/') + 1);
    const auto dot = name.rfind(".0.h5");
    if (dot == std::string::npos || dot + 5 != name.size() || dot == 0)
      throw core::Error::usage("--export-yt {} must be named NAME.0.h5 (yt reads a halo catalogue as NAME.N.h5)",
                               opt.export_yt);
  }
  return c;
}

namespace {

// clang-format off: one column and its constraints per line
const manifest::Fields<unbind::Unbound> kSummary =
    manifest::Fields<unbind::Unbound>()
        .field("n_objects", &unbind::Unbound::n_objects)
        .field("n_haloes", &unbind::Unbound::n_haloes)
        .field("n_particles", &unbind::Unbound::n_particles)
        .field("n_bound", &unbind::Unbound::n_bound)
        .field("n_unbound", &unbind::Unbound::n_unbound)
        .field("n_passed", &unbind::Unbound::n_passed)
        .field("n_dissolved", &unbind::Unbound::n_dissolved)
        .field("n_single", &unbind::Unbound::n_single)
        .field("n_not_converged", &unbind::Unbound::n_not_converged)
        .field("n_batches", &unbind::Unbound::n_batches)
        .field("largest_halo", &unbind::Unbound::largest_halo)
        .field("largest_batch", &unbind::Unbound::largest_batch)
        .field("n_spread", &unbind::Unbound::n_spread)
        .field("seconds_by_size", [](const unbind::Unbound& u) {
          manifest::Json rows = manifest::Json::array();
          // clang-format on
          for (const unbind::SizeBin& b : u.seconds_by_size)
            rows.push_back(
                {{"smallest", b.smallest}, {"haloes", b.haloes}, {"particles", b.particles}, {"seconds", b.seconds}});
          return rows;
        });

}  // namespace

void run_unbind(const UnbindOptions& opt, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  const UnbindParams checked = check_unbind_options(opt);
  if (!opt.export_yt.empty()) ctx.plan_output(opt.export_yt);

  ctx.phase("open");
  const std::unique_ptr<particles::SnapshotReader> reader =
      tool::open_snapshot_with_units({opt.snapshot}, opt.units, comm, &ctx.manifest());
  const particles::SnapshotInfo& info = reader->info();
  UnbindInput in = read_unbind_input(opt, info, ctx);
  if (checked.params.saddle) add_key_saddles(opt, in, ctx);
  unbind::Params params = checked.params;
  for (const int t : in.types)  // a column per type the format has (not RAMSES' unused codes)
    if (info.format_has_type(t)) params.types.push_back(t);
  params.apertures = unbind::aperture_radii(info, opt.apertures_kpc);
  const unbind::Frame frame = unbind::frame_of(info, in.grid, checked.softening, info.total(in.types));
  // Threads share a rank's haloes (the tree potential's Forest works on mpi::Comm::self(): no MPI call)
  // and the searches that find a particle's cell.
  const int threads = tool::threads_to_use(checked.threads, ctx);
  std::vector<particles::CellMember> members = read_unbind_members(opt, in, *reader, threads, ctx);

  ctx.manifest().parameter("batch_particles", opt.batch_particles);
  unbind::Unbound u = unbind::unbind_objects(std::move(members), in.objects, frame, params, threads,
                                             opt.batch_particles, comm, [&](const std::string& p) { ctx.phase(p); });

  // The bound gas's temperature and star-forming mass, joined by particle ID (when it has those fields).
  unbind::GasColumns gas;
  if (std::find(params.types.begin(), params.types.end(), 0) != params.types.end())
    gas = unbind::add_gas_properties(u.objects, u.particles, *reader, comm);
  ctx.phase("write");
  ctx.manifest().parameter("gravitational_constant", frame.G, tool::gravitational_constant_units(info.units));
  ctx.manifest().parameter("scale_factor_used", frame.scale_factor);
  ctx.manifest().parameter("hubble_used", frame.hubble);
  ctx.manifest().parameter("softening_used", frame.softening, in.grid.length_units);
  ctx.manifest().parameter("types_used", in.types);
  ctx.summary(kSummary, u);
  model::Bound out{in.grid,
                   unbind::bound_meta(frame, params, info, opt.apertures_kpc),
                   std::move(u.objects),
                   std::move(u.particles),
                   std::move(u.most_bound),
                   std::move(u.by_type)};
  out.meta.gas_temperature = gas.temperature;
  out.meta.star_forming_gas = gas.star_forming;
  ctx.write_output([&](io::File& f) { io::write_bound(f, out, comm); });
  if (!opt.export_yt.empty())
    ctx.write_output(opt.export_yt, "yt-halo-catalogue",
                     [&](io::File& f) { io::write_yt_halo_catalogue(f, out, comm); });
}

}  // namespace phew::tools
