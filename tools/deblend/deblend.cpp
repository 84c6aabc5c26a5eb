#include "deblend.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/grid_file.hpp"
#include "manifest/fingerprint.hpp"
#include "mpi/agree.hpp"
#include "mpi/lookup.hpp"
#include "mpi/route.hpp"
#include "mpi/slab.hpp"
#include "mpi/sort.hpp"
#include "particles/snapshot.hpp"
#include "phasespace/velocity_split.hpp"

#include <cmath>
#include <map>
#include <optional>

namespace phew {
namespace {

// A member particle on its way to the rank that deblends its patch.
struct Member {
  std::int64_t clump;
  std::uint64_t id;
  double x[3], v[3], m;
};

// One row of the peak table.
struct PeakRow {
  std::int64_t id, parent_clump, n_particles, from_deblending;
  double position[3], velocity[3], mass, densest_cell_position[3];
};

struct ParticleRow {
  std::uint64_t id;
  std::int64_t peak;
};

}  // namespace

void declare_deblend_options(CLI::App& app, DeblendOptions& opt) {
  app.add_option("clumps", opt.clumps, "Clumps from phew-merge (clumps.h5)")->required();
  app.add_option("snapshot", opt.snapshot, "The snapshot the grid was made from")->required();
  app.add_option("-f,--bin-fraction", opt.bin_fraction, "Velocity bin size in units of the patch escape velocity")
      ->capture_default_str();
  app.add_option("-n,--min-particles", opt.min_particles,
                 "Fewest particles for a patch to be deblended and for a velocity peak to be kept")
      ->capture_default_str();
  app.add_option("-r,--velocity-relevance", opt.velocity_relevance,
                 "Relevance threshold (peak / key saddle) for velocity peaks, > 1")
      ->capture_default_str();
  app.add_option("--types", opt.types, "Particle types (auto: dark matter)")->capture_default_str();
}

void run_deblend(const DeblendOptions& opt, Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  if (!(opt.bin_fraction > 0)) throw Error::usage("--bin-fraction {} must be positive", opt.bin_fraction);
  if (!(opt.velocity_relevance > 1)) throw Error::usage("--velocity-relevance {} must be above 1", opt.velocity_relevance);
  if (opt.min_particles < 2) throw Error::usage("--min-particles {} must be at least 2", opt.min_particles);

  ctx.phase("open");
  std::unique_ptr<SnapshotReader> reader;
  std::vector<int> types;
  GridMeta grid;
  std::optional<io::File> cf;
  std::int64_t npeaks = 0;
  mpi::agree(comm, [&] {
    cf.emplace(io::File::open_read(opt.clumps));
    reader = open_snapshot({opt.snapshot});
    const SnapshotInfo& info = reader->info();
    if (!info.has_velocities) throw Error::input("{}: the snapshot has no velocities", opt.snapshot);
    types = selected_types(info, opt.types);
    grid = io::read_grid_attributes(*cf, "/grid", false);
    npeaks = static_cast<std::int64_t>(cf->dataset_info("/peaks/id").elements());
    check_snapshot_matches_grid(info, grid, opt.snapshot, opt.clumps);
  });
  mpi::agree(comm, [&] {
    if (!comm.root()) return;
    ctx.manifest().add_input(manifest::check_phew_input(opt.clumps, {"clumps"}));
    for (const auto& in : manifest::snapshot_inputs_in_chain(opt.clumps, reader->info().files)) ctx.manifest().add_input(in);
  });
  const GridGeometry& geo = grid.geometry;
  const SnapshotInfo& info = reader->info();
  const double G = info.units.gravitational_constant();
  // Gadget stores comoving positions and u = v_pec / sqrt(a); v_e compares physical quantities.
  const double a = info.comoving ? info.time : 1.0;

  ctx.phase("read");
  FieldSelection fields;
  fields.ids = fields.velocities = true;
  const ParticleSet ps = read_share(*reader, types, fields, comm);

  ctx.phase("members");
  // Each particle goes to the owner of its cell's plane, which knows the cell's clump.
  const mpi::SlabDecomposition slabs(geo.shape[0], comm.size());
  const std::int64_t x0 = slabs.begin(comm.rank()), x1 = slabs.end(comm.rank());
  std::vector<std::int64_t> cell_clump;
  mpi::agree(comm, [&] {
    if (x1 > x0) cell_clump = cf->read_rows<std::int64_t>("/cells/clump", static_cast<std::uint64_t>(x0), static_cast<std::uint64_t>(x1 - x0));
  });
  const auto plane = geo.shape[1] * geo.shape[2];
  const auto cell_size = geo.cell_size();
  std::vector<Member> out;
  std::vector<std::int64_t> cell_of;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    std::int64_t c[3];
    bool inside = true;
    for (std::size_t d = 0; d < 3; ++d) {
      c[d] = static_cast<std::int64_t>(std::floor((ps.position[3 * i + d] - geo.origin[d]) / cell_size[d]));
      if (geo.periodic) c[d] = ((c[d] % geo.shape[d]) + geo.shape[d]) % geo.shape[d];
      else inside &= c[d] >= 0 && c[d] < geo.shape[d];
    }
    if (!inside) continue;
    Member m{(c[0] * geo.shape[1] + c[1]) * geo.shape[2] + c[2], ps.id[i], {}, {}, ps.mass[i]};
    for (std::size_t d = 0; d < 3; ++d) {
      m.x[d] = ps.position[3 * i + d];
      m.v[d] = ps.velocity[3 * i + d];
    }
    out.push_back(m);  // `clump` holds the cell index until the owner fills in the clump
  }
  std::vector<Member> at_cells = mpi::route(comm, out, [&](const Member& p) { return slabs.owner(p.clump / plane); });
  std::vector<Member> members;
  for (Member& p : at_cells) {
    const std::int64_t label = cell_clump[static_cast<std::size_t>(p.clump - x0 * plane)];
    if (label <= 0) continue;
    p.clump = label;
    members.push_back(p);
  }
  at_cells.clear();

  // Balance: patches go to ranks in contiguous runs of clump IDs with about equal particle counts.
  const mpi::SlabDecomposition id_blocks(std::max<std::int64_t>(npeaks, 1), comm.size());
  auto id_owner = [&](std::int64_t id) { return id_blocks.owner(id - 1); };
  std::map<std::int64_t, std::int64_t> count_here;
  for (const Member& p : members) ++count_here[p.clump];
  struct IdCount {
    std::int64_t id, n;
  };
  std::vector<IdCount> pairs;
  for (const auto& [id, n] : count_here) pairs.push_back({id, n});
  std::map<std::int64_t, std::int64_t> counts;  // clump -> particles, for clumps owned here
  for (const IdCount& p : mpi::route(comm, pairs, [&](const IdCount& q) { return id_owner(q.id); })) counts[p.id] += p.n;
  std::int64_t mine_total = 0;
  for (const auto& [id, n] : counts) mine_total += n;
  const auto all_totals = comm.all_gather(mine_total);
  std::int64_t before = 0, total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (r < comm.rank()) before += all_totals[static_cast<std::size_t>(r)];
    total += all_totals[static_cast<std::size_t>(r)];
  }
  std::map<std::int64_t, int> dest_of;
  for (const auto& [id, n] : counts) {
    dest_of[id] = total ? static_cast<int>(std::min<std::int64_t>(comm.size() - 1, before * comm.size() / total)) : 0;
    before += n;
  }
  std::vector<std::int64_t> clump_ids;
  for (const Member& p : members) clump_ids.push_back(p.clump);
  const auto dest = mpi::lookup<std::int64_t, int>(comm, clump_ids, id_owner, [&](std::int64_t id) {
    const auto d = dest_of.find(id);
    if (d == dest_of.end()) throw Error::internal("clump {} has no particle count at its owner, rank {}", id, comm.rank());
    return d->second;
  });
  for (std::size_t i = 0; i < members.size(); ++i) members[i].clump = members[i].clump * comm.size() + dest[i];  // carry dest
  members = mpi::route(comm, members, [&](const Member& p) { return static_cast<int>(p.clump % comm.size()); });
  for (Member& p : members) p.clump /= comm.size();
  std::sort(members.begin(), members.end(), [](const Member& p, const Member& q) {
    return p.clump != q.clump ? p.clump < q.clump : p.id < q.id;
  });

  // The clumps' peak positions (R_max is measured from the peak), from the catalogue rows of the clumps here.
  std::vector<std::int64_t> here;
  for (const Member& p : members)
    if (here.empty() || here.back() != p.clump) here.push_back(p.clump);
  std::map<std::int64_t, std::array<double, 3>> peak_pos;
  mpi::agree(comm, [&] {
    const std::uint64_t rows = cf->dataset_info("/clumps/id").elements();
    constexpr std::uint64_t kChunk = 1 << 20;
    for (std::uint64_t b = 0; b < rows; b += kChunk) {
      const std::uint64_t c = std::min(kChunk, rows - b);
      const auto ids = cf->read_rows<std::int64_t>("/clumps/id", b, c);
      const auto pos = cf->read_rows<double>("/clumps/peak_position", b, c);
      for (std::size_t i = 0; i < c; ++i)
        if (std::binary_search(here.begin(), here.end(), ids[i])) peak_pos[ids[i]] = {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]};
    }
  });
  cf.reset();

  ctx.phase("deblend");
  VelocitySplitParams params;
  params.relevance = opt.velocity_relevance;
  params.min_particles = opt.min_particles;
  std::vector<PeakRow> primaries, extras;
  std::vector<ParticleRow> particle_rows;
  std::int64_t split_patches = 0, skipped = 0;
  std::size_t b = 0;
  while (b < members.size()) {
    std::size_t e = b;
    while (e < members.size() && members[e].clump == members[b].clump) ++e;
    const std::int64_t clump = members[b].clump;
    auto pp = peak_pos.find(clump);
    if (pp == peak_pos.end()) {  // not in the catalogue (e.g. below phew-merge's --mass-threshold)
      ++skipped;
      b = e;
      continue;
    }
    const auto& x_peak = pp->second;
    const auto n = static_cast<std::int64_t>(e - b);
    double mass = 0, r_max = 0;
    std::vector<double> vel, m;
    for (std::size_t i = b; i < e; ++i) {
      mass += members[i].m;
      double r2 = 0;
      for (std::size_t d = 0; d < 3; ++d) {
        const double dx = a * minimum_image(members[i].x[d] - x_peak[d], geo.extent[d], geo.periodic);
        r2 += dx * dx;
        vel.push_back(members[i].v[d] * std::sqrt(a));
      }
      r_max = std::max(r_max, std::sqrt(r2));
      m.push_back(members[i].m);
    }
    VelocitySplit split;
    split.peak.assign(static_cast<std::size_t>(n), 0);
    if (n >= opt.min_particles && r_max > 0) {
      params.bin = opt.bin_fraction * std::sqrt(2 * G * mass / r_max);
      split = split_velocities(vel, m, params);
    }
    if (split.n_peaks > 1) ++split_patches;
    // Properties of each velocity peak: sums in particle-ID order.
    for (int k = 0; k < split.n_peaks; ++k) {
      PeakRow row{0, clump, 0, k > 0 ? 1 : 0, {0, 0, 0}, {0, 0, 0}, 0, {0, 0, 0}};
      double dx[3] = {0, 0, 0};
      std::map<std::int64_t, std::int64_t> cells;
      for (std::size_t i = b; i < e; ++i) {
        if (split.peak[i - b] != k) continue;
        const Member& p = members[i];
        row.n_particles += 1;
        row.mass += p.m;
        for (std::size_t d = 0; d < 3; ++d) {
          dx[d] += p.m * minimum_image(p.x[d] - x_peak[d], geo.extent[d], geo.periodic);
          row.velocity[d] += p.m * p.v[d];
        }
        std::int64_t c = 0;
        for (std::size_t d = 0; d < 3; ++d) {
          std::int64_t ci = static_cast<std::int64_t>(std::floor((p.x[d] - geo.origin[d]) / cell_size[d]));
          if (geo.periodic) ci = ((ci % geo.shape[d]) + geo.shape[d]) % geo.shape[d];
          c = c * geo.shape[d] + std::clamp<std::int64_t>(ci, 0, geo.shape[d] - 1);
        }
        ++cells[c];
      }
      std::int64_t best_cell = 0, best_n = -1;
      for (const auto& [c, cnt] : cells)
        if (cnt > best_n) {
          best_n = cnt;
          best_cell = c;
        }
      const std::int64_t ijk[3] = {best_cell / plane, (best_cell % plane) / geo.shape[2], best_cell % geo.shape[2]};
      for (std::size_t d = 0; d < 3; ++d) {
        double x = x_peak[d] + (row.mass > 0 ? dx[d] / row.mass : 0);
        if (geo.periodic) x = geo.origin[d] + std::fmod(std::fmod(x - geo.origin[d], geo.extent[d]) + geo.extent[d], geo.extent[d]);
        row.position[d] = x;
        row.velocity[d] = row.mass > 0 ? row.velocity[d] / row.mass : 0;
        row.densest_cell_position[d] = geo.origin[d] + (static_cast<double>(ijk[d]) + 0.5) * cell_size[d];
      }
      (k == 0 ? primaries : extras).push_back(row);
    }
    for (std::size_t i = b; i < e; ++i)
      particle_rows.push_back({members[i].id, split.peak[i - b] == 0 ? clump : -static_cast<std::int64_t>(split.peak[i - b])});
    b = e;
  }

  // New peaks get IDs above every peak ID, numbered by (clump ID, velocity peak): a scan over ranks,
  // which hold runs of clump IDs in rank order.
  const auto extras_here = static_cast<std::int64_t>(extras.size());
  const auto all_extras = comm.all_gather(extras_here);
  std::int64_t next = npeaks + 1;
  for (int r = 0; r < comm.rank(); ++r) next += all_extras[static_cast<std::size_t>(r)];
  std::map<std::pair<std::int64_t, int>, std::int64_t> new_id;  // (clump, k) -> ID
  {
    std::map<std::int64_t, int> k_of;
    for (PeakRow& row : extras) {
      const int k = ++k_of[row.parent_clump];
      row.id = next++;
      new_id[{row.parent_clump, k}] = row.id;
    }
  }
  for (PeakRow& row : primaries) row.id = row.parent_clump;
  // Particle rows: negative placeholders -k become the new IDs of their clump's k-th extra peak.
  {
    std::size_t pos = 0, bb = 0;
    while (bb < members.size()) {
      std::size_t ee = bb;
      while (ee < members.size() && members[ee].clump == members[bb].clump) ++ee;
      if (peak_pos.count(members[bb].clump)) {
        for (std::size_t i = bb; i < ee; ++i, ++pos)
          if (particle_rows[pos].peak < 0)
            particle_rows[pos].peak = new_id.at({members[bb].clump, static_cast<int>(-particle_rows[pos].peak)});
      }
      bb = ee;
    }
  }
  const auto n_split = comm.sum<std::int64_t>(split_patches);
  const auto n_new = comm.sum<std::int64_t>(extras_here);
  log::info("{} patches deblended: {} split, {} new peaks from velocity space ({} patches not in the catalogue)",
            log::thousands(comm.sum<std::int64_t>(static_cast<std::int64_t>(primaries.size()))), log::thousands(n_split),
            log::thousands(n_new), log::thousands(comm.sum<std::int64_t>(skipped)));

  ctx.phase("write");
  std::vector<PeakRow> rows(primaries);
  rows.insert(rows.end(), extras.begin(), extras.end());
  rows = mpi::sort(comm, std::move(rows), [](const PeakRow& p, const PeakRow& q) { return p.id < q.id; });
  particle_rows = mpi::sort(comm, std::move(particle_rows), [](const ParticleRow& p, const ParticleRow& q) {
    return p.id != q.id ? p.id < q.id : p.peak < q.peak;
  });
  io::AtomicOutput outfile(ctx.output(), comm);
  io::File f = io::File::create(outfile.temp_path(), comm);
  f.create_group("/grid");
  io::write_grid_attributes(f, grid, "/grid");
  auto column = [&](auto field) {
    using V = std::decay_t<decltype(field(rows[0]))>;
    std::vector<V> v;
    for (const PeakRow& r : rows) v.push_back(field(r));
    return v;
  };
  auto vec3 = [&](auto field) {
    std::vector<double> v;
    for (const PeakRow& r : rows) v.insert(v.end(), field(r), field(r) + 3);
    return v;
  };
  f.create_group("/peaks");
  f.write_distributed<std::int64_t>("/peaks/id", column([](const PeakRow& r) { return r.id; }), comm);
  f.write_distributed<std::int64_t>("/peaks/parent_clump", column([](const PeakRow& r) { return r.parent_clump; }), comm);
  f.write_distributed<double>("/peaks/position", vec3([](const PeakRow& r) { return r.position; }), comm, 3);
  f.write_distributed<double>("/peaks/densest_cell_position", vec3([](const PeakRow& r) { return r.densest_cell_position; }), comm, 3);
  f.write_distributed<double>("/peaks/velocity", vec3([](const PeakRow& r) { return r.velocity; }), comm, 3);
  f.write_distributed<std::int64_t>("/peaks/n_particles", column([](const PeakRow& r) { return r.n_particles; }), comm);
  f.write_distributed<double>("/peaks/mass", column([](const PeakRow& r) { return r.mass; }), comm);
  f.write_distributed<std::int8_t>("/peaks/from_deblending",
                                   column([](const PeakRow& r) { return static_cast<std::int8_t>(r.from_deblending); }), comm);
  f.write_attribute("/peaks/position", "units", grid.length_units);
  f.write_attribute("/peaks/densest_cell_position", "units", grid.length_units);
  f.write_attribute("/peaks/velocity", "units", info.units.velocity_name() + " (as stored in the snapshot)");
  f.write_attribute("/peaks/mass", "units", grid.mass_units);
  f.write_attribute<std::int64_t>("/peaks", "first_new_id", npeaks + 1);
  f.create_group("/particles");
  std::vector<std::uint64_t> pid;
  std::vector<std::int64_t> ppeak;
  for (const ParticleRow& r : particle_rows) {
    pid.push_back(r.id);
    ppeak.push_back(r.peak);
  }
  f.write_distributed<std::uint64_t>("/particles/id", pid, comm);
  f.write_distributed<std::int64_t>("/particles/peak", ppeak, comm);
  f.write_attribute("/", "time", info.time);
  f.write_attribute("/", "redshift", info.redshift);
  f.write_attribute("/", "gravitational_constant", G);

  auto& man = ctx.manifest();
  man.parameter("gravitational_constant", G, "(" + info.units.velocity_name() + ")^2 " + info.units.length_name() + "/(" +
                                                 info.units.mass_name() + ")");
  man.parameter("scale_factor_used", a);
  man.parameter("types_used", types);
  man.summary("n_peaks", comm.sum<std::int64_t>(static_cast<std::int64_t>(rows.size())));
  man.summary("n_split_patches", n_split);
  man.summary("n_new_peaks", n_new);
  man.summary("n_particles_in_patches", comm.sum<std::int64_t>(static_cast<std::int64_t>(pid.size())));
  ctx.finish_output(f, outfile);
}

}  // namespace phew
