#include "unbind.hpp"

#include <phew/core/error.hpp>
#include <phew/gravity/setup.hpp>
#include <phew/io/bound_file.hpp>
#include <phew/io/cells_file.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/io/patches_file.hpp>
#include <phew/io/peaks_file.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/tool/snapshot_input.hpp>
#include <phew/tool/threads_option.hpp>
#include <phew/unbind/catalogue.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <optional>

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
  app.add_option("--min-bound", opt.min_bound, "Fewest bound particles an object keeps; fewer: it dissolves into its parent")
      ->capture_default_str();
  app.add_option("--most-bound", opt.most_bound, "Most-bound particles listed per object (/most_bound)")->capture_default_str();
  app.add_option("--max-iterations", opt.max_iterations, "Removal passes per object at most")->capture_default_str();
  app.add_option("-t,--types", opt.types, "Particle types (auto: those the grid was made of, from the provenance chain)")
      ->capture_default_str();
  app.add_flag("--allow-other-types", opt.allow_other_types, "Accept --types other than those the grid was made of");
  tool::declare_units_option(app, opt.units);
  tool::add_threads_option(app, opt.threads, "each unbinds whole haloes");
  app.add_option("--batch-particles", opt.batch_particles,
                 "Particles a rank gathers and unbinds at once, in whole haloes (a bigger halo alone): bounds its memory")
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
    throw core::Error::usage("--centre {} needs --potential tree: the profile potential is spherical about the centre, so "
                             "the particle it makes deepest is the one nearest the centre", opt.centre);
  // With the bound particles' potential a saddle threshold cascades (docs/unbind-method.md, "Whose potential").
  c.params.saddle = opt.saddle;
  c.params.potential_of_all = opt.potential_of_all || opt.saddle;
  if (opt.softening && !(*opt.softening >= 0 && std::isfinite(*opt.softening)))
    throw core::Error::usage("--softening {} must be a finite length >= 0 (leave it out for the default)", *opt.softening);
  c.softening = opt.softening;
  if (opt.min_bound < 1) throw core::Error::usage("--min-bound {} must be at least 1", opt.min_bound);
  if (opt.most_bound < 0) throw core::Error::usage("--most-bound {} must be at least 0", opt.most_bound);
  if (opt.batch_particles < 1) throw core::Error::usage("--batch-particles {} must be at least 1", opt.batch_particles);
  if (opt.max_iterations < 1) throw core::Error::usage("--max-iterations {} must be at least 1", opt.max_iterations);
  c.params.min_bound = static_cast<std::size_t>(opt.min_bound);
  c.params.n_most_bound = static_cast<std::size_t>(opt.most_bound);
  c.params.max_iterations = opt.max_iterations;
  c.threads = tool::parse_threads(opt.threads);
  if (!opt.export_yt.empty()) {
    // yt finds the files of a catalogue as PREFIX.N.h5 (its halo_catalog frontend).
    const std::string name = opt.export_yt.substr(opt.export_yt.find_last_of('/') + 1);
    const auto dot = name.rfind(".0.h5");
    if (dot == std::string::npos || dot + 5 != name.size() || dot == 0)
      throw core::Error::usage("--export-yt {} must be named NAME.0.h5 (yt reads a halo catalogue as NAME.N.h5)", opt.export_yt);
  }
  return c;
}

namespace {

const manifest::Fields<unbind::Unbound> kSummary = manifest::Fields<unbind::Unbound>()
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
                                                       .field("seconds_by_size", [](const unbind::Unbound& u) {
                                                         manifest::Json rows = manifest::Json::array();
                                                         for (const unbind::SizeBin& b : u.seconds_by_size)
                                                           rows.push_back({{"smallest", b.smallest}, {"haloes", b.haloes},
                                                                           {"particles", b.particles}, {"seconds", b.seconds}});
                                                         return rows;
                                                       });

}  // namespace

void run_unbind(const UnbindOptions& opt, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  const UnbindParams checked = check_unbind_options(opt);
  if (!opt.export_yt.empty()) ctx.plan_output(opt.export_yt);

  ctx.phase("open");
  std::vector<int> types;
  std::optional<io::File> input;
  model::Bound out;
  std::optional<model::AmrRefinement> refinement;
  std::vector<unbind::ObjectRow> objects;
  std::uint64_t n_listed = 0;  // peaks.h5: the rows of /particles
  // The kind first: a wrong file is named as such, not by a missing dataset.
  const bool from_peaks = ctx.add_input(opt.clumps, {"clumps", "peaks"}).kind == "peaks";
  const std::unique_ptr<particles::SnapshotReader> reader = tool::open_snapshot_with_units({opt.snapshot}, opt.units, comm, &ctx.manifest());
  const particles::SnapshotInfo& info = reader->info();
  mpi::agree(comm, [&] {
    input.emplace(io::File::open_read(opt.clumps));
    if (!info.has_velocities) throw core::Error::input("{}: the snapshot has no velocities", opt.snapshot);
    types = chain_types(info, opt.types, manifest::grid_types_in_chain(opt.clumps), opt.allow_other_types);
    if (from_peaks) {
      // deblend's peaks: each its own object (a velocity peak has no saddle hierarchy).
      const io::PeaksHeader header = io::read_peaks_header(*input);
      out.grid = header.grid;
      n_listed = header.n_particles;
      for (const model::PeakRow& p : io::read_peak_rows(*input)) {
        objects.push_back({p.id, p.id, p.id, p.position});
      }
    } else {
      const io::ClumpsHeader header = io::read_clumps_header(*input);
      out.grid = header.grid;
      refinement = header.refinement;
      for (const model::Clump& c : io::read_clumps(*input)) objects.push_back({c.id, c.parent, c.halo, c.peak_position});
    }
    check_snapshot_matches_grid(info, out.grid, opt.snapshot, opt.clumps);
  });
  ctx.add_inputs([&] { return manifest::snapshot_inputs_in_chain(opt.clumps, info.files); });
  const mesh::CellSpace space = refinement ? mesh::CellSpace::octree(out.grid.geometry, refinement->levels)
                                           : mesh::CellSpace::uniform(out.grid.geometry);
  if (checked.params.saddle) {
    // The key saddles' cells are in the patches.h5 the clumps were made from (phew-merge's input).
    if (from_peaks) throw core::Error::usage("--saddle needs a clumps.h5 (deblend's peaks have no saddles)");
    manifest::RecordedInput recorded;
    mpi::agree(comm, [&] { recorded = manifest::recorded_input(opt.clumps, 0); });
    if (recorded.kind != "patches")
      throw core::Error::input("{}: its first input is a {}, not the patches.h5 --saddle needs", opt.clumps, recorded.kind);
    if (ctx.add_input(recorded.path, {"patches"}).fingerprint != recorded.fingerprint)
      throw core::Error::input("{}: not the patches.h5 {} was made from (its fingerprint differs)", recorded.path, opt.clumps);
    std::map<std::int64_t, double> radius;
    mpi::agree(comm, [&] {
      const io::File patches = io::File::open_read(recorded.path);
      const auto saddles = io::read_saddles(patches, 0, io::read_patches_header(patches).n_saddles);
      radius = unbind::key_saddle_radii(saddles, io::read_merged_peaks(*input), objects, space);
    });
    for (unbind::ObjectRow& o : objects)
      if (const auto r = radius.find(o.id); r != radius.end()) o.saddle_radius = r->second;
  }

  // The frame (docs/unbind-method.md): comoving positions and peculiar velocities, physical separations
  // a dx and the Hubble flow H(a) a dx; H from the critical density, H^2 = 8 pi G rho_crit / 3.
  unbind::Params params = checked.params;
  unbind::Frame frame;
  frame.box = out.grid.geometry.box();
  frame.G = info.units.gravitational_constant();
  frame.scale_factor = info.comoving ? info.time : 1.0;
  frame.critical_density = out.grid.critical_density.value_or(0.0);
  frame.omega_m = out.grid.omega_m.value_or(0.0);
  frame.omega_lambda = out.grid.omega_lambda.value_or(0.0);
  if (info.comoving && frame.critical_density > 0) {
    const double a = frame.scale_factor;
    frame.hubble = std::sqrt(8 * std::numbers::pi * frame.G * frame.critical_density / (a * a * a) / 3);
  }
  frame.softening = checked.softening ? *checked.softening : gravity::default_softening(out.grid.geometry, info.total(types));
  params.shrinking = {};
  // Threads share a rank's haloes (the tree potential's Forest works on mpi::Comm::self(): no MPI call)
  // and the searches that find a particle's cell.
  const int threads = tool::threads_to_use(checked.threads, comm);
  ctx.manifest().parameter("threads_used", threads);

  std::vector<particles::CellMember> members;
  if (from_peaks) {
    ctx.phase("read");
    particles::FieldSelection fields;
    fields.ids = fields.velocities = true;
    // The share read is released once its members are found: unbinding holds only the members.
    particles::ParticleSet particles = read_share(*reader, types, fields, comm);
    // Each rank reads a block of /particles (id, peak) and meets the snapshot's particles by ID.
    const auto r = static_cast<std::uint64_t>(comm.rank()), ranks = static_cast<std::uint64_t>(comm.size());
    const std::uint64_t first = n_listed * r / ranks, end = n_listed * (r + 1) / ranks;
    std::vector<std::uint64_t> ids;
    std::vector<std::int64_t> peaks;
    mpi::agree(comm, [&] {
      const auto rows = io::read_peak_members(*input, first, end - first);
      std::vector<std::int64_t> known;
      for (const unbind::ObjectRow& o : objects) known.push_back(o.id);
      std::sort(known.begin(), known.end());
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (!std::binary_search(known.begin(), known.end(), rows[i].peak))
          throw core::Error::input("{}: /particles/peak row {} is {}, not a peak of /peaks/id", opt.clumps,
                                   first + i, rows[i].peak);
        ids.push_back(rows[i].id);
        peaks.push_back(rows[i].peak);
      }
    });
    input.reset();
    ctx.phase("members");
    members = particles::members_by_id(particles, ids, peaks, opt.clumps, comm);
  } else {
    ctx.phase("read");
    // Each rank takes a run of cells balanced by test cells (whole pencils, or whole coarse cells), as
    // deblend does: a particle's clump is that of the test cell holding it.
    std::vector<std::int64_t> cuts;
    grid::CellLabels labels;
    mpi::agree(comm, [&] {
      cuts = space.rank_cuts(comm.size(), io::count_test_cells(*input), [&](std::uint64_t row) {
        return static_cast<std::uint64_t>(io::test_cell_at(*input, row));
      });
      const auto r = static_cast<std::size_t>(comm.rank());
      labels = io::read_clump_cells(*input, cuts[r], cuts[r + 1]);
    });
    input.reset();
    // The snapshot is read a chunk at a time as its particles go to their cells: only members are kept.
    ctx.phase("members");
    members = particles::members_of_cells(space, cuts, *reader, types, labels, threads, comm);
  }

  ctx.manifest().parameter("batch_particles", opt.batch_particles);
  unbind::Unbound u = unbind::unbind_objects(std::move(members), objects, frame, params, threads, opt.batch_particles, comm,
                                             [&](const std::string& p) { ctx.phase(p); });

  ctx.phase("write");
  ctx.manifest().parameter("gravitational_constant", frame.G, tool::gravitational_constant_units(info.units));
  ctx.manifest().parameter("scale_factor_used", frame.scale_factor);
  ctx.manifest().parameter("hubble_used", frame.hubble);
  ctx.manifest().parameter("softening_used", frame.softening, out.grid.length_units);
  ctx.manifest().parameter("types_used", types);
  ctx.summary(kSummary, u);
  out.meta.time = info.time;
  out.meta.redshift = info.redshift;
  out.meta.scale_factor = frame.scale_factor;
  out.meta.hubble = frame.hubble;
  out.meta.gravitational_constant = frame.G;
  out.meta.softening = frame.softening;
  out.meta.potential = unbind::to_string(params.potential);
  out.meta.centre = unbind::to_string(params.centre);
  out.meta.n_most_bound = static_cast<std::int64_t>(params.n_most_bound);
  out.meta.velocity_units = info.units.peculiar_velocity_name();
  out.meta.energy_units = "(" + info.units.velocity_name() + ")^2";
  out.meta.length_in_cm = info.units.length_cm;
  out.meta.mass_in_g = info.units.mass_g;
  out.meta.velocity_in_cm_per_s = info.units.velocity_cm_per_s;
  out.meta.h_scaled = info.units.h_scaled;
  out.meta.comoving = info.comoving;
  if (info.cosmology) {
    out.meta.hubble_param = info.cosmology->hubble_param;
    out.meta.omega_m = info.cosmology->omega_m;
    out.meta.omega_lambda = info.cosmology->omega_lambda;
  }
  out.objects = std::move(u.objects);
  out.particles = std::move(u.particles);
  out.most_bound = std::move(u.most_bound);
  ctx.write_output([&](io::File& f) { io::write_bound(f, out, comm); });
  if (!opt.export_yt.empty())
    ctx.write_output(opt.export_yt, "yt-halo-catalogue",
                     [&](io::File& f) { io::write_yt_halo_catalogue(f, out.objects, out.grid, out.meta, comm); });
}

}  // namespace phew::tools
