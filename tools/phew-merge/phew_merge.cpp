#include "phew_merge.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/quantity.hpp"
#include "io/clumps_file.hpp"
#include "io/grid_file.hpp"
#include "mpi/agree.hpp"
#include "mpi/lookup.hpp"
#include "mpi/ordered_sum.hpp"
#include "mpi/route.hpp"
#include "particles/snapshot.hpp"
#include "phew/merge.hpp"
#include "text_export.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>

namespace phew {
namespace {

using Vec3 = std::array<double, 3>;

// Reads this rank's block of the peak table and every saddle that touches it.
void read_graph(const io::File& f, PeakGraph& g, std::vector<Vec3>& position, const mpi::Comm& comm) {
  const std::size_t n = g.density.size();
  const auto first = static_cast<std::uint64_t>(g.first - 1);
  if (n > 0) {
    g.density = f.read_rows<double>("/peaks/density", first, n);
    const auto pos = f.read_rows<double>("/peaks/position", first, n);
    position.resize(n);
    for (std::size_t i = 0; i < n; ++i) position[i] = {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]};
  }
  const std::uint64_t m = f.dataset_info("/saddles/peak_a").elements();
  constexpr std::uint64_t kChunk = 1 << 20;  // bounded memory however many saddles there are
  for (std::uint64_t b = 0; b < m; b += kChunk) {
    const std::uint64_t c = std::min(kChunk, m - b);
    const auto pa = f.read_rows<std::int64_t>("/saddles/peak_a", b, c);
    const auto pb = f.read_rows<std::int64_t>("/saddles/peak_b", b, c);
    const auto s = f.read_rows<double>("/saddles/density", b, c);
    for (std::size_t i = 0; i < c; ++i) {
      if (g.owner(pa[i]) == comm.rank()) g.edges.push_back({pa[i], pb[i], s[i]});
      if (g.owner(pb[i]) == comm.rank()) g.edges.push_back({pb[i], pa[i], s[i]});
    }
  }
  g.normalise_edges();
}

// The node each owned node merged into during an outcome (0 = none), indexed like the graph.
std::vector<std::int64_t> into_of(const PeakGraph& g, const MergeOutcome& o) {
  std::vector<std::int64_t> into(g.density.size(), 0);
  for (const Merger& m : o.mergers) into[g.local(m.node)] = m.into;
  return into;
}

struct Options {
  double relevance;
  std::optional<DensityThreshold> saddle;
  std::optional<double> second_relevance;
  std::optional<MassThreshold> mass;
};

Options check_options(const MergeOptions& opt) {
  Options o{opt.relevance, std::nullopt, std::nullopt, std::nullopt};
  if (!(opt.relevance > 1))
    throw Error::usage("--relevance {} must be above 1 (a peak is relevant when peak/saddle >= it)", opt.relevance);
  if (!opt.saddle_threshold.empty()) o.saddle = DensityThreshold::parse(opt.saddle_threshold);
  if (opt.second_relevance != 0) {
    if (!(opt.second_relevance > 1)) throw Error::usage("--second-relevance {} must be above 1", opt.second_relevance);
    if (o.saddle) throw Error::usage("give --saddle-threshold or --second-relevance, not both");
    o.second_relevance = opt.second_relevance;
  }
  if (!opt.mass_threshold.empty()) o.mass = MassThreshold::parse(opt.mass_threshold);
  return o;
}

}  // namespace

void declare_merge_options(CLI::App& app, MergeOptions& opt) {
  app.add_option("patches", opt.patches, "Peak patches from phew-segment (patches.h5)")->required();
  app.add_option("--grid", opt.grid, "The density grid (default: the one recorded in the patches manifest)");
  app.add_option("-r,--relevance", opt.relevance, "Relevance threshold for noise removal (peak / key saddle), > 1")
      ->capture_default_str();
  app.add_option("-s,--saddle-threshold", opt.saddle_threshold,
                 "Merge clumps whose key saddle is above this density: absolute, 200mean or 200crit");
  app.add_option("--second-relevance", opt.second_relevance,
                 "Instead of a saddle threshold, merge clumps again with this higher relevance threshold");
  app.add_option("-m,--mass-threshold", opt.mass_threshold,
                 "Only list clumps and haloes at least this massive: absolute or 10particles (filters the catalogue only)");
  app.add_option("--particles", opt.particles, "Snapshot: give each particle its clump and halo, add particle masses and bulk velocities");
  app.add_option("--types", opt.types, "Particle types for --particles (auto: dark matter)")->capture_default_str();
  app.add_flag("--export-text", opt.export_text,
               "Also write OUTPUT.clumps.txt and OUTPUT.halos.txt (RAMSES columns) and .csv versions");
}

void run_phew_merge(const MergeOptions& opt, Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  const Options o = check_options(opt);
  const unsigned shuffle_seed = std::getenv("PHEW_TEST_SHUFFLE_SEED") ? static_cast<unsigned>(std::atoi(std::getenv("PHEW_TEST_SHUFFLE_SEED"))) : 0;

  ctx.phase("open");
  std::string grid_path = opt.grid;
  mpi::agree(comm, [&] {
    if (!comm.root()) return;
    const auto patches = manifest::check_phew_input(opt.patches, {"patches"});
    const auto m = manifest::read_manifest(opt.patches);
    const auto& recorded = m.at("inputs").at(0);
    if (grid_path.empty()) grid_path = recorded.at("path").get<std::string>();
    const auto grid = manifest::check_phew_input(grid_path, {"grid"});
    if (grid.fingerprint != recorded.at("fingerprint").get<std::string>())
      throw Error::input("{}: is not the grid {} was made from (stale or swapped upstream file)", grid_path, opt.patches);
    ctx.manifest().add_input(patches);
    ctx.manifest().add_input(grid);
  });
  comm.broadcast(grid_path);
  std::optional<io::File> pf, gf;
  GridMeta grid;
  double density_threshold = 0;
  std::int64_t npeaks = 0;
  mpi::agree(comm, [&] {
    pf.emplace(io::File::open_read(opt.patches));
    gf.emplace(io::File::open_read(grid_path));
    grid = io::read_grid_attributes(*pf, "/grid", false);
    density_threshold = pf->read_attribute_scalar<double>("/cells", "threshold");
    npeaks = static_cast<std::int64_t>(pf->dataset_info("/peaks/id").elements());
  });
  const GridGeometry& geo = grid.geometry;
  std::optional<double> saddle_abs, mass_abs;
  mpi::agree(comm, [&] {
    if (o.saddle) saddle_abs = o.saddle->resolve(grid.mean_density, grid.critical_density);
    if (o.mass) mass_abs = o.mass->resolve(grid.particle_mass);
  });
  if (npeaks == 0) log::warn("{} has no peaks: the catalogue is empty", opt.patches);

  ctx.phase("graph");
  PeakGraph g(npeaks, comm);
  std::vector<Vec3> position;
  mpi::agree(comm, [&] { read_graph(*pf, g, position, comm); });
  const std::size_t n = g.density.size();
  const std::vector<KeySaddle> key0 = key_saddles(g);

  ctx.phase("noise");
  const MergeOutcome noise = merge_levels(g, {Criterion::Kind::relevance, o.relevance, density_threshold, true}, comm, shuffle_seed);
  int rounds = 0;
  const std::vector<std::int64_t> root = resolve_roots(g, into_of(g, noise), comm, &rounds);
  std::vector<char> discarded(n, 0);
  for (std::int64_t id : noise.discarded) discarded[g.local(id)] = 1;
  // A peak belongs to the level-0 clump at the root of its mergers, unless that root was discarded.
  const auto root_discarded = mpi::lookup<std::int64_t, char>(
      comm, root, [&](std::int64_t id) { return g.owner(id); }, [&](std::int64_t id) { return discarded[g.local(id)]; });
  std::vector<std::int64_t> clump_of(n);
  for (std::size_t i = 0; i < n; ++i) clump_of[i] = root_discarded[i] ? 0 : root[i];
  const std::vector<KeySaddle> key1 = key_saddles(g);  // of the level-0 clumps
  std::vector<char> is_clump(g.alive);
  const auto n_clumps = comm.sum<std::uint64_t>(static_cast<std::uint64_t>(std::count(is_clump.begin(), is_clump.end(), 1)));
  log::info("noise removal: {} peaks -> {} level-0 clumps in {} levels ({} discarded)",
            log::thousands(npeaks), log::thousands(static_cast<long long>(n_clumps)), noise.levels,
            log::thousands(comm.sum<std::int64_t>(static_cast<std::int64_t>(noise.discarded.size()))));

  ctx.phase("hierarchy");
  MergeOutcome tree;
  if (saddle_abs)
    tree = merge_levels(g, {Criterion::Kind::saddle, *saddle_abs, density_threshold, false}, comm, shuffle_seed);
  else if (o.second_relevance)
    tree = merge_levels(g, {Criterion::Kind::relevance, *o.second_relevance, density_threshold, false}, comm, shuffle_seed);
  const std::vector<std::int64_t> halo_of = resolve_roots(g, into_of(g, tree), comm);
  std::vector<std::int64_t> parent(n, 0), level(n, 0);
  for (std::size_t i = 0; i < n; ++i) parent[i] = g.first + static_cast<std::int64_t>(i);
  for (const Merger& m : tree.mergers) {
    parent[g.local(m.node)] = m.into;
    level[g.local(m.node)] = m.level;
  }
  const auto n_halos = comm.sum<std::uint64_t>(static_cast<std::uint64_t>(std::count(g.alive.begin(), g.alive.end(), 1)));
  log::info("saddle hierarchy: {} haloes, {} levels", log::thousands(static_cast<long long>(n_halos)), tree.levels);

  ctx.phase("cells");
  const mpi::SlabDecomposition slabs(geo.shape[0], comm.size());
  const std::int64_t x0 = slabs.begin(comm.rank()), x1 = slabs.end(comm.rank());
  std::vector<std::int64_t> cell_clump, cell_halo;
  std::vector<double> rho;
  mpi::agree(comm, [&] {
    cell_clump = x1 > x0 ? pf->read_rows<std::int64_t>("/cells/peak", static_cast<std::uint64_t>(x0), static_cast<std::uint64_t>(x1 - x0))
                         : std::vector<std::int64_t>{};
    rho = x1 > x0 ? io::read_grid_planes(*gf, x0, x1) : std::vector<double>{};
  });
  pf.reset();
  gf.reset();
  // Peak -> clump -> halo for the labels of this slab, and each clump's peak position for its centre of mass.
  std::vector<std::int64_t> wanted;
  for (std::int64_t p : cell_clump)
    if (p > 0) wanted.push_back(p);
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  auto owner = [&](std::int64_t id) { return g.owner(id); };
  const auto wanted_clump = mpi::lookup<std::int64_t, std::int64_t>(comm, wanted, owner, [&](std::int64_t id) { return clump_of[g.local(id)]; });
  std::vector<std::int64_t> clumps_here(wanted_clump);
  clumps_here.erase(std::remove(clumps_here.begin(), clumps_here.end(), 0), clumps_here.end());
  std::sort(clumps_here.begin(), clumps_here.end());
  clumps_here.erase(std::unique(clumps_here.begin(), clumps_here.end()), clumps_here.end());
  const auto clump_halo = mpi::lookup<std::int64_t, std::int64_t>(comm, clumps_here, owner, [&](std::int64_t id) { return halo_of[g.local(id)]; });
  const auto clump_pos = mpi::lookup<std::int64_t, Vec3>(comm, clumps_here, owner, [&](std::int64_t id) { return position[g.local(id)]; });
  auto index_in = [](const std::vector<std::int64_t>& sorted, std::int64_t id) {
    return static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), id) - sorted.begin());
  };

  const auto plane = static_cast<std::size_t>(geo.shape[1] * geo.shape[2]);
  const auto cell_size = geo.cell_size();
  const double volume = geo.cell_volume();
  mpi::OrderedSum<5> clump_sums;  // cells, mass, mass * (x, y, z) relative to the clump's peak
  mpi::OrderedSum<2> halo_sums;   // cells, mass
  mpi::OrderedSum<2> budget;      // key 1: above threshold, key 2: discarded as noise (cells, mass)
  cell_halo.assign(cell_clump.size(), 0);
  for (std::size_t s = 0; s < cell_clump.size(); ++s) {
    const std::int64_t peak = cell_clump[s];
    if (peak <= 0) continue;
    const std::int64_t chunk = x0 + static_cast<std::int64_t>(s / plane);
    const double m = rho[s] * volume;
    budget.add(1, chunk, {1.0, m});
    const std::int64_t c = wanted_clump[index_in(wanted, peak)];
    cell_clump[s] = c;
    if (c == 0) {
      budget.add(2, chunk, {1.0, m});
      continue;
    }
    const std::size_t k = index_in(clumps_here, c);
    const std::int64_t h = clump_halo[k];
    cell_halo[s] = h;
    const std::array<std::int64_t, 3> ijk{chunk, static_cast<std::int64_t>(s % plane) / geo.shape[2],
                                          static_cast<std::int64_t>(s % plane) % geo.shape[2]};
    std::array<double, 5> v{1.0, m, 0, 0, 0};
    for (std::size_t d = 0; d < 3; ++d) {
      const double x = geo.origin[d] + (static_cast<double>(ijk[d]) + 0.5) * cell_size[d];
      v[2 + d] = m * minimum_image(x - clump_pos[k][d], geo.extent[d], geo.periodic);
    }
    clump_sums.add(c, chunk, v);
    halo_sums.add(h, chunk, {1.0, m});
  }
  const auto clump_tot = clump_sums.totals_at_owners(comm, owner);
  const auto halo_tot = halo_sums.totals_at_owners(comm, owner);
  const auto budget_tot = budget.totals(comm);
  // Number of level-0 clumps per halo, counted at the halo's owner.
  mpi::OrderedSum<1> members;
  for (std::size_t i = 0; i < n; ++i)
    if (is_clump[i]) members.add(halo_of[i], 0, {1.0});
  const auto members_tot = members.totals_at_owners(comm, owner);

  // Particles: each takes the clump and halo of the cell it lies in.
  std::map<std::int64_t, std::array<double, 5>> clump_part, halo_part;
  if (!opt.particles.empty()) {
    ctx.phase("particles");
    std::unique_ptr<SnapshotReader> reader;
    std::vector<int> types;
    mpi::agree(comm, [&] {
      reader = open_snapshot({opt.particles});
      const SnapshotInfo& info = reader->info();
      types = selected_types(info, opt.types);
      check_snapshot_matches_grid(info, grid, opt.particles, opt.patches);
      if (comm.root()) for (const auto& f : info.files) ctx.manifest().add_input(manifest::external_input(f, "snapshot"));
    });
    FieldSelection fields;
    fields.velocities = true;
    const ParticleSet ps = read_share(*reader, types, fields, comm);
    // Route particles to the owner of their cell's plane, in snapshot order.
    struct P {
      std::int64_t cell;
      double m, v[3];
    };
    std::vector<P> mine;
    for (std::size_t i = 0; i < ps.size(); ++i) {
      std::array<std::int64_t, 3> c{};
      bool inside = true;
      for (std::size_t d = 0; d < 3; ++d) {
        const double u = (ps.position[3 * i + d] - geo.origin[d]) / cell_size[d];
        c[d] = static_cast<std::int64_t>(std::floor(u));
        if (geo.periodic) c[d] = ((c[d] % geo.shape[d]) + geo.shape[d]) % geo.shape[d];
        else inside &= c[d] >= 0 && c[d] < geo.shape[d];
      }
      if (!inside) continue;
      mine.push_back({(c[0] * geo.shape[1] + c[1]) * geo.shape[2] + c[2], ps.mass[i],
                      {ps.velocity[3 * i], ps.velocity[3 * i + 1], ps.velocity[3 * i + 2]}});
    }
    const auto dest = [&](const P& p) { return slabs.owner(p.cell / static_cast<std::int64_t>(plane)); };
    const auto got = mpi::route(comm, mine, dest);
    mpi::OrderedSum<5> cp, hp;  // particles, mass, mass * velocity
    for (const P& p : got) {
      const auto s = static_cast<std::size_t>(p.cell - x0 * static_cast<std::int64_t>(plane));
      const std::int64_t c = cell_clump[s], h = cell_halo[s];
      if (c == 0) continue;
      const std::array<double, 5> v{1.0, p.m, p.m * p.v[0], p.m * p.v[1], p.m * p.v[2]};
      cp.add(c, p.cell / static_cast<std::int64_t>(plane), v);
      hp.add(h, p.cell / static_cast<std::int64_t>(plane), v);
    }
    clump_part = cp.totals_at_owners(comm, owner);
    halo_part = hp.totals_at_owners(comm, owner);
  }

  ctx.phase("catalogue");
  io::PeakMergeRows peak_rows;
  io::ClumpRows clumps;
  io::HaloRows halos;
  io::HierarchyRows hierarchy;
  auto total_or_zero = [](const auto& map, std::int64_t id) {
    auto it = map.find(id);
    return it == map.end() ? typename std::decay_t<decltype(map)>::mapped_type{} : it->second;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t id = g.first + static_cast<std::int64_t>(i);
    peak_rows.id.push_back(id);
    peak_rows.key_neighbour.push_back(key0[i].to);
    peak_rows.key_saddle.push_back(key0[i].to ? key0[i].saddle : 0.0);
    peak_rows.relevance.push_back(g.density[i] / (key0[i].to ? key0[i].saddle : density_threshold));
    peak_rows.clump.push_back(clump_of[i]);
    if (!is_clump[i]) continue;
    const auto t = total_or_zero(clump_tot, id);
    if (mass_abs && t[1] < *mass_abs) continue;
    clumps.id.push_back(id);
    clumps.level.push_back(level[i]);
    clumps.parent.push_back(parent[i]);
    clumps.halo.push_back(halo_of[i]);
    clumps.n_cells.push_back(static_cast<std::int64_t>(t[0]));
    clumps.mass.push_back(t[1]);
    clumps.peak_position.insert(clumps.peak_position.end(), position[i].begin(), position[i].end());
    clumps.peak_density.push_back(g.density[i]);
    const double saddle = key1[i].to ? key1[i].saddle : 0.0;
    clumps.saddle_density.push_back(saddle);
    clumps.mean_density.push_back(t[0] > 0 ? t[1] / (t[0] * volume) : 0.0);
    clumps.relevance.push_back(g.density[i] / (key1[i].to ? saddle : density_threshold));
    for (std::size_t d = 0; d < 3; ++d) {
      double x = position[i][d] + (t[1] > 0 ? t[2 + d] / t[1] : 0.0);
      if (geo.periodic) x = geo.origin[d] + std::fmod(std::fmod(x - geo.origin[d], geo.extent[d]) + geo.extent[d], geo.extent[d]);
      clumps.center_of_mass.push_back(x);
    }
    if (!opt.particles.empty()) {
      const auto p = total_or_zero(clump_part, id);
      clumps.n_particles.push_back(static_cast<std::int64_t>(p[0]));
      clumps.particle_mass.push_back(p[1]);
      for (std::size_t d = 0; d < 3; ++d) clumps.bulk_velocity.push_back(p[1] > 0 ? p[2 + d] / p[1] : 0.0);
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t id = g.first + static_cast<std::int64_t>(i);
    if (!g.alive[i]) continue;  // haloes are the clumps that never merged into another
    const auto t = total_or_zero(halo_tot, id);
    if (mass_abs && t[1] < *mass_abs) continue;
    halos.id.push_back(id);
    halos.n_cells.push_back(static_cast<std::int64_t>(t[0]));
    halos.mass.push_back(t[1]);
    halos.peak_position.insert(halos.peak_position.end(), position[i].begin(), position[i].end());
    halos.n_clumps.push_back(static_cast<std::int64_t>(total_or_zero(members_tot, id)[0]));
    if (!opt.particles.empty()) {
      const auto p = total_or_zero(halo_part, id);
      halos.n_particles.push_back(static_cast<std::int64_t>(p[0]));
      halos.particle_mass.push_back(p[1]);
      for (std::size_t d = 0; d < 3; ++d) halos.bulk_velocity.push_back(p[1] > 0 ? p[2 + d] / p[1] : 0.0);
    }
  }
  // Hierarchy rows by clump ID (each clump merges at most once), so each rank's rows follow lower ranks'.
  std::vector<Merger> mergers = tree.mergers;
  std::sort(mergers.begin(), mergers.end(), [](const Merger& a, const Merger& b) { return a.node < b.node; });
  for (const Merger& mg : mergers) {
    hierarchy.clump.push_back(mg.node);
    hierarchy.into.push_back(mg.into);
    hierarchy.level.push_back(mg.level);
    hierarchy.saddle_density.push_back(mg.saddle);
  }

  const double above = budget_tot.count(1) ? budget_tot.at(1)[1] : 0.0;
  const double noise_mass = budget_tot.count(2) ? budget_tot.at(2)[1] : 0.0;
  log::info("mass above the threshold {:.6g}: in clumps {:.6g}, discarded as noise {:.6g} {}", above, above - noise_mass,
            noise_mass, grid.mass_units);

  ctx.phase("write");
  io::ClumpsMeta meta;
  meta.density_threshold = density_threshold;
  meta.relevance = o.relevance;
  meta.saddle_threshold = saddle_abs;
  meta.saddle_threshold_text = o.saddle ? o.saddle->to_string() : "";
  meta.second_relevance = o.second_relevance;
  meta.mass_threshold = mass_abs;
  meta.mass_threshold_text = o.mass ? o.mass->to_string() : "";
  meta.with_particles = !opt.particles.empty();
  meta.velocity_units = "km/s";
  io::AtomicOutput out(ctx.output(), comm);
  io::File f = io::File::create(out.temp_path(), comm);
  io::write_clumps(f, grid, slabs, cell_clump, cell_halo, peak_rows, clumps, halos, hierarchy, meta, comm);

  auto& m = ctx.manifest();
  m.parameter("saddle_threshold_absolute", saddle_abs ? manifest::Json(*saddle_abs) : manifest::Json(nullptr), grid.density_units);
  m.parameter("mass_threshold_absolute", mass_abs ? manifest::Json(*mass_abs) : manifest::Json(nullptr), grid.mass_units);
  m.parameter("density_threshold", density_threshold, grid.density_units);
  m.summary("n_peaks", npeaks);
  m.summary("n_clumps_level0", n_clumps);
  m.summary("n_haloes", n_halos);
  m.summary("noise_levels", noise.levels);
  m.summary("noise_rounds_per_level", noise.rounds_per_level);
  m.summary("hierarchy_levels", tree.levels);
  m.summary("hierarchy_rounds_per_level", tree.rounds_per_level);
  m.summary("mass_above_threshold", above);
  m.summary("mass_in_clumps", above - noise_mass);
  m.summary("mass_discarded", noise_mass);

  if (opt.export_text) {
    ctx.phase("export");
    export_catalogue_text(ctx.output(), clumps, halos, comm);
  }
  ctx.finish_output(f, out);
}

}  // namespace phew
