#include "cic_project.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "grid/deposit.hpp"
#include "mpi/agree.hpp"
#include "particles/snapshot.hpp"

#include <charconv>

namespace phew {
namespace {

std::array<double, 6> parse_region(const std::string& text) {
  std::array<double, 6> r{};
  std::size_t pos = 0;
  for (int i = 0; i < 6; ++i) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + end, r[static_cast<std::size_t>(i)]);
    if (ec != std::errc() || ptr != text.data() + end || (i < 5 && end == text.size()))
      throw Error::usage("region '{}': expected six numbers x0,y0,z0,x1,y1,z1", text);
    pos = end + 1;
  }
  if (pos <= text.size()) throw Error::usage("region '{}': expected six numbers x0,y0,z0,x1,y1,z1", text);
  for (int d = 0; d < 3; ++d)
    if (!(r[static_cast<std::size_t>(d + 3)] > r[static_cast<std::size_t>(d)]))
      throw Error::usage("region '{}': upper corner must be above the lower corner in every axis", text);
  return r;
}

// The grid covers the periodic box, or the region (never periodic).
GridGeometry grid_geometry(const SnapshotInfo& info, const CicParams& p) {
  GridGeometry g;
  g.shape = p.shape;
  if (p.region) {
    const auto& r = *p.region;
    g.origin = {r[0], r[1], r[2]};
    g.extent = {r[3] - r[0], r[4] - r[1], r[5] - r[2]};
    g.periodic = false;
  } else if (info.periodic) {
    g.extent = info.box_size;
    g.periodic = true;
  } else if (info.box_size[0] > 0 && info.box_size[1] > 0 && info.box_size[2] > 0) {
    g.extent = info.box_size;  // a finite, non-periodic box: particles must lie inside
    g.periodic = false;
  } else {
    throw Error::usage("{}: the snapshot has no periodic box (BoxSize 0); give the grid's extent with --region",
                       info.files.front());
  }
  return g;
}

std::string describe_types(const SnapshotInfo& info) {
  std::string s;
  for (int t = 0; t < info.num_types(); ++t)
    if (info.total(t) > 0) s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", t, log::thousands(static_cast<long long>(info.total(t))));
  return s.empty() ? "none" : s;
}

}  // namespace

void declare_cic_options(CLI::App& app, CicOptions& opt) {
  app.add_option("snapshot", opt.snapshot, "Snapshot file(s): HDF5 (Gadget/SWIFT/AREPO), Gadget binary or phew particles; "
                                           "one piece of a multi-file snapshot finds the others")
      ->required();
  app.add_option("-g,--grid", opt.grid, "Grid cells: N or NX,NY,NZ")->required();
  app.add_option("-t,--types", opt.types, "Particle types: 1, 0,1 or all (auto: dark matter, type 1)")
      ->capture_default_str();
  app.add_option("--region", opt.region,
                 "Sub-box x0,y0,z0,x1,y1,z1 in snapshot length units (not periodic; particles outside are ignored)");
  app.add_option("-a,--assignment", opt.assignment, "Mass assignment: cic, ngp or tsc")->capture_default_str();
  app.add_option("-p,--precision", opt.precision, "Output precision: float32 or float64")->capture_default_str();
}

CicParams check_cic_options(const CicOptions& opt) {
  CicParams p;
  p.shape = parse_grid_shape(opt.grid);
  if (!opt.region.empty()) p.region = parse_region(opt.region);
  p.assignment = parse_assignment(opt.assignment);
  p.precision = io::parse_precision(opt.precision);
  return p;
}

void run_cic_project(const CicOptions& opt, Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  const CicParams params = check_cic_options(opt);

  ctx.phase("open");
  std::unique_ptr<SnapshotReader> reader;
  std::vector<int> types;
  GridGeometry geometry;
  mpi::agree(comm, [&] {
    reader = open_snapshot(opt.snapshot);
    types = selected_types(reader->info(), opt.types);
    geometry = grid_geometry(reader->info(), params);
    if (reader->info().total(types) == 0)
      throw Error::input("{}: no particles of the selected types (types present: {})", reader->info().files.front(),
                         describe_types(reader->info()));
  });
  const SnapshotInfo& info = reader->info();
  const std::uint64_t n_total = info.total(types);
  log::info("{}: {} snapshot, {} file(s), {} particles of types {}", info.files.front(), info.format, info.files.size(),
            log::thousands(static_cast<long long>(n_total)), opt.types);

  // Refuse before allocating: this rank's slab and particle share, times the ranks sharing the node.
  const mpi::SlabDecomposition slabs(geometry.shape[0], comm.size());
  const double slab_bytes = 8.0 * static_cast<double>(slabs.planes(comm.rank())) * static_cast<double>(geometry.plane_cells());
  const double particle_bytes = (32.0 + kDepositBytesPerParticle) * static_cast<double>(n_total) / comm.size();
  mpi::agree(comm, [&] {
    check_memory((slab_bytes + particle_bytes) * mpi::ranks_on_node(comm), available_memory_bytes(),
                 fmt::format("a {}x{}x{} grid of {} particles", geometry.shape[0], geometry.shape[1], geometry.shape[2],
                             log::thousands(static_cast<long long>(n_total))));
  });

  mpi::agree(comm, [&] {
    if (!comm.root()) return;
    for (const auto& f : info.files) ctx.manifest().add_input(manifest::external_input(f, "snapshot"));
  });

  ctx.phase("read");
  ParticleSet particles = read_share(*reader, types, FieldSelection{}, comm);
  if (!geometry.periodic && !params.region) {
    // A finite non-periodic box: a particle outside it is an error, not something to drop silently.
    mpi::agree(comm, [&] {
      for (std::size_t i = 0; i < particles.size(); ++i)
        for (std::size_t d = 0; d < 3; ++d) {
          const double x = particles.position[3 * i + d];
          if (x < geometry.origin[d] || x >= geometry.origin[d] + geometry.extent[d])
            throw Error::input("{}: a particle at {:g} lies outside the non-periodic box [0, {:g}) in axis {}",
                               info.files.front(), x, geometry.extent[d], "xyz"[d]);
        }
    });
  }
  double min_mass = particles.size() ? particles.mass[0] : INFINITY, max_mass = particles.size() ? particles.mass[0] : 0;
  for (double m : particles.mass) {
    min_mass = std::min(min_mass, m);
    max_mass = std::max(max_mass, m);
  }
  min_mass = comm.min(min_mass);
  max_mass = comm.max(max_mass);

  ctx.phase("deposit");
  DepositResult dep = deposit(geometry, params.assignment, slabs, particles.position, particles.mass, comm);
  particles = ParticleSet{};
  const double inv_volume = 1.0 / geometry.cell_volume();
  for (double& v : dep.mass) v *= inv_volume;  // now density

  GridMeta meta;
  meta.geometry = geometry;
  meta.assignment = to_string(params.assignment);
  meta.total_mass = dep.mass_total;
  meta.mean_density = dep.mass_total / (geometry.extent[0] * geometry.extent[1] * geometry.extent[2]);
  meta.n_particles = dep.particles_in;
  meta.particle_mass = min_mass == max_mass ? min_mass : 0.0;
  meta.density_units = info.units.density_name();
  meta.length_units = info.units.length_name();
  meta.mass_units = info.units.mass_name();
  meta.time = info.time;
  meta.redshift = info.redshift;
  meta.comoving = info.comoving;
  if (info.cosmology) {
    meta.omega_m = info.cosmology->omega_m;
    meta.omega_lambda = info.cosmology->omega_lambda;
    meta.hubble_param = info.cosmology->hubble_param;
    meta.critical_density = info.cosmology->critical_density(info.comoving ? info.time : 1.0, info.units);
  }
  if (dep.particles_outside > 0)
    log::info("{} particles outside the region were ignored", log::thousands(static_cast<long long>(dep.particles_outside)));
  log::info("deposited {} particles, mass {:.6g} {}, on {}x{}x{} cells ({}); mean density {:.6g} {}",
            log::thousands(static_cast<long long>(dep.particles_in)), dep.mass_total, meta.mass_units,
            geometry.shape[0], geometry.shape[1], geometry.shape[2], meta.assignment, meta.mean_density,
            meta.density_units);
  if (meta.critical_density)
    log::info("mean density / critical density = {:.4f} (a = {:.4g}, z = {:.4g})", meta.mean_density / *meta.critical_density,
              info.time, info.redshift);

  ctx.phase("write");
  io::AtomicOutput out(ctx.output(), comm);
  io::File file = io::File::create(out.temp_path(), comm);
  io::write_grid(file, meta, slabs, dep.mass, params.precision);

  auto& m = ctx.manifest();
  m.parameter("grid_shape", geometry.shape);
  m.parameter("grid_origin", geometry.origin, meta.length_units);
  m.parameter("grid_box_size", geometry.extent, meta.length_units);
  m.parameter("periodic", geometry.periodic);
  m.parameter("types_used", types);
  m.parameter("assignment_used", meta.assignment);
  m.summary("n_particles", dep.particles_in);
  m.summary("n_particles_outside", dep.particles_outside);
  m.summary("total_mass", dep.mass_total);
  m.summary("mean_density", meta.mean_density);
  m.summary("units", {{"density", meta.density_units}, {"mass", meta.mass_units}, {"length", meta.length_units}});
  if (meta.critical_density) m.summary("mean_over_critical", meta.mean_density / *meta.critical_density);
  ctx.finish_output(file, out);
}

}  // namespace phew
