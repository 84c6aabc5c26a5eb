#include "voters.hpp"

#include <phew/core/error.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/io/peaks_file.hpp>
#include <phew/io/voters_file.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/tool/snapshot_input.hpp>
#include <phew/tool/threads_option.hpp>

#include <CLI/CLI.hpp>

#include <cmath>
#include <limits>

namespace phew::tools {

void declare_voters_options(CLI::App& app, VotersOptions& opt) {
  app.add_option("peaks", opt.peaks, "Peaks from deblend (peaks.h5)")->required();
  app.add_option("snapshot", opt.snapshot, "The snapshot the peaks were found in")->required();
  app.add_option("--n-voters", opt.n_voters, "Voters per peak")->capture_default_str();
  app.add_option("-R,--search-radius", opt.search_radius,
                 "Largest search radius (snapshot length units; default: half the radius at 200x the mean density "
                 "of the most massive peak)");
  app.add_option("--min-radius", opt.min_radius, "Smallest search radius, however close the nearest peak")
      ->capture_default_str();
  app.add_option("--potential", opt.potential,
                 "Where the potential comes from: auto, snapshot, compute or profile (each peak's candidates in their "
                 "own spherical potential, as RAMSES' unbinding)")
      ->capture_default_str();
  app.add_option(
      "--pm-mesh", opt.pm_mesh,
      "Computed potential, periodic box: particle-mesh cells per side (default: about one per particle, 32 to 512)");
  app.add_option("--theta", opt.theta, "Computed potential: Barnes-Hut opening angle")->capture_default_str();
  app.add_option("--softening", opt.softening,
                 "Computed potential: Plummer softening (default: 1/30 of the mean interparticle spacing, at most a "
                 "tenth of a grid cell)");
  tool::declare_types_option(app, opt.types, tool::AutoTypes::grid);
  app.add_option("--mean-from", opt.mean_from,
                 "Take the mean density of the default search radius from this grid (the first snapshot of an "
                 "open-box series), so that the radius does not drift as mass leaves the region");
  app.add_flag("--allow-other-types", opt.allow_other_types, "Accept --types other than those the grid was made of");
  tool::declare_units_option(app, opt.units);
  app.add_flag("--no-boost", opt.no_boost, "Rank by the plain potential (to compare; not for production)");
  tool::add_threads_option(app, opt.threads, "they share the peaks and the computed potential's tree walks");
}

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

VotersParams check_voters_options(const VotersOptions& opt) {
  if (opt.n_voters < 1) throw core::Error::usage("--n-voters {} must be at least 1", opt.n_voters);
  // Written so that NaN fails too.
  // Written so that NaN fails too. A radius of 0 would find no voters: leaving the option out is the
  // automatic radius.
  if (opt.search_radius && !(*opt.search_radius > 0 && *opt.search_radius < kInf))
    throw core::Error::usage("--search-radius {} must be a finite length > 0 (leave it out for the automatic radius)",
                             *opt.search_radius);
  if (!(opt.min_radius >= 0 && opt.min_radius < kInf))
    throw core::Error::usage("--min-radius {} must be a finite number >= 0", opt.min_radius);
  if (opt.search_radius && opt.min_radius > *opt.search_radius)
    throw core::Error::usage(
        "--min-radius {} is above --search-radius {}: the smallest radius must not exceed the largest", opt.min_radius,
        *opt.search_radius);
  if (opt.softening && !(*opt.softening > 0 && *opt.softening < kInf))
    throw core::Error::usage("--softening {} must be a finite length > 0 (leave it out for the default)",
                             *opt.softening);
  VotersParams c;
  if (opt.potential == "auto")
    c.potential = PotentialChoice::automatic;
  else if (opt.potential == "snapshot")
    c.potential = PotentialChoice::snapshot;
  else if (opt.potential == "compute")
    c.potential = PotentialChoice::compute;
  else if (opt.potential == "profile")
    c.potential = PotentialChoice::profile;
  else
    throw core::Error::usage("--potential '{}': expected auto, snapshot, compute or profile", opt.potential);
  if (!(opt.theta > 0 && opt.theta < kInf)) throw core::Error::usage("--theta {} must be > 0", opt.theta);
  if (opt.pm_mesh && (*opt.pm_mesh < 32 || *opt.pm_mesh > 4096))
    throw core::Error::usage("--pm-mesh {}: expected 32 to 4096 (leave it out for the automatic mesh)", *opt.pm_mesh);
  c.params.n_voters = opt.n_voters;
  c.params.search_radius = opt.search_radius.value_or(0);  // 0: automatic
  c.params.min_radius = opt.min_radius;
  c.params.boost = !opt.no_boost;
  c.params.gravity = {opt.pm_mesh.value_or(0), opt.theta};  // 0: automatic
  c.default_softening = !opt.softening;
  c.params.softening = opt.softening.value_or(0);
  c.threads = tool::parse_threads(opt.threads);
  return c;
}

namespace {

const manifest::Fields<phasespace::VoterSelection> kSummary =
    // clang-format off: one column and its constraints per line
    manifest::Fields<phasespace::VoterSelection>()
        .field("n_peaks", &phasespace::VoterSelection::n_peaks)
        .field("n_voters", &phasespace::VoterSelection::n_voters)
        .field("n_peaks_with_fewer_voters", &phasespace::VoterSelection::n_short);
// clang-format on

// The stage's parameters that come from the snapshot (its potential, units, box) and the grid.
void set_snapshot_params(VotersParams& checked, const particles::SnapshotInfo& info, const grid::GridMeta& grid,
                         const std::vector<int>& types) {
  phasespace::VoterParams& params = checked.params;
  params.stored_potential =
      checked.potential == PotentialChoice::snapshot ||
      (checked.potential == PotentialChoice::automatic && info.has_potential && info.has_acceleration);
  params.profile_potential = checked.potential == PotentialChoice::profile;
  // Physical units: comoving positions scale by a, and Gadget's stored comoving potential and
  // acceleration by 1/a and 1/a^2; velocities are peculiar already (the readers convert).
  params.scale_factor = info.comoving ? info.time : 1.0;
  params.G = info.units.gravitational_constant();
  params.n_particles = info.total(types);
  params.periodic = info.periodic;
  params.box_size = info.box_size;
  if (checked.default_softening) params.softening = gravity::default_softening(grid.geometry, params.n_particles);
}

// The values the run used, in the manifest (G with its units, as deblend records it).
void record_used(manifest::Builder& m, const phasespace::VoterSelection& sel, const phasespace::VoterParams& params,
                 const grid::GridMeta& grid, const std::vector<int>& types, const particles::Units& units) {
  m.parameter("search_radius_used", sel.search_radius, grid.length_units);
  m.parameter("types_used", types);
  m.parameter("potential_source", sel.potential_source);
  m.parameter("softening_used", params.softening, grid.length_units);
  m.parameter("gravitational_constant", params.G, tool::gravitational_constant_units(units));
}

// This rank's share of the snapshot, with the stored potential and acceleration when they are used.
particles::ParticleSet read_voter_candidates(const particles::SnapshotReader& reader, const std::vector<int>& types,
                                             const phasespace::VoterParams& params, const std::string& snapshot,
                                             const mpi::Comm& comm) {
  particles::FieldSelection fields;
  fields.ids = fields.velocities = true;
  fields.potential = fields.acceleration = params.stored_potential;
  particles::ParticleSet particles = read_share(reader, types, fields, comm);
  mpi::agree(comm, [&] {
    for (double v : particles.potential)
      if (!std::isfinite(v)) throw core::Error::input("{}: the snapshot's Potential has a non-finite value", snapshot);
  });
  return particles;
}

}  // namespace

void run_voters(const VotersOptions& opt, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  VotersParams checked = check_voters_options(opt);
  phasespace::VoterParams& params = checked.params;
  params.threads = tool::threads_to_use(checked.threads, ctx);

  ctx.phase("open");
  std::vector<int> types;
  grid::GridMeta grid;
  std::vector<model::PeakRow> peaks;
  mpi::agree(comm, [&] {
    const io::File f = io::File::open_read(opt.peaks);
    const io::PeaksHeader header = io::read_peaks_header(f);
    io::check_peculiar_velocities(header, opt.peaks);
    grid = header.grid;
    peaks = io::read_peak_rows(f);
  });
  const std::unique_ptr<particles::SnapshotReader> reader =
      tool::open_snapshot_with_units({opt.snapshot}, opt.units, comm, &ctx.manifest());
  const particles::SnapshotInfo& info = reader->info();
  mpi::agree(comm, [&] {
    if (!info.has_velocities) throw core::Error::input("{}: the snapshot has no velocities", opt.snapshot);
    types = chain_types(info, opt.types, manifest::grid_types_in_chain(opt.peaks), opt.allow_other_types);
    check_snapshot_matches_grid(info, grid, opt.snapshot, opt.peaks);
    if (!opt.mean_from.empty()) params.mean_density = io::reference_mean_density(opt.mean_from, grid);
    if (checked.potential == PotentialChoice::snapshot && !(info.has_potential && info.has_acceleration))
      throw core::Error::input("{}: --potential snapshot, but the snapshot has no Potential and Acceleration",
                               opt.snapshot);
  });
  if (!opt.mean_from.empty()) ctx.add_input(opt.mean_from, {"grid"});
  ctx.add_input(opt.peaks, {"peaks"});
  ctx.add_inputs([&] { return manifest::snapshot_inputs_in_chain(opt.peaks, info.files); });
  set_snapshot_params(checked, info, grid, types);

  ctx.phase("read");
  particles::ParticleSet particles = read_voter_candidates(*reader, types, params, opt.snapshot, comm);
  phasespace::VoterSelection sel = select_voters(grid, std::move(peaks), std::move(particles), params, comm,
                                                 [&](const std::string& p) { ctx.phase(p); });

  ctx.phase("write");
  record_used(ctx.manifest(), sel, params, grid, types, info.units);
  ctx.summary(kSummary, sel);
  const model::Voters out{grid,
                          {sel.potential_source, params.n_voters, info.time, params.boost,
                           "(" + info.units.velocity_name() + ")^2, physical",
                           info.units.velocity_name() + "^2 / (" + info.units.length_name() + "), physical"},
                          std::move(sel.voters),
                          std::move(sel.peaks)};
  ctx.write_output([&](io::File& f) { io::write_voters(f, out, comm); });
}

}  // namespace phew::tools
