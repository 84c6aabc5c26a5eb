#include <phew/watershed/catalogue.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/log.hpp>
#include <phew/core/threads.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/mpi/lookup.hpp>
#include <phew/mpi/exact_sums.hpp>
#include <phew/mpi/route.hpp>
#include <phew/watershed/merge.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace phew::watershed {
namespace {

using Vec3 = std::array<double, 3>;

// This rank's block of the peak table and every one of the file's n_saddles saddles that touches it,
// read in bounded chunks.
void read_graph(const CatalogueSource& f, std::uint64_t n_saddles, PeakGraph& g, std::vector<Vec3>& position,
                std::vector<double>& mass, const mpi::Comm& comm) {
  const std::size_t n = g.density.size();
  if (n > 0) {
    const auto rows = f.peaks(static_cast<std::uint64_t>(g.first - 1), n);
    position.resize(n);
    mass.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      g.density[i] = rows[i].density;
      position[i] = rows[i].position;
      mass[i] = rows[i].mass;
    }
  }
  constexpr std::uint64_t kChunk = 1 << 20;  // bounded memory however many saddles there are
  for (std::uint64_t b = 0; b < n_saddles; b += kChunk) {
    for (const model::SaddleRow& s : f.saddles(b, std::min(kChunk, n_saddles - b))) {
      if (g.owner(s.peak_a) == comm.rank()) g.edges.push_back({s.peak_a, s.peak_b, s.density});
      if (g.owner(s.peak_b) == comm.rank()) g.edges.push_back({s.peak_b, s.peak_a, s.density});
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

std::size_t index_in(const std::vector<std::int64_t>& sorted, std::int64_t id) {
  return static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), id) - sorted.begin());
}

// The distinct positive IDs among `ids` (each at most max_id), ascending: a mark per ID, where sorting
// a label per test cell (1.7 M on an adaptive mesh) took a tenth of phew-merge.
std::vector<std::int64_t> distinct_ids(const std::vector<std::int64_t>& ids, std::int64_t max_id) {
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(max_id) + 1, 0);
  for (std::int64_t id : ids)
    if (id > 0) seen[static_cast<std::size_t>(id)] = 1;
  std::vector<std::int64_t> out;
  for (std::size_t id = 1; id < seen.size(); ++id)
    if (seen[id]) out.push_back(static_cast<std::int64_t>(id));
  return out;
}

template <typename Map>
typename Map::mapped_type total_or_zero(const Map& map, std::int64_t id) {
  const auto it = map.find(id);
  return it == map.end() ? typename Map::mapped_type{} : it->second;
}

// The merging results every later step reads, per owned peak.
struct Merging {
  PeakGraph graph;
  std::vector<Vec3> position;
  std::vector<KeySaddle> key0, key1;   // key saddles of the peaks, and of the level-0 clumps
  std::vector<std::int64_t> clump_of;  // level-0 clump of each peak; 0 = discarded as noise
  std::vector<char> is_clump;          // a level-0 clump
  std::vector<std::int64_t> halo_of, parent, level;
  MergeOutcome hierarchy;
};

// Per-cell sums of one rank's run of cells: clumps (cells, mass, mass-weighted offsets from the peak,
// volume), haloes (cells, mass), the mass budget (key 1: above the threshold, key 2: discarded as noise)
// and the labels.
struct CellSums {
  std::map<std::int64_t, std::array<double, 6>> clump;
  std::map<std::int64_t, std::array<double, 2>> halo, budget;
  std::vector<std::int64_t> cells;                  // the run's test cells, ascending
  std::vector<std::int64_t> cell_clump, cell_halo;  // per test cell
};

CellSums cell_sums(const CatalogueSource& in, const Merging& mg, const mesh::CellSpace& space,
                   const std::vector<std::int64_t>& cuts, int threads, const mpi::Comm& comm) {
  const PeakGraph& g = mg.graph;
  const grid::GridGeometry& geo = space.grid();
  const auto r = static_cast<std::size_t>(comm.rank());
  CellSums out;
  std::vector<double> rho;  // per test cell: only test cells are read, so memory goes with them
  mpi::agree(comm, [&] {
    grid::CellLabels peaks = in.cells(cuts[r], cuts[r + 1]);
    rho = in.densities(peaks.cell);
    out.cells = std::move(peaks.cell);
    out.cell_clump = std::move(peaks.label);  // peak IDs, until they become clump IDs below
  });
  // Peak -> clump -> halo for the labels of this run, and each clump's peak position for its centre of mass.
  const std::int64_t max_id = g.owners.nx();  // peak (and clump) IDs are 1..max_id
  const std::vector<std::int64_t> wanted = distinct_ids(out.cell_clump, max_id);
  auto owner = [&](std::int64_t id) { return g.owner(id); };
  const auto wanted_clump = mpi::lookup<std::int64_t, std::int64_t>(
      comm, wanted, owner, [&](std::int64_t id) { return mg.clump_of[g.local(id)]; });
  const std::vector<std::int64_t> clumps_here = distinct_ids(wanted_clump, max_id);
  const auto clump_halo = mpi::lookup<std::int64_t, std::int64_t>(
      comm, clumps_here, owner, [&](std::int64_t id) { return mg.halo_of[g.local(id)]; });
  const auto clump_pos = mpi::lookup<std::int64_t, Vec3>(comm, clumps_here, owner,
                                                         [&](std::int64_t id) { return mg.position[g.local(id)]; });

  // Per peak ID (a dense index: memory goes with the peaks), its clump's place in clumps_here, or -1
  // when it was discarded as noise: one load per cell where two searches were.
  std::vector<std::int32_t> place_of_peak(static_cast<std::size_t>(max_id) + 1, -1);
  for (std::size_t i = 0; i < wanted.size(); ++i)
    if (wanted_clump[i] != 0)
      place_of_peak[static_cast<std::size_t>(wanted[i])] =
          static_cast<std::int32_t>(index_in(clumps_here, wanted_clump[i]));

  // Fixed-point sums (mpi::ExactSums), on threads: the bounds every rank agrees on are the heaviest test
  // cell, its mass times the box (an offset from the peak is at most that) and the largest cell.
  double heaviest = 0;
  for (std::size_t s = 0; s < rho.size(); ++s) heaviest = std::max(heaviest, rho[s] * space.volume(out.cells[s]));
  heaviest = comm.max(heaviest);
  const double box = std::max({geo.extent[0], geo.extent[1], geo.extent[2]});
  const core::FixedScale count = core::FixedScale::for_terms(1.0), mass = core::FixedScale::for_terms(heaviest),
                         moment = core::FixedScale::for_terms(heaviest * box);
  const std::array<core::FixedScale, 6> clump_scales{count,  mass,   moment,
                                                     moment, moment, core::FixedScale::for_terms(geo.cell_volume())};
  const std::array<core::FixedScale, 2> halo_scales{count, mass};
  // Each thread adds into its own row per clump of this run (clumps_here: memory goes with the clumps)
  // and its own mass budget; a halo's count and mass are its clumps' first two sums, added after the
  // loop. Integer sums: the grouping changes no bit.
  using Row = std::array<core::FixedInt, 6>;
  const auto nt = static_cast<std::size_t>(std::max(threads, 1));
  using Budget = std::array<std::array<core::FixedInt, 2>, 2>;  // (cells, mass) in a clump, and discarded
  std::vector<std::vector<Row>> rows(nt);
  std::vector<Budget> budget(nt, Budget{});
  out.cell_halo.assign(out.cell_clump.size(), 0);
  // The terms every cell shares are converted once: the count, and the volume of a cell of each level;
  // a cell's mass once for the three sums it enters (one scale).
  const core::FixedInt one = count.to_fixed(1.0);
  std::array<core::FixedInt, mesh::kMaxLevels + 1> fixed_volume{};
  for (int l = 0; l <= mesh::kMaxLevels; ++l)
    fixed_volume[static_cast<std::size_t>(l)] = clump_scales[5].to_fixed(space.level_volume(l));
  constexpr std::size_t kCellsPerTask = std::size_t{1} << 14;
  core::parallel_for(threads, out.cell_clump.size(), kCellsPerTask, [&](std::size_t b, std::size_t e, int thread) {
    const auto t = static_cast<std::size_t>(thread);
    std::vector<Row>& row = rows[t];
    if (row.empty()) row.assign(clumps_here.size(), Row{});
    for (std::size_t s = b; s < e; ++s) {
      const std::int64_t peak = out.cell_clump[s];
      if (peak <= 0) continue;
      const auto level = static_cast<std::size_t>(space.level(out.cells[s]));
      const double m = rho[s] * space.level_volume(static_cast<int>(level));
      const core::FixedInt fm = mass.to_fixed(m);
      const std::int32_t k = place_of_peak[static_cast<std::size_t>(peak)];
      std::array<core::FixedInt, 2>& spent = budget[t][k < 0 ? 1 : 0];
      spent[0] += one;
      spent[1] += fm;
      if (k < 0) {
        out.cell_clump[s] = 0;
        continue;
      }
      const auto c = static_cast<std::size_t>(k);
      out.cell_clump[s] = clumps_here[c];
      out.cell_halo[s] = clump_halo[c];
      const Vec3 x = space.centre(out.cells[s]);
      Row& sum = row[c];
      sum[0] += one;
      sum[1] += fm;
      for (std::size_t d = 0; d < 3; ++d)
        sum[2 + d] += moment.to_fixed(m * grid::minimum_image(x[d] - clump_pos[c][d], geo.extent[d], geo.periodic));
      sum[5] += fixed_volume[level];
    }
  });
  std::vector<mpi::ExactSums<6>::Entry> clump_parts;
  std::vector<mpi::ExactSums<2>::Entry> halo_parts, budget_parts;
  for (std::size_t c = 0; c < clumps_here.size(); ++c) {
    Row total{};
    for (const std::vector<Row>& row : rows)
      if (!row.empty())
        for (std::size_t i = 0; i < total.size(); ++i) total[i] += row[c][i];
    if (total[0] == 0) continue;  // no cell of this run: no entry, as for a key never added
    clump_parts.push_back({clumps_here[c], total});
    halo_parts.push_back({clump_halo[c], {total[0], total[1]}});
  }
  // The budget's keys: 1 every cell above the threshold, 2 those discarded as noise.
  Budget all{};
  for (const Budget& b : budget)
    for (std::size_t kind = 0; kind < 2; ++kind)
      for (std::size_t i = 0; i < 2; ++i) all[kind][i] += b[kind][i];
  if (all[0][0] + all[1][0] != 0) budget_parts.push_back({1, {all[0][0] + all[1][0], all[0][1] + all[1][1]}});
  if (all[1][0] != 0) budget_parts.push_back({2, all[1]});
  out.clump = mpi::ExactSums<6>::at_owners(comm, clump_parts, clump_scales, owner);
  out.halo = mpi::ExactSums<2>::at_owners(comm, halo_parts, halo_scales, owner);
  out.budget = mpi::ExactSums<2>::everywhere(comm, budget_parts, halo_scales);
  return out;
}

// Particles: each takes the clump and halo of the cell it lies in; sums of count, mass and momentum at
// the clumps' and haloes' owners.
using ParticleSums = std::map<std::int64_t, std::array<double, 5>>;
void particle_sums(const particles::ParticleSet& ps, const CellSums& cells, const PeakGraph& g,
                   const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts, int threads,
                   const mpi::Comm& comm, ParticleSums& clumps, ParticleSums& halos) {
  struct P {
    std::int64_t point;  // space.point: the cell, or the finest-lattice point of the octree
    double m, v[3];
  };
  // The searches run on threads, each particle's result in its own place; the sums then run in order.
  constexpr std::size_t kChunk = std::size_t{1} << 16;
  std::vector<std::int64_t> point(ps.size());
  core::parallel_for(threads, ps.size(), kChunk, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) point[i] = space.point(&ps.position[3 * i]);
  });
  std::vector<P> mine;
  for (std::size_t i = 0; i < ps.size(); ++i)
    if (point[i] >= 0)
      mine.push_back({point[i], ps.mass[i], {ps.velocity[3 * i], ps.velocity[3 * i + 1], ps.velocity[3 * i + 2]}});
  core::release(point);
  const auto got = mpi::route(comm, mine, [&](const P& p) { return mesh::CellSpace::owner(cuts, p.point); });
  core::release(mine);
  std::vector<std::size_t> at(got.size());
  core::parallel_for(threads, got.size(), kChunk, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) at[i] = space.find(cells.cells, got[i].point);
  });
  // Fixed-point sums (mpi::ExactSums), on threads: bounded by the heaviest particle and its largest
  // momentum component over all ranks.
  double heaviest = 0, fastest = 0;
  for (const P& p : got) {
    heaviest = std::max(heaviest, p.m);
    fastest = std::max({fastest, p.m * std::abs(p.v[0]), p.m * std::abs(p.v[1]), p.m * std::abs(p.v[2])});
  }
  const core::FixedScale momentum = core::FixedScale::for_terms(comm.max(fastest));
  const std::array<core::FixedScale, 5> scales{
      core::FixedScale::for_terms(1.0), core::FixedScale::for_terms(comm.max(heaviest)), momentum, momentum, momentum};
  const auto nt = static_cast<std::size_t>(std::max(threads, 1));
  std::vector<mpi::ExactSums<5>> cp(nt, mpi::ExactSums<5>(scales)), hp(nt, mpi::ExactSums<5>(scales));
  core::parallel_for(threads, got.size(), kChunk, [&](std::size_t b, std::size_t e, int thread) {
    const auto t = static_cast<std::size_t>(thread);
    for (std::size_t i = b; i < e; ++i) {
      const P& p = got[i];
      const std::size_t s = at[i];
      if (s == cells.cells.size()) continue;  // not in a test cell
      const std::int64_t c = cells.cell_clump[s], h = cells.cell_halo[s];
      if (c == 0) continue;
      const std::array<double, 5> v{1.0, p.m, p.m * p.v[0], p.m * p.v[1], p.m * p.v[2]};
      cp[t].add(c, v);
      hp[t].add(h, v);
    }
  });
  auto owner = [&](std::int64_t id) { return g.owner(id); };
  clumps = mpi::ExactSums<5>::at_owners(comm, mpi::joined(cp), scales, owner);
  halos = mpi::ExactSums<5>::at_owners(comm, mpi::joined(hp), scales, owner);
}

Merging merge_peaks(const CatalogueSource& in, const model::PatchesHeader& header, const CatalogueParams& p,
                    const mpi::Comm& comm, const core::PhaseReport& phase, CatalogueSummary& summary) {
  const auto npeaks = static_cast<std::int64_t>(header.n_peaks);
  const double density_threshold = header.meta.threshold;
  core::enter(phase, "graph");
  Merging mg{PeakGraph(npeaks, comm), {}, {}, {}, {}, {}, {}, {}, {}, {}};
  PeakGraph& g = mg.graph;
  std::vector<double> mass;
  mpi::agree(comm, [&] { read_graph(in, header.n_saddles, g, mg.position, mass, comm); });
  const std::size_t n = g.density.size();
  mg.key0 = key_saddles(g);

  core::enter(phase, "noise");
  Criterion noise_rule{Criterion::Kind::relevance, p.relevance, density_threshold, true};
  if (p.noise_floor) {
    // Fixed point on a unit every rank agrees on (the heaviest patch), so merged masses add exactly.
    double heaviest = 0;
    for (double m : mass) heaviest = std::max(heaviest, m);
    const core::FixedScale scale = core::FixedScale::for_terms(comm.max(heaviest));
    g.mass.resize(n);
    for (std::size_t i = 0; i < n; ++i) g.mass[i] = scale.to_fixed(mass[i]);
    noise_rule.min_mass = scale.to_fixed(*p.noise_floor);
  }
  const MergeOutcome noise = merge_levels(g, noise_rule, comm, p.shuffle_seed);
  const std::vector<std::int64_t> root = resolve_roots(g, into_of(g, noise), comm);
  std::vector<char> discarded(n, 0);
  for (std::int64_t id : noise.discarded) discarded[g.local(id)] = 1;
  // A peak belongs to the level-0 clump at the root of its mergers, unless that root was discarded.
  const auto root_discarded = mpi::lookup<std::int64_t, char>(
      comm, root, [&](std::int64_t id) { return g.owner(id); },
      [&](std::int64_t id) { return discarded[g.local(id)]; });
  mg.clump_of.resize(n);
  for (std::size_t i = 0; i < n; ++i) mg.clump_of[i] = root_discarded[i] ? 0 : root[i];
  mg.key1 = key_saddles(g);  // of the level-0 clumps
  mg.is_clump = g.alive;
  summary.n_clumps =
      comm.sum<std::uint64_t>(static_cast<std::uint64_t>(std::count(mg.is_clump.begin(), mg.is_clump.end(), 1)));
  summary.noise_levels = noise.levels;
  summary.n_below_noise_floor = comm.sum(noise.n_light);
  summary.noise_rounds = noise.rounds_per_level;
  core::log::info(
      "noise removal: {} peaks -> {} level-0 clumps in {} levels ({} discarded; {} by the noise floor alone)",
      core::log::thousands(npeaks), core::log::thousands(static_cast<long long>(summary.n_clumps)), noise.levels,
      core::log::thousands(comm.sum<std::int64_t>(static_cast<std::int64_t>(noise.discarded.size()))),
      core::log::thousands(summary.n_below_noise_floor));

  core::enter(phase, "hierarchy");
  if (p.saddle_threshold)
    mg.hierarchy =
        merge_levels(g, {Criterion::Kind::saddle, *p.saddle_threshold, density_threshold, false}, comm, p.shuffle_seed);
  else if (p.second_relevance)
    mg.hierarchy = merge_levels(g, {Criterion::Kind::relevance, *p.second_relevance, density_threshold, false}, comm,
                                p.shuffle_seed);
  mg.halo_of = resolve_roots(g, into_of(g, mg.hierarchy), comm);
  mg.parent.resize(n);
  mg.level.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) mg.parent[i] = g.first + static_cast<std::int64_t>(i);
  for (const Merger& m : mg.hierarchy.mergers) {
    mg.parent[g.local(m.node)] = m.into;
    mg.level[g.local(m.node)] = m.level;
  }
  summary.n_halos = comm.sum<std::uint64_t>(static_cast<std::uint64_t>(std::count(g.alive.begin(), g.alive.end(), 1)));
  summary.hierarchy_levels = mg.hierarchy.levels;
  summary.hierarchy_rounds = mg.hierarchy.rounds_per_level;
  core::log::info("saddle hierarchy: {} haloes, {} levels",
                  core::log::thousands(static_cast<long long>(summary.n_halos)), mg.hierarchy.levels);
  return mg;
}

}  // namespace

Catalogue build_catalogue(const CatalogueSource& in, const CatalogueParams& p, const mpi::Comm& comm,
                          const core::PhaseReport& phase) {
  Catalogue result;
  model::Clumps& out = result.clumps;
  CatalogueSummary& summary = result.summary;
  model::PatchesHeader header;
  mpi::agree(comm, [&] { header = in.header(); });
  out.grid = header.grid;
  const grid::GridGeometry& geo = out.grid.geometry;
  const double density_threshold = header.meta.threshold;
  const auto npeaks = static_cast<std::int64_t>(header.n_peaks);
  summary.n_peaks = npeaks;
  if (npeaks == 0) core::log::warn("{} has no peaks: the catalogue is empty", in.name());

  const Merging mg = merge_peaks(in, header, p, comm, phase, summary);
  const PeakGraph& g = mg.graph;
  const std::size_t n = g.density.size();
  auto owner = [&](std::int64_t id) { return g.owner(id); };

  core::enter(phase, "cells");
  const mesh::CellSpace space =
      header.refinement ? mesh::CellSpace::octree(geo, header.refinement->levels) : mesh::CellSpace::uniform(geo);
  std::vector<std::int64_t> cuts;
  mpi::agree(comm, [&] { cuts = in.cell_cuts(comm.size()); });
  CellSums cells = cell_sums(in, mg, space, cuts, p.threads, comm);
  // Number of level-0 clumps per halo, counted at the halo's owner.
  const std::array<core::FixedScale, 1> count{core::FixedScale::for_terms(1.0)};
  mpi::ExactSums<1> members(count);
  for (std::size_t i = 0; i < n; ++i)
    if (mg.is_clump[i]) members.add(mg.halo_of[i], {1.0});
  const auto members_tot = mpi::ExactSums<1>::at_owners(comm, members.take(), count, owner);

  ParticleSums clump_part, halo_part;
  if (in.has_particles()) {
    core::enter(phase, "particles");
    particle_sums(in.particles(), cells, g, space, cuts, p.threads, comm, clump_part, halo_part);
  }

  core::enter(phase, "catalogue");
  const double volume = geo.cell_volume();
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t id = g.first + static_cast<std::int64_t>(i);
    const KeySaddle& k0 = mg.key0[i];
    out.peaks.push_back(
        {id, g.density[i] / (k0.to ? k0.saddle : density_threshold), k0.to ? k0.saddle : 0.0, k0.to, mg.clump_of[i]});
    if (!mg.is_clump[i]) continue;
    const auto t = total_or_zero(cells.clump, id);
    if (p.mass_threshold && t[1] < *p.mass_threshold) continue;
    model::Clump c;
    c.id = id;
    c.level = mg.level[i];
    c.parent = mg.parent[i];
    c.halo = mg.halo_of[i];
    c.n_cells = static_cast<std::int64_t>(t[0]);
    c.mass = t[1];
    c.peak_position = mg.position[i];
    c.peak_density = g.density[i];
    const KeySaddle& k1 = mg.key1[i];
    c.saddle_density = k1.to ? k1.saddle : 0.0;
    // The uniform grid's cells share one volume (kept as cells x volume: the same bits as before leaves).
    c.mean_density = t[0] > 0 ? t[1] / (space.adaptive() ? t[5] : t[0] * volume) : 0.0;
    c.relevance = g.density[i] / (k1.to ? c.saddle_density : density_threshold);
    for (std::size_t d = 0; d < 3; ++d)
      c.center_of_mass[d] = wrap_into(geo.box(), mg.position[i][d] + (t[1] > 0 ? t[2 + d] / t[1] : 0.0), d);
    if (in.has_particles()) {
      const auto q = total_or_zero(clump_part, id);
      c.n_particles = static_cast<std::int64_t>(q[0]);
      c.particle_mass = q[1];
      for (std::size_t d = 0; d < 3; ++d) c.bulk_velocity[d] = q[1] > 0 ? q[2 + d] / q[1] : 0.0;
    }
    out.clumps.push_back(c);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t id = g.first + static_cast<std::int64_t>(i);
    if (!g.alive[i]) continue;  // haloes are the clumps that never merged into another
    const auto t = total_or_zero(cells.halo, id);
    if (p.mass_threshold && t[1] < *p.mass_threshold) continue;
    model::Halo h;
    h.id = id;
    h.n_cells = static_cast<std::int64_t>(t[0]);
    h.mass = t[1];
    h.peak_position = mg.position[i];
    h.peak_density = g.density[i];
    h.n_clumps = static_cast<std::int64_t>(total_or_zero(members_tot, id)[0]);
    if (in.has_particles()) {
      const auto q = total_or_zero(halo_part, id);
      h.n_particles = static_cast<std::int64_t>(q[0]);
      h.particle_mass = q[1];
      for (std::size_t d = 0; d < 3; ++d) h.bulk_velocity[d] = q[1] > 0 ? q[2 + d] / q[1] : 0.0;
    }
    out.halos.push_back(h);
  }
  // Hierarchy rows by clump ID (each clump merges at most once), so each rank's rows follow lower ranks'.
  std::vector<Merger> mergers = mg.hierarchy.mergers;
  std::sort(mergers.begin(), mergers.end(), [](const Merger& a, const Merger& b) { return a.node < b.node; });
  for (const Merger& m : mergers) out.hierarchy.push_back({m.node, m.into, m.level, m.saddle});

  summary.mass_above_threshold = total_or_zero(cells.budget, 1)[1];
  summary.mass_discarded = total_or_zero(cells.budget, 2)[1];
  out.refinement = header.refinement;
  out.cells = std::move(cells.cells);
  out.cell_clump = std::move(cells.cell_clump);
  out.cell_halo = std::move(cells.cell_halo);
  out.meta.density_threshold = density_threshold;
  out.meta.relevance = p.relevance;
  out.meta.saddle_threshold = p.saddle_threshold;
  out.meta.saddle_threshold_text = p.saddle_threshold_text;
  out.meta.second_relevance = p.second_relevance;
  out.meta.mass_threshold = p.mass_threshold;
  out.meta.mass_threshold_text = p.mass_threshold_text;
  out.meta.noise_floor = p.noise_floor;
  out.meta.noise_floor_text = p.noise_floor_text;
  out.meta.with_particles = in.has_particles();
  out.meta.velocity_units = p.velocity_units;
  return result;
}

}  // namespace phew::watershed
