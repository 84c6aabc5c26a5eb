#include <phew/phasespace/select_voters.hpp>

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/core/progress.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/gravity/forest.hpp>
#include <phew/grid/particle_index.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/slab.hpp>
#include <phew/mpi/sort.hpp>
#include <phew/phasespace/voters.hpp>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>

namespace phew::phasespace {
namespace {

// A particle as it travels between ranks (positions as stored; the rest physical).
struct NearParticle {
  std::uint64_t id;
  double x[3], v[3], m;
};
// The snapshot's potential and acceleration of a particle (physical), when they are used: they travel
// with it, and are otherwise not sent (32 bytes a particle more, for the computed potential's and the
// profile's runs).
struct StoredPotential {
  double phi, acc[3];
};
struct StoredNearParticle {
  NearParticle p;
  StoredPotential stored;
};
const NearParticle& particle_of(const NearParticle& p) { return p; }
const NearParticle& particle_of(const StoredNearParticle& s) { return s.p; }
// The particles a rank holds are a particles::ParticleSet in the radius index's cell order (a local
// index is an index into it): position (as stored), mass, id, velocity, and the stored potential and
// acceleration converted to physical units when they are used (else empty). Columns, not records: on
// one rank they are the snapshot's own arrays rearranged in place (arrange_in_place), and the
// positions and masses can go once the computed potential's forest has copied them.

// The points' positions (member `position`) indexed for radius queries in the box of `geo`, cells of
// about h. The index copies the positions; indices it returns are into `points`.
template <typename Point, typename Position>
grid::ParticleIndex index_positions(const std::vector<Point>& points, Position position, const grid::GridGeometry& geo,
                                    double h) {
  std::vector<double> xyz(3 * points.size());
  for (std::size_t i = 0; i < points.size(); ++i)
    for (std::size_t d = 0; d < 3; ++d) xyz[3 * i + d] = (points[i].*position)[d];
  return grid::ParticleIndex(xyz, {}, geo.box(), h);
}

// How the x axis is shared: rank r handles the peaks in the x-range of its slab of planes of `geo`.
struct XPartition {
  XPartition(const grid::GridGeometry& g, int ranks) : geo(g), slabs(g.shape[0], ranks) {}
  int owner(double x) const {
    const double at[3] = {x, geo.origin[1], geo.origin[2]};
    return slabs.owner(cell_of_clamped(geo, at).i);
  }
  // Rank r's x-range; in an open box the end ranks also take everything beyond the grid.
  std::array<double, 2> range(int r) const {
    const double h = geo.cell_size()[0];
    std::array<double, 2> x{geo.origin[0] + static_cast<double>(slabs.begin(r)) * h,
                            geo.origin[0] + static_cast<double>(slabs.end(r)) * h};
    if (!geo.periodic && slabs.begin(r) == 0) x[0] = -std::numeric_limits<double>::infinity();
    if (!geo.periodic && slabs.end(r) == geo.shape[0]) x[1] = std::numeric_limits<double>::infinity();
    return x;
  }
  grid::GridGeometry geo;
  mpi::SlabDecomposition slabs;
};

// The snapshot's potential and acceleration (Gadget's, comoving) in physical units, in place: once, before
// the particles are arranged or sent.
void stored_to_physical(particles::ParticleSet& ps, double a, int threads) {
  core::parallel_for(threads, ps.potential.size(), 1 << 14, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      ps.potential[i] = ps.potential[i] / a;
      for (std::size_t d = 0; d < 3; ++d) ps.acceleration[3 * i + d] = ps.acceleration[3 * i + d] / (a * a);
    }
  });
}

// A particle of `ps` as it travels (physical units, positions as stored), and its stored potential.
NearParticle near_particle(const particles::ParticleSet& ps, std::size_t i) {
  NearParticle p{ps.id[i], {}, {}, ps.mass[i]};
  for (std::size_t d = 0; d < 3; ++d) {
    p.x[d] = ps.position[3 * i + d];
    p.v[d] = ps.velocity[3 * i + d];  // peculiar: physical already
  }
  return p;
}
StoredPotential stored_potential(const particles::ParticleSet& ps, std::size_t i) {
  StoredPotential s{ps.potential[i], {}};
  for (std::size_t d = 0; d < 3; ++d) s.acc[d] = ps.acceleration[3 * i + d];
  return s;
}

// One rank's whole share put in `order` (indices into `ps`), on the threads. Each [n][3] column is gathered into a spare buffer that then takes its place, its old buffer
// becoming the spare of the next; the [n] columns are gathered into the spare's front and copied back.
// So the only fresh memory is one [n][3] column, where a copy of the set would be every column (the
// kernel zeroes each fresh page: a third of a second on one thread of the benchmark machine for the
// 134 MB of the 2.1 M box of bench/).
void arrange_in_place(particles::ParticleSet& ps, const std::vector<std::size_t>& order, int threads) {
  const std::size_t n = order.size();
  std::vector<double> spare(3 * n);
  const auto gather = [&](const auto& put) {
    core::parallel_for(threads, n, 1 << 14, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t k = b; k < e; ++k) put(k, order[k]);
    });
  };
  const auto vectors = [&](std::vector<double>& column) {
    if (column.empty()) return;
    gather([&](std::size_t k, std::size_t i) {
      for (std::size_t d = 0; d < 3; ++d) spare[3 * k + d] = column[3 * i + d];
    });
    column.swap(spare);
  };
  const auto scalars = [&](std::vector<double>& column) {
    if (column.empty()) return;
    gather([&](std::size_t k, std::size_t i) { spare[k] = column[i]; });
    std::copy_n(spare.begin(), n, column.begin());
  };
  vectors(ps.position);
  vectors(ps.velocity);
  vectors(ps.acceleration);
  scalars(ps.mass);
  scalars(ps.potential);
  if (!ps.id.empty()) {  // the IDs' bits through the spare's doubles
    gather([&](std::size_t k, std::size_t i) { std::memcpy(&spare[k], &ps.id[i], sizeof(std::uint64_t)); });
    std::memcpy(ps.id.data(), spare.data(), n * sizeof(std::uint64_t));
  }
  core::release(ps.type);  // voters measures no types nor gas
  core::release(ps.internal_energy);
  core::release(ps.star_formation_rate);
  core::release(ps.electron_abundance);
}

// Record p as the k-th particle of `set`.
void put(particles::ParticleSet& set, std::size_t k, const NearParticle& p) {
  set.id[k] = p.id;
  set.mass[k] = p.m;
  for (std::size_t d = 0; d < 3; ++d) {
    set.position[3 * k + d] = p.x[d];
    set.velocity[3 * k + d] = p.v[d];
  }
}

// Where a particle's position lies in each record that holds one.
constexpr std::size_t position_offset(const NearParticle*) { return offsetof(NearParticle, x); }
constexpr std::size_t position_offset(const StoredNearParticle*) {
  return offsetof(StoredNearParticle, p) + offsetof(NearParticle, x);
}
// The positions of `records` as the radius index reads them in place.
template <typename Records>
grid::ParticleIndex::Points points_of(const Records& records) {
  using Record = typename Records::value_type;
  return {reinterpret_cast<const std::byte*>(records.data()) + position_offset(static_cast<const Record*>(nullptr)),
          sizeof(Record), records.size()};
}

// The particles in physical units (positions as stored), each sent to every rank whose x-range, widened
// by `margin`, meets its x-bin (a cube of the forest, or a plane of the partition: fixed per bin), then
// rearranged into the cells of a radius index over `box` with cells of `cell`. On one rank, where
// every particle stays once, they are rearranged in place (no copy of the set).
particles::ParticleSet distribute(particles::ParticleSet ps, const XPartition& part, const grid::GridGeometry& bins,
                                  std::int64_t n_bins, double margin, const grid::Box& box, double cell,
                                  const VoterParams& params, const mpi::Comm& comm) {
  const double bin_width = bins.extent[0] / static_cast<double>(n_bins);
  std::vector<std::vector<int>> destinations(static_cast<std::size_t>(n_bins));
  bool each_stays = comm.size() == 1;  // every bin's one destination this rank
  for (std::int64_t bx = 0; bx < n_bins; ++bx) {
    std::vector<int>& to = destinations[static_cast<std::size_t>(bx)];
    for (int r = 0; r < comm.size(); ++r) {
      auto [lo, hi] = part.range(r);
      if (part.slabs.planes(r) > 0 && gravity::Forest::cube_meets(bins, bin_width, bx, {lo - margin, hi + margin}))
        to.push_back(r);
    }
    each_stays = each_stays && to.size() == 1;
  }
  const int threads = std::max(params.threads, 1);
  stored_to_physical(ps, params.scale_factor, threads);
  const auto cell_order = [&](const auto& points) { return grid::ParticleIndex::cell_order(points, box, cell); };
  if (each_stays) {
    arrange_in_place(ps, cell_order(grid::ParticleIndex::points(ps.position)), threads);
    return ps;
  }

  const grid::GridGeometry x_bins{{n_bins, 1, 1}, bins.origin, {bins.extent[0], 1, 1}, bins.periodic};
  particles::ParticleSet out;
  // Every particle as a record (`make(i)`) sent to where it is needed, then what arrived put in the
  // cells' order on the threads (`keep(k, record)` stores the k-th).
  const auto send_and_arrange = [&](const auto& make, const auto& keep) {
    using Record = std::decay_t<decltype(make(std::size_t{0}))>;
    std::vector<Record> all(ps.size());
    for (std::size_t i = 0; i < ps.size(); ++i) all[i] = make(i);
    ps = particles::ParticleSet{};  // every particle now lives in `all`
    const std::vector<Record> got = mpi::scatter_to(comm, std::move(all), [&](const Record& item, auto&& emit) {
      const double at[3] = {particle_of(item).x[0], x_bins.origin[1], x_bins.origin[2]};
      for (int r : destinations[static_cast<std::size_t>(cell_of_clamped(x_bins, at).i)]) emit(r);
    });
    out.position.resize(3 * got.size());
    out.velocity.resize(3 * got.size());
    out.mass.resize(got.size());
    out.id.resize(got.size());
    if (params.stored_potential) {
      out.potential.resize(got.size());
      out.acceleration.resize(3 * got.size());
    }
    const std::vector<std::size_t> order = cell_order(points_of(got));
    core::parallel_for(threads, order.size(), 1 << 14, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t k = b; k < e; ++k) keep(k, got[order[k]]);
    });
  };
  if (params.stored_potential)
    send_and_arrange(
        [&](std::size_t i) {
          return StoredNearParticle{near_particle(ps, i), stored_potential(ps, i)};
        },
        [&](std::size_t k, const StoredNearParticle& p) {
          put(out, k, p.p);
          out.potential[k] = p.stored.phi;
          for (std::size_t d = 0; d < 3; ++d) out.acceleration[3 * k + d] = p.stored.acc[d];
        });
  else
    send_and_arrange([&](std::size_t i) { return near_particle(ps, i); },
                     [&](std::size_t k, const NearParticle& p) { put(out, k, p); });
  return out;
}

// The potential and acceleration of the candidates among the local particles, computed when first
// needed: the candidates of a tree group at once, from one walk of the whole group (accumulate_group),
// kept. Only the candidates are summed, each with its whole group's list (so with the bits it would
// have if every member were), and only they have room for their values, made once the trees are built
// (so that it is not held beside the trees' sources while they are made). The forest keeps a copy of
// every local particle's position and mass, which it lends (position, mass): `copied` is called once
// it has them, before it builds its trees, and the caller's own may then go.
class ComputedPotential {
 public:
  // `wanted` [local index]: 1 for a candidate of any of this rank's peaks; every one must be marked
  // here, or a group computed early would miss a later peak's candidates.
  ComputedPotential(const particles::ParticleSet& local, std::vector<std::uint8_t> wanted, const gravity::Setup& gs,
                    const XPartition& part, std::array<double, 2> held_x, const VoterParams& params,
                    const mpi::Comm& comm, const std::function<void()>& copied)
      : id_(local.id), gs_(gs), a_(params.scale_factor), wanted_(std::move(wanted)) {
    forest_ = std::make_unique<gravity::Forest>(
        gs.box, gs.cubes, held_x, gravity::SourceView::columns(local.position, local.mass, local.id),
        gravity::PairForce(params.G, params.softening, gs.mesh_field ? gs.r_split : 0),
        gravity::Forest::Params{params.gravity.theta, 8, std::max(params.threads, 1)}, copied);
    if (!gs.mesh_field) {
      forest_->share_cube_moments(comm, [&](std::int64_t key) {
        const std::int64_t cx = key / (gs.cubes[1] * gs.cubes[2]);
        return part.owner(gs.box.origin[0] + (static_cast<double>(cx) + 0.5) * gs.box.extent[0] /
                                                 static_cast<double>(gs.cubes[0])) == comm.rank();
      });
    }
    // Counted by their IDs (their positions and masses may be gone); fewer than 2^32 - 1 entries: the
    // Forest refuses more sources.
    slot_.resize(id_.size());
    std::uint32_t n = 0;
    for (std::size_t j = 0; j < id_.size(); ++j) slot_[j] = wanted_[j] ? n++ : kNone;
    done_.assign(n, 0);
    phi_.resize(n);
    acc_.resize(3 * static_cast<std::size_t>(n));
  }
  // Computes the candidates among the particles `needed` (local indices, candidates all), on `threads`
  // threads: each thread takes whole groups, whose members no other group holds, and a member's values
  // depend only on its group (Forest::accumulate_group), so they are the same for any number of threads.
  void compute(const std::vector<std::size_t>& needed, int threads) {
    std::vector<std::pair<std::int64_t, std::size_t>> groups;  // (group, a member)
    for (const std::size_t j : needed)
      if (!done_[slot(j)]) groups.emplace_back(forest_->group_of(j), j);
    std::sort(groups.begin(), groups.end());
    groups.erase(
        std::unique(groups.begin(), groups.end(), [](const auto& x, const auto& y) { return x.first == y.first; }),
        groups.end());
    std::vector<std::uint64_t> counted(static_cast<std::size_t>(std::max(threads, 1)), 0);
    core::parallel_for(threads, groups.size(), 16, [&](std::size_t b, std::size_t e, int thread) {
      for (std::size_t g = b; g < e; ++g)
        forest_->accumulate_group(
            groups[g].second,
            [&](std::size_t k, const double* x, double p, const double* acc) {
              double acc_k[3] = {acc[0], acc[1], acc[2]};
              if (gs_.mesh_field) {  // at the forest's copy of the position, hot from the walk
                double pl = 0, gl[3];
                gs_.mesh_field->sample(x, pl, gl);
                p += pl;
                for (std::size_t d = 0; d < 3; ++d) acc_k[d] += gl[d];
              }
              const std::size_t s = slot(k);
              phi_[s] = p / a_;  // comoving -> physical
              for (std::size_t d = 0; d < 3; ++d) acc_[3 * s + d] = acc_k[d] / (a_ * a_);
              done_[s] = 1;
              ++counted[static_cast<std::size_t>(thread)];
            },
            wanted_);
    });
    for (const std::uint64_t c : counted) computed_ += c;
  }
  void at(std::size_t j, double& phi, std::array<double, 3>& acc) const {
    const std::size_t s = slot(j);
    phi = phi_[s];
    for (std::size_t d = 0; d < 3; ++d) acc[d] = acc_[3 * s + d];
  }
  std::uint64_t computed() const { return computed_; }
  const double* position(std::size_t j) const { return forest_->position(j); }
  double mass(std::size_t j) const { return forest_->mass(j); }

 private:
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  std::size_t slot(std::size_t j) const {
    if (slot_[j] == kNone) throw core::Error::internal("voters: particle {} is no candidate", id_[j]);
    return slot_[j];
  }

  std::span<const std::uint64_t> id_;  // [local index]
  const gravity::Setup& gs_;
  double a_;
  std::unique_ptr<gravity::Forest> forest_;
  std::vector<std::uint8_t> wanted_;  // [local index]
  std::vector<std::uint32_t> slot_;   // [local index]: the candidate's place in the arrays below, or kNone
  std::vector<char> done_;            // [slot]
  std::vector<double> phi_, acc_;     // [slot], [slot][3]
  std::uint64_t computed_ = 0;
};

}  // namespace

double default_search_radius(const std::vector<model::PeakRow>& peaks, const grid::GridMeta& grid) {
  double m_max = 0;
  for (const model::PeakRow& p : peaks) m_max = std::max(m_max, p.mass);
  return grid.mean_density > 0 && m_max > 0 ? 0.5 * std::cbrt(3 * m_max / (4 * M_PI * 200 * grid.mean_density))
                                            : grid.geometry.cell_size()[0];
}

std::vector<double> search_radii(const std::vector<model::PeakRow>& peaks, const grid::GridGeometry& geo, double R,
                                 double min_radius) {
  std::vector<double> r_s(peaks.size(), R);
  const grid::ParticleIndex near = index_positions(peaks, &model::PeakRow::position, geo, 4 * R);
  for (std::size_t i = 0; i < peaks.size(); ++i) {
    for (std::size_t j : near.within(peaks[i].position, 4 * R)) {
      if (j == i || peaks[j].parent_clump == peaks[i].parent_clump) continue;
      double d2 = 0;
      for (std::size_t d = 0; d < 3; ++d) {
        const double dx = grid::minimum_image(peaks[j].position[d] - peaks[i].position[d], geo.extent[d], geo.periodic);
        d2 += dx * dx;
      }
      r_s[i] = std::min(r_s[i], 0.25 * std::sqrt(d2));
    }
    r_s[i] = std::max(r_s[i], min_radius);
  }
  return r_s;
}

VoterSelection select_voters(const grid::GridMeta& grid, std::vector<model::PeakRow> peaks,
                             particles::ParticleSet particles, const VoterParams& params, const mpi::Comm& comm,
                             const core::PhaseReport& phase) {
  const grid::GridGeometry& geo = grid.geometry;
  // Only the computed potential needs the gravity solver's mesh, cubes and reach; the stored one and
  // each peak's own profile need the candidates alone.
  const bool solved = !params.stored_potential && !params.profile_potential;
  const double a = params.scale_factor;
  if (geo.periodic)  // a fitted peak position may lie just outside the box
    for (model::PeakRow& p : peaks)
      for (std::size_t d = 0; d < 3; ++d)
        p.position[d] = geo.origin[d] + grid::wrap_position(p.position[d] - geo.origin[d], geo.extent[d]);
  VoterSelection out;
  grid::GridMeta reference = grid;
  if (params.mean_density > 0) reference.mean_density = params.mean_density;
  out.search_radius = params.search_radius > 0 ? params.search_radius : default_search_radius(peaks, reference);
  const std::vector<double> r_s = search_radii(peaks, geo, out.search_radius, params.min_radius);
  double R_max = 0;
  for (double r : r_s) R_max = std::max(R_max, r);

  // The computed potential, in the snapshot's (comoving) coordinates, converted to physical units.
  gravity::Setup gs;
  if (solved) {
    core::enter(phase, "long-range");
    gravity::SetupParams solver = params.gravity;
    solver.threads = std::max(params.threads, 1);
    gs = gravity::plan_potential(params.periodic, params.box_size, params.n_particles, R_max, params.G,
                                 particles.position, particles.mass, geo.origin, solver, comm);
  }
  out.potential_source =
      params.profile_potential
          ? fmt::format("spherical profile of each peak's candidates (RAMSES' unbinding), Plummer softening {:.6g}",
                        params.softening)
      : !solved ? std::string("snapshot Potential and Acceleration")
                : fmt::format("{}, Plummer softening {:.6g}", gs.description, params.softening);

  core::enter(phase, "distribute");
  // Rank r handles the peaks in its x-range of `part` and holds every particle its candidates (and,
  // when computing, their sources) may need.
  const XPartition part(gs.mesh_field ? gs.mesh : geo, comm.size());
  const double margin = R_max + (solved ? gs.cube_reach : 0.0);
  // The particles in the radius index's cell order, indexed where they lie (a copy of their positions
  // and order would add half of what they hold). Nothing depends on their order: candidates are sorted
  // by ID and the trees sort their sources (particle IDs taken to be unique, as everywhere in voters).
  const double index_cell = std::max(R_max / 2, geo.cell_size()[0]);
  particles::ParticleSet local =
      distribute(std::move(particles), part, solved ? gs.box : part.geo, solved ? gs.cubes[0] : part.geo.shape[0],
                 margin, geo.box(), index_cell, params, comm);
  std::optional<grid::ParticleIndex> cells =
      grid::ParticleIndex::in_place(grid::ParticleIndex::points(local.position), geo.box(), index_cell);

  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < peaks.size(); ++i)
    if (part.owner(peaks[i].position[0]) == comm.rank()) mine.push_back(i);
  const int threads = std::max(params.threads, 1);
  const std::size_t batch = 64 * static_cast<std::size_t>(threads);
  // The candidates of mine[i] (local indices), as the radius index finds them.
  const auto query = [&](std::size_t i) { return cells->within(peaks[mine[i]].position, r_s[mine[i]]); };
  // A list of candidates sorted by particle ID, each once: the result is then the same whichever rank
  // holds them.
  const auto by_id = [&](std::vector<std::size_t>& n) {
    std::sort(n.begin(), n.end(), [&](std::size_t p, std::size_t q) { return local.id[p] < local.id[q]; });
    n.erase(std::unique(n.begin(), n.end(), [&](std::size_t p, std::size_t q) { return local.id[p] == local.id[q]; }),
            n.end());
  };

  core::enter(phase, "potential");
  // The computed potential is made for the candidates only, so every peak's are found first; kept (4
  // bytes a candidate: local indices fit 32 bits, the Forest refusing more sources) for the batches below.
  std::vector<std::vector<std::uint32_t>> found;
  std::unique_ptr<ComputedPotential> computed;
  if (solved) {
    found.resize(mine.size());
    core::parallel_for(threads, mine.size(), 1, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t i = b; i < e; ++i) {
        const std::vector<std::size_t> n = query(i);
        found[i].assign(n.begin(), n.end());
      }
    });
    std::vector<std::uint8_t> wanted(local.size(), 0);
    for (const auto& n : found)
      for (const std::uint32_t j : n) wanted[j] = 1;
    auto [lo, hi] = part.range(comm.rank());
    // Every candidate is found, and the forest copies the positions and masses before it builds its
    // trees: ours go then (67 MB of the 2.1 M box of bench/, before the peak).
    const auto let_go = [&] {
      cells.reset();
      core::release(local.position);
      core::release(local.mass);
    };
    computed = std::make_unique<ComputedPotential>(
        local, std::move(wanted), gs, part, std::array<double, 2>{lo - margin, hi + margin}, params, comm, let_go);
  }

  core::enter(phase, "voters");
  core::Progress progress("voters", "peaks", mine.size(), comm.size());
  // Peaks a batch at a time: their candidates (sorted by particle ID), the potential of every candidate
  // (threads by tree group), then each peak's choice (threads by peak, each into its own slot), joined
  // in peak order.
  for (std::size_t b0 = 0; b0 < mine.size(); b0 += batch) {
    const std::size_t b1 = std::min(mine.size(), b0 + batch);
    std::vector<std::vector<std::size_t>> near(b1 - b0);
    core::parallel_for(threads, b1 - b0, 1, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t k = b; k < e; ++k) {
        if (found.empty()) {
          near[k] = query(b0 + k);
        } else {
          std::vector<std::uint32_t>& f = found[b0 + k];
          near[k].assign(f.begin(), f.end());
          f = {};  // its bytes go as the batches go
        }
        by_id(near[k]);
      }
    });
    if (computed) {
      std::vector<std::size_t> needed;
      for (const auto& n : near) needed.insert(needed.end(), n.begin(), n.end());
      computed->compute(needed, threads);
    }
    std::vector<VoterChoice> choice(b1 - b0);
    core::parallel_for(threads, b1 - b0, 1, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t k = b; k < e; ++k) {
        const model::PeakRow& pk = peaks[mine[b0 + k]];
        std::vector<Candidate> cand;
        std::vector<double> mass;
        cand.reserve(near[k].size());
        for (const std::size_t j : near[k]) {
          const double* v = &local.velocity[3 * j];
          Candidate c{local.id[j], {}, {v[0], v[1], v[2]}, 0, {0, 0, 0}};
          if (!local.potential.empty()) {
            c.potential = local.potential[j];
            c.acceleration = {local.acceleration[3 * j], local.acceleration[3 * j + 1], local.acceleration[3 * j + 2]};
          }
          const double* x = computed ? computed->position(j) : &local.position[3 * j];
          for (std::size_t d = 0; d < 3; ++d)
            c.dx[d] = a * grid::minimum_image(x[d] - pk.position[d], geo.extent[d], geo.periodic);
          if (computed) computed->at(j, c.potential, c.acceleration);
          cand.push_back(c);
          mass.push_back(computed ? computed->mass(j) : local.mass[j]);
        }
        if (params.profile_potential) spherical_potential(cand, mass, params.G, a * params.softening);
        choice[k] = choose_voters(cand, pk.velocity, static_cast<std::size_t>(params.n_voters), params.boost);
      }
    });
    for (std::size_t k = 0; k < b1 - b0; ++k) {
      const std::size_t i = mine[b0 + k];
      const model::PeakRow& pk = peaks[i];
      const VoterChoice& vc = choice[k];
      if (vc.id.size() < static_cast<std::size_t>(params.n_voters)) ++out.n_short;
      for (std::size_t v = 0; v < vc.id.size(); ++v)
        out.voters.push_back({pk.id, vc.id[v], vc.energy[v], static_cast<std::int64_t>(v)});
      out.peaks.push_back(
          {pk.id, r_s[i], vc.a0, static_cast<std::int64_t>(vc.id.size()), static_cast<std::int64_t>(near[k].size())});
      progress.add();
    }
  }
  progress.finish();
  out.n_computed = comm.sum<std::uint64_t>(computed ? computed->computed() : 0);
  if (computed) core::log::info("potential computed at {} particles", out.n_computed);
  out.n_short = comm.sum<std::int64_t>(out.n_short);
  if (out.n_short > 0)
    core::log::warn("{} peaks have fewer than {} candidates and so fewer voters (flagged by n_voters)", out.n_short,
                    params.n_voters);
  out.voters = mpi::sort(comm, std::move(out.voters), [](const model::VoterRow& p, const model::VoterRow& q) {
    return p.peak != q.peak ? p.peak < q.peak : p.rank < q.rank;
  });
  out.peaks = mpi::sort(comm, std::move(out.peaks),
                        [](const model::VoterPeakRow& p, const model::VoterPeakRow& q) { return p.id < q.id; });
  out.n_peaks = comm.sum<std::int64_t>(static_cast<std::int64_t>(out.peaks.size()));
  out.n_voters = comm.sum<std::int64_t>(static_cast<std::int64_t>(out.voters.size()));
  return out;
}

}  // namespace phew::phasespace
