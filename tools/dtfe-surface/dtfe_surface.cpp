#include "dtfe_surface.hpp"

#include "centers.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "dtfe/decomposition.hpp"
#include "grid/particle_index.hpp"
#include "dtfe/threads.hpp"
#include "io/atomic_output.hpp"
#include "mpi/agree.hpp"
#include "particles/snapshot.hpp"
#include "quicklook.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>

namespace phew {
namespace {

using Vec3 = std::array<double, 3>;

double parse_length(const std::string& text, const char* option) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v))
    throw Error::usage("{} '{}': expected a length in snapshot units", option, text);
  return v;
}

// A field's numbers travel between ranks as one row of doubles: the statistics, then the map.
enum Stat : std::size_t {
  kIndex, kParticles, kVertices, kTets, kFlat, kAbsorbed, kSteps, kWindowMass, kMapMass,
  kTriangulation, kInterpolation, kPredicted, kRank, kSample, kStats
};

// Field i's rows are written by rank writer_of(i): blocks of consecutive fields, in rank order.
std::size_t block_begin(std::size_t n, int ranks, int r) {
  return n * static_cast<std::size_t>(r) / static_cast<std::size_t>(ranks);
}

std::string png_path(const std::string& output, std::size_t index) {
  std::string stem = output;
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".h5") == 0) stem.resize(stem.size() - 3);
  return fmt::format("{}.{:04d}.png", stem, index + 1);
}

}  // namespace

void declare_dtfe_options(CLI::App& app, DtfeOptions& opt) {
  app.add_option("snapshot", opt.snapshot, "Snapshot file(s): HDF5 (Gadget/SWIFT/AREPO), Gadget binary or phew particles")
      ->required();
  app.add_option("-c,--centers", opt.centers,
                 "Field centres: text/CSV (x y z per line), FILE.h5[:/dataset] ([n][3]), or a clumps.h5 (haloes by mass)")
      ->required();
  app.add_option("--top", opt.top, "Use only the first N centres (clumps.h5: the N most massive haloes); 0 = all")
      ->capture_default_str();
  app.add_option("-L,--size", opt.size, "Side of each square map, snapshot length units (> 0)")->required();
  app.add_option("-n,--resolution", opt.resolution, "Pixels per side of each map (> 0)")->required();
  app.add_option("-d,--depth", opt.depth, "Integration depth along the line of sight: a length, or 'box' for the whole box (default: the size)");
  app.add_option("--margin", opt.margin,
                 "Extra width triangulated around each map so its edges see no hull boundary (default: size / 10)");
  app.add_option("-a,--axis", opt.axis, "Line of sight: x, y or z (maps are (y, z), (z, x), (x, y))")->capture_default_str();
  app.add_option("-k,--samples", opt.samples, "Rays per pixel in ray mode (> 1: the Monte Carlo mean over the pixel)")
      ->capture_default_str();
  app.add_option("-m,--mode", opt.mode, "ray (one ray per pixel centre, the paper's kernel) or exact (the exact pixel average)")
      ->capture_default_str();
  app.add_option("-b,--backend", opt.backend, "Triangulation: auto (CGAL when built, else Qhull), cgal or qhull")
      ->capture_default_str();
  app.add_option("-j,--threads", opt.threads, "Threads per rank (auto: the cores of the node shared among its ranks)")
      ->capture_default_str();
  app.add_option("-s,--schedule", opt.schedule, "Work sharing between ranks: none, model (the paper's a-priori schedule) or dynamic")
      ->capture_default_str();
  app.add_option("-t,--types", opt.types, "Particle types: 1, 0,1 or all (auto: dark matter, type 1)")->capture_default_str();
  app.add_option("-p,--precision", opt.precision, "Map precision: float32 or float64")->capture_default_str();
  app.add_flag("--png", opt.png, "Also write a PNG quicklook per field (log scale) beside the output: OUTPUT.0001.png ...");
}

DtfeParams check_dtfe_options(const DtfeOptions& opt) {
  DtfeParams p;
  if (!(opt.size > 0) || !std::isfinite(opt.size)) throw Error::usage("--size {} must be a positive length", opt.size);
  if (opt.resolution <= 0) throw Error::usage("--resolution {} must be a positive number of pixels", opt.resolution);
  if (opt.resolution > 65536) throw Error::usage("--resolution {} is too large (at most 65536)", opt.resolution);
  if (opt.top < 0) throw Error::usage("--top {} must be 0 (all) or positive", opt.top);
  p.size = opt.size;
  p.resolution = opt.resolution;
  if (opt.depth.empty()) p.depth = opt.size;
  else if (opt.depth != "box") p.depth = parse_length(opt.depth, "--depth");
  if (p.depth && !(*p.depth > 0)) throw Error::usage("--depth {} must be a positive length (or box)", *p.depth);
  p.margin = opt.margin.empty() ? opt.size / 10 : parse_length(opt.margin, "--margin");
  if (p.margin < 0) throw Error::usage("--margin {} must not be negative", p.margin);
  if (opt.axis == "x" || opt.axis == "0") p.axis = 0;
  else if (opt.axis == "y" || opt.axis == "1") p.axis = 1;
  else if (opt.axis == "z" || opt.axis == "2") p.axis = 2;
  else throw Error::usage("--axis '{}': expected x, y or z", opt.axis);
  if (opt.samples < 1) throw Error::usage("--samples {} must be at least 1", opt.samples);
  p.map.samples = opt.samples;
  p.map.mode = dtfe::parse_map_mode(opt.mode);
  if (p.map.mode == dtfe::MapMode::exact && opt.samples != 1)
    throw Error::usage("--samples applies to --mode ray only (exact mode averages over the whole pixel)");
  p.map.backend = dtfe::parse_backend(opt.backend);
  if (opt.threads != "auto") {
    int t = 0;
    const auto [ptr, ec] = std::from_chars(opt.threads.data(), opt.threads.data() + opt.threads.size(), t);
    if (ec != std::errc() || ptr != opt.threads.data() + opt.threads.size() || t < 1)
      throw Error::usage("--threads '{}': expected a positive number or auto", opt.threads);
    p.threads = t;
  }
  p.schedule = dtfe::parse_schedule(opt.schedule);
  if (opt.precision == "float64") p.float64 = true;
  else if (opt.precision != "float32") throw Error::usage("--precision '{}': expected float32 or float64", opt.precision);
  return p;
}

void run_dtfe_surface(const DtfeOptions& opt, Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  DtfeParams params = check_dtfe_options(opt);
  const int node_ranks = mpi::ranks_on_node(comm);
  params.map.threads = params.threads > 0 ? params.threads : dtfe::default_threads(node_ranks);
  const auto axes = dtfe::view_axes(params.axis);
  const int w = axes[2];

  ctx.phase("open");
  std::unique_ptr<SnapshotReader> reader;
  std::vector<int> types;
  Centers centers;
  mpi::agree(comm, [&] {
    reader = open_snapshot(opt.snapshot);
    types = selected_types(reader->info(), opt.types);
    if (reader->info().total(types) == 0)
      throw Error::input("{}: no particles of the selected types", reader->info().files.front());
    if (!comm.root()) return;
    centers = read_centers(opt.centers, opt.top);
    for (const auto& f : reader->info().files) ctx.manifest().add_input(manifest::external_input(f, "snapshot"));
    ctx.manifest().add_input(centers.input);
  });
  // Every rank gets the centres (rank 0's list; the others contribute nothing).
  {
    const auto pos = comm.all_gatherv<Vec3>(comm.root() ? std::span<const Vec3>(centers.position) : std::span<const Vec3>());
    const auto ids = comm.all_gatherv<std::int64_t>(comm.root() ? std::span<const std::int64_t>(centers.id) : std::span<const std::int64_t>());
    centers.position = pos;
    centers.id = ids;
    comm.broadcast(centers.source);
  }
  const SnapshotInfo& info = reader->info();
  const std::size_t n_fields = centers.position.size();
  const bool has_box = info.box_size[0] > 0 && info.box_size[1] > 0 && info.box_size[2] > 0;
  const bool periodic = info.periodic && has_box;
  log::info("{}: {} snapshot, {} particles of types {}; {} fields from {} ({})", info.files.front(), info.format,
            log::thousands(static_cast<long long>(info.total(types))), opt.types, n_fields, opt.centers, centers.source);

  ctx.phase("read");
  const std::uint64_t n_total = info.total(types);
  mpi::agree(comm, [&] {
    check_memory(3.0 * 32.0 * static_cast<double>(n_total) / comm.size() * node_ranks,
                 available_memory_bytes(), fmt::format("reading {} particles", log::thousands(static_cast<long long>(n_total))));
  });
  ParticleSet particles = read_share(*reader, types, FieldSelection{}, comm);
  // The domain: the periodic box, a closed box, or (no box) the particles' bounding box.
  Box domain;
  domain.periodic = periodic;
  if (has_box) {
    domain.extent = info.box_size;
    if (!periodic) {
      mpi::agree(comm, [&] {
        for (std::size_t i = 0; i < particles.size(); ++i)
          for (std::size_t d = 0; d < 3; ++d) {
            const double x = particles.position[3 * i + d];
            if (x < 0 || x > info.box_size[d])
              throw Error::input("{}: a particle at {:g} lies outside the non-periodic box [0, {:g}] in axis {}",
                                 info.files.front(), x, info.box_size[d], "xyz"[d]);
          }
      });
    }
  } else {
    Vec3 lo{}, hi{};
    for (std::size_t d = 0; d < 3; ++d) {
      double a = std::numeric_limits<double>::infinity(), b = -a;
      for (std::size_t i = 0; i < particles.size(); ++i) a = std::min(a, particles.position[3 * i + d]), b = std::max(b, particles.position[3 * i + d]);
      lo[d] = comm.min(a);
      hi[d] = comm.max(b);
      domain.origin[d] = lo[d];
      domain.extent[d] = std::max(hi[d] - lo[d], 1e-300) * (1 + 1e-12);
    }
  }
  // Resolve the depth and check the centres against the box.
  double depth = 0;
  if (params.depth) {
    depth = *params.depth;
    if (periodic && depth > info.box_size[static_cast<std::size_t>(w)] * (1 + 1e-12))
      throw Error::usage("--depth {:g} exceeds the periodic box ({:g}) along the line of sight: use --depth box", depth,
                         info.box_size[static_cast<std::size_t>(w)]);
  } else {
    depth = periodic ? info.box_size[static_cast<std::size_t>(w)] : 2 * domain.extent[static_cast<std::size_t>(w)];
  }
  for (std::size_t i = 0; i < n_fields; ++i) {
    Vec3& c = centers.position[i];
    for (std::size_t d = 0; d < 3; ++d) {
      if (periodic) {
        c[d] -= info.box_size[d] * std::floor(c[d] / info.box_size[d]);
        continue;
      }
      const double lo = domain.origin[d], hi = domain.origin[d] + domain.extent[d];
      if (c[d] < lo || c[d] > hi)
        throw Error::input("{}: centre {} ({:g}, {:g}, {:g}) lies outside the {} [{:g}, {:g}] in axis {} of a non-periodic snapshot",
                           opt.centers, i + 1, c[0], c[1], c[2], has_box ? "box" : "particles' extent", lo, hi, "xyz"[d]);
    }
  }
  auto geometry = [&](std::size_t i) {
    dtfe::FieldGeometry g;
    g.center = centers.position[i];
    g.size = params.size;
    g.depth = depth;
    g.margin = params.margin;
    g.resolution = params.resolution;
    g.axis = params.axis;
    return g;
  };
  // The window's half-widths along the snapshot's axes (a hair wider for the ghost zones, so that
  // rounding at their edge can never leave out a particle the window holds).
  Vec3 half{};
  {
    const auto hv = geometry(0).half_width();
    for (std::size_t k = 0; k < 3; ++k) half[static_cast<std::size_t>(axes[k])] = hv[k];
  }
  Vec3 ghost{};
  for (std::size_t d = 0; d < 3; ++d) ghost[d] = half[d] * (1 + 1e-6) + 1e-12 * domain.extent[d];

  ctx.phase("distribute");
  const dtfe::BlockDecomposition blocks(domain, ghost, comm.size());
  dtfe::LocalParticles local = dtfe::distribute(particles.position, particles.mass, blocks, comm);
  particles = ParticleSet{};
  const double cell = std::min({half[0], half[1], half[2]}) / 2;
  const ParticleIndex index(local.position, local.mass, domain, cell);
  local = dtfe::LocalParticles{};
  const auto held = comm.sum<std::uint64_t>(index.size());
  log::verbose("decomposition {}x{}x{}; {} particles held with ghost zones ({:.2f}x)", blocks.dims()[0], blocks.dims()[1],
               blocks.dims()[2], log::thousands(static_cast<long long>(held)), static_cast<double>(held) / static_cast<double>(n_total));

  ctx.phase("count");
  std::vector<dtfe::FieldTask> tasks;
  for (std::size_t i = 0; i < n_fields; ++i)
    if (blocks.owner(centers.position[i]) == comm.rank()) tasks.push_back({i, index.count(centers.position[i], half)});
  // Too few particles: the lowest such field, on every rank, before any work starts.
  {
    struct Few {
      double index, n;
    } worst{std::numeric_limits<double>::infinity(), 0};
    for (const auto& t : tasks)
      if (t.n_particles < 4 && static_cast<double>(t.index) < worst.index) worst = {static_cast<double>(t.index), static_cast<double>(t.n_particles)};
    const auto all = comm.all_gather(worst);
    const auto it = std::min_element(all.begin(), all.end(), [](const Few& a, const Few& b) { return a.index < b.index; });
    if (std::isfinite(it->index)) {
      const auto i = static_cast<std::size_t>(it->index);
      const Vec3& c = centers.position[i];
      Error e = Error::input("field {} at ({:g}, {:g}, {:g}) holds {} particle(s): a triangulation needs at least 4 (a larger --size or --depth?)",
                             centers.id[i], c[0], c[1], c[2], static_cast<long long>(it->n));
      e.mark_agreed();
      throw e;
    }
  }
  // The largest field must fit: its triangulation, and the maps this rank may hold.
  std::uint64_t n_max = 0;
  for (const auto& t : tasks) n_max = std::max(n_max, t.n_particles);
  n_max = comm.max(n_max);
  const double map_bytes = 8.0 * params.resolution * static_cast<double>(params.resolution);
  const double maps_held = 2.0 * (static_cast<double>(tasks.size()) + static_cast<double>(n_fields) / comm.size() + 1) * map_bytes;
  mpi::agree(comm, [&] {
    check_memory((static_cast<double>(n_max) * dtfe::triangulation_bytes_per_point(params.map.backend) + maps_held +
                  32.0 * static_cast<double>(index.size())) * node_ranks,
                 available_memory_bytes(),
                 fmt::format("the largest field ({} particles, {} triangulation) and {} maps of {}x{}",
                             log::thousands(static_cast<long long>(n_max)), dtfe::to_string(params.map.backend),
                             n_fields, params.resolution, params.resolution));
  });
  log::info("{} fields of {}x{} pixels, side {:g}, depth {:g}, margin {:g}, line of sight {}; up to {} particles per field",
            n_fields, params.resolution, params.resolution, params.size, depth, params.margin, "xyz"[w],
            log::thousands(static_cast<long long>(n_max)));

  ctx.phase("fields");
  dtfe::RunReport report;
  const auto outcomes = dtfe::run_fields(
      tasks, [&](std::size_t i) { return dtfe::field_points(index, geometry(i)); },
      [&](std::size_t i, const dtfe::FieldPoints& points) { return dtfe::surface_density(points, geometry(i), params.map); },
      params.schedule, comm, report);
  // A field that failed (coplanar, too few distinct particles): the lowest, on every rank.
  {
    double first = std::numeric_limits<double>::infinity();
    std::string why;
    for (const auto& o : outcomes)
      if (!o.error.empty() && static_cast<double>(o.index) < first) first = static_cast<double>(o.index), why = o.error;
    const auto all = comm.all_gather(first);
    const auto it = std::min_element(all.begin(), all.end());
    if (std::isfinite(*it)) {
      comm.broadcast(why, static_cast<int>(it - all.begin()));
      const auto i = static_cast<std::size_t>(*it);
      const Vec3& c = centers.position[i];
      Error e = Error::input("field {} at ({:g}, {:g}, {:g}): {}", centers.id[i], c[0], c[1], c[2], why);
      e.mark_agreed();
      throw e;
    }
  }

  ctx.phase("gather");
  // Each field to the rank that writes its rows.
  const std::size_t pixels = static_cast<std::size_t>(params.resolution) * static_cast<std::size_t>(params.resolution);
  const std::size_t row = kStats + pixels;
  std::vector<std::size_t> begins(static_cast<std::size_t>(comm.size()) + 1);
  for (int r = 0; r <= comm.size(); ++r) begins[static_cast<std::size_t>(r)] = block_begin(n_fields, comm.size(), r);
  auto writer = [&](std::size_t i) {
    return static_cast<int>(std::upper_bound(begins.begin(), begins.end(), i) - begins.begin()) - 1;
  };
  std::vector<const dtfe::FieldOutcome*> order;
  for (const auto& o : outcomes) order.push_back(&o);
  std::stable_sort(order.begin(), order.end(), [&](const auto* a, const auto* b) { return writer(a->index) < writer(b->index); });
  std::vector<double> send;
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(comm.size()), 0);
  send.reserve(order.size() * row);
  for (const auto* o : order) {
    const auto& r = o->result;
    const double stats[kStats] = {static_cast<double>(o->index), static_cast<double>(r.n_particles), static_cast<double>(r.n_vertices),
                                  static_cast<double>(r.n_tets), static_cast<double>(r.n_flat_tets), static_cast<double>(r.n_absorbed),
                                  static_cast<double>(r.steps), r.window_mass, r.map_mass, r.seconds_triangulation,
                                  r.seconds_interpolation, o->predicted, static_cast<double>(o->rank), o->sample ? 1.0 : 0.0};
    send.insert(send.end(), stats, stats + kStats);
    send.insert(send.end(), r.sigma.begin(), r.sigma.end());
    counts[static_cast<std::size_t>(writer(o->index))] += row;
  }
  const std::vector<double> got = comm.all_to_all<double>(send, counts);
  send = {};
  const std::size_t first = begins[static_cast<std::size_t>(comm.rank())], mine = begins[static_cast<std::size_t>(comm.rank()) + 1] - first;
  std::vector<double> sigma(mine * pixels), stat(mine * kStats);
  for (std::size_t at = 0; at + row <= got.size(); at += row) {
    const auto i = static_cast<std::size_t>(got[at + kIndex]) - first;
    std::copy(got.begin() + static_cast<long>(at), got.begin() + static_cast<long>(at + kStats), stat.begin() + static_cast<long>(i * kStats));
    std::copy(got.begin() + static_cast<long>(at + kStats), got.begin() + static_cast<long>(at + row), sigma.begin() + static_cast<long>(i * pixels));
  }

  ctx.phase("write");
  io::AtomicOutput out(ctx.output(), comm);
  io::File f = io::File::create(out.temp_path(), comm);
  const std::string length_units = info.units.length_name(), mass_units = info.units.mass_name();
  const std::string sigma_units = fmt::format("({})/({})^2", mass_units, length_units);
  f.create_group("/maps");
  f.create_group("/timing");
  const auto ng = static_cast<std::uint64_t>(params.resolution);
  if (params.float64) f.write_rows<double, double>("/maps/sigma", {n_fields, ng, ng}, first, sigma);
  else f.write_rows<float, double>("/maps/sigma", {n_fields, ng, ng}, first, sigma);
  f.write_attribute("/maps/sigma", "units", sigma_units);
  auto column = [&](Stat s) {
    std::vector<double> v(mine);
    for (std::size_t i = 0; i < mine; ++i) v[i] = stat[i * kStats + s];
    return v;
  };
  auto as_int = [](const std::vector<double>& v) {
    std::vector<std::int64_t> o(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) o[i] = static_cast<std::int64_t>(v[i]);
    return o;
  };
  auto write_int = [&](const std::string& name, const std::vector<std::int64_t>& v) {
    f.write_rows<std::int64_t, std::int64_t>(name, {n_fields}, first, v);
  };
  auto write_real = [&](const std::string& name, const std::vector<double>& v, const std::string& units) {
    f.write_rows<double, double>(name, {n_fields}, first, v);
    if (!units.empty()) f.write_attribute(name, "units", units);
  };
  std::vector<double> centre(3 * mine);
  std::vector<std::int64_t> ids(mine), res(mine, params.resolution), axis(mine, params.axis);
  std::vector<double> sizes(mine, params.size), depths(mine, depth), margins(mine, params.margin);
  for (std::size_t i = 0; i < mine; ++i) {
    for (std::size_t d = 0; d < 3; ++d) centre[3 * i + d] = centers.position[first + i][d];
    ids[i] = centers.id[first + i];
  }
  f.write_rows<double, double>("/maps/center", {n_fields, 3}, first, centre);
  f.write_attribute("/maps/center", "units", length_units);
  write_int("/maps/id", ids);
  write_real("/maps/size", sizes, length_units);
  write_real("/maps/depth", depths, length_units);
  write_real("/maps/margin", margins, length_units);
  write_int("/maps/resolution", res);
  write_int("/maps/axis", axis);
  write_int("/maps/n_particles", as_int(column(kParticles)));
  write_int("/maps/n_vertices", as_int(column(kVertices)));
  write_int("/maps/n_tetrahedra", as_int(column(kTets)));
  write_real("/maps/window_mass", column(kWindowMass), mass_units);
  write_real("/maps/map_mass", column(kMapMass), mass_units);
  // Timings and placement vary from run to run: kept apart from the maps.
  write_real("/timing/triangulation", column(kTriangulation), "s");
  write_real("/timing/interpolation", column(kInterpolation), "s");
  write_real("/timing/predicted", column(kPredicted), "s");
  write_int("/timing/rank", as_int(column(kRank)));
  write_int("/timing/model_sample", as_int(column(kSample)));
  f.write_attribute("/maps", "units", sigma_units);
  f.write_attribute("/maps", "length_units", length_units);
  f.write_attribute("/maps", "mass_units", mass_units);
  f.write_attribute("/maps", "u_axis", std::string(1, "xyz"[axes[0]]));
  f.write_attribute("/maps", "v_axis", std::string(1, "xyz"[axes[1]]));
  f.write_attribute("/maps", "line_of_sight", std::string(1, "xyz"[w]));
  f.write_attribute("/maps", "pixels",
                    "sigma[f][i][j]: pixel i along u, j along v, centred at center_u - size/2 + (i + 0.5) size/resolution");
  f.write_attribute("/maps", "mode", std::string(dtfe::to_string(params.map.mode)));
  f.write_attribute("/maps", "samples", static_cast<std::int64_t>(params.map.samples));
  f.write_attribute("/maps", "backend", std::string(dtfe::to_string(params.map.backend)));
  f.write_attribute("/maps", "estimator", "DTFE (Delaunay tessellation field estimator), Rangel et al. 2016");
  f.write_attribute("/maps", "centers_source", centers.source);
  f.write_attribute<double>("/maps", "box_size", std::span<const double>(info.box_size));
  f.write_attribute("/maps", "periodic", static_cast<std::int8_t>(periodic ? 1 : 0));
  f.write_attribute("/maps", "time", info.time);
  f.write_attribute("/maps", "redshift", info.redshift);

  // Provenance and the summary (totals over all fields, in field order on rank 0).
  const auto all_stats = comm.all_gatherv<double>(stat);
  std::uint64_t particles_total = 0, steps = 0, flat = 0, absorbed = 0;
  double map_mass = 0, window_mass = 0, t_tri = 0, t_interp = 0;
  for (std::size_t i = 0; i < n_fields; ++i) {
    const double* s = &all_stats[i * kStats];
    particles_total += static_cast<std::uint64_t>(s[kParticles]);
    steps += static_cast<std::uint64_t>(s[kSteps]);
    flat += static_cast<std::uint64_t>(s[kFlat]);
    absorbed += static_cast<std::uint64_t>(s[kAbsorbed]);
    map_mass += s[kMapMass];
    window_mass += s[kWindowMass];
    t_tri += s[kTriangulation];
    t_interp += s[kInterpolation];
  }
  const auto busy = comm.all_gather(report.busy_seconds);
  const double busy_max = *std::max_element(busy.begin(), busy.end());
  const double busy_mean = std::accumulate(busy.begin(), busy.end(), 0.0) / static_cast<double>(busy.size());
  const auto moved = comm.sum<std::uint64_t>(report.fields_sent);
  auto& m = ctx.manifest();
  m.parameter("depth_resolved", depth, length_units);
  m.parameter("margin_resolved", params.margin, length_units);
  m.parameter("size", params.size, length_units);
  m.parameter("backend_used", dtfe::to_string(params.map.backend));
  m.parameter("threads_used", params.map.threads);
  m.parameter("types_used", types);
  m.parameter("periodic", periodic);
  m.summary("n_fields", n_fields);
  m.summary("n_particles_in_windows", particles_total);
  m.summary("window_mass", window_mass);
  m.summary("map_mass", map_mass);
  m.summary("rays", static_cast<std::uint64_t>(n_fields) * pixels * static_cast<std::uint64_t>(params.map.samples));
  m.summary("tetrahedra_crossed", steps);
  m.summary("flat_tetrahedra", flat);
  m.summary("points_absorbed", absorbed);
  m.summary("seconds_triangulation", t_tri);
  m.summary("seconds_interpolation", t_interp);
  m.summary("units", {{"sigma", sigma_units}, {"mass", mass_units}, {"length", length_units}});
  m.summary("schedule", {{"kind", dtfe::to_string(params.schedule)},
                         {"decomposition", blocks.dims()},
                         {"fields_moved", moved},
                         {"busy_seconds_max", busy_max},
                         {"busy_seconds_mean", busy_mean},
                         {"model_samples", report.samples},
                         {"model_c", report.model.triangulation.c},
                         {"model_alpha", report.model.interpolation.alpha},
                         {"model_beta", report.model.interpolation.beta}});
  if (opt.png) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < n_fields; ++i) names.push_back(png_path(ctx.output(), i));
    m.summary("quicklooks", names);
  }
  log::info("{} maps: mass {:.6g} of {:.6g} {} in the windows; triangulation {:.2f} s, maps {:.2f} s (summed over fields)",
            n_fields, map_mass, window_mass, mass_units, t_tri, t_interp);
  if (comm.size() > 1)
    log::info("schedule {}: busy {:.2f} s max, {:.2f} s mean per rank; {} fields moved", dtfe::to_string(params.schedule),
              busy_max, busy_mean, moved);
  ctx.finish_output(f, out);

  if (opt.png) {
    // After the maps are in place: a quicklook never exists without its data.
    mpi::agree(comm, [&] {
      for (std::size_t i = 0; i < mine; ++i) {
        const std::vector<double> map(sigma.begin() + static_cast<long>(i * pixels), sigma.begin() + static_cast<long>((i + 1) * pixels));
        io::write_text_atomically(png_path(ctx.output(), first + i), quicklook_png(map, params.resolution));
      }
    });
  }
}

}  // namespace phew
