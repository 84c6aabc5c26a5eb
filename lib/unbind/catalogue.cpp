#include <phew/unbind/catalogue.hpp>

#include <phew/core/log.hpp>
#include <phew/core/progress.hpp>
#include <phew/core/radix_sort.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/sort.hpp>
#include <phew/mpi/sorted_runs.hpp>
#include <phew/particles/cell_members.hpp>
#include <phew/unbind/hierarchy.hpp>
#include <phew/unbind/schedule.hpp>
#include <phew/unbind/spread.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <cmath>
#include <map>

namespace phew::unbind {
namespace {

using Member = particles::CellMember;  // label: its object; group: its halo's index, then its place in the batch

// Members a rank sends at a time to the ranks that unbind their haloes (5.6 MiB of them).
constexpr std::size_t kExchangeRound = std::size_t{1} << 16;

// What one rank makes, before the rows are put in order over the ranks.
struct Rows {
  std::vector<model::BoundObject> objects;
  std::vector<model::BoundParticle> particles;
  std::vector<model::MostBoundRow> most_bound;
  std::vector<model::BoundTypeRow> by_type;
  std::int64_t passed = 0;
};

// Adds one halo of `particles` particles, unbound in `seconds`, to its bin (bins by the power of two
// below the count; a halo without particles in bin 0).
void add_to_bins(std::vector<SizeBin>& bins, const SizeBin& halo) {
  auto at = std::find_if(bins.begin(), bins.end(), [&](const SizeBin& b) { return b.smallest == halo.smallest; });
  if (at == bins.end()) {
    at = bins.insert(std::upper_bound(bins.begin(), bins.end(), halo,
                                      [](const SizeBin& a, const SizeBin& b) { return a.smallest < b.smallest; }),
                     SizeBin{halo.smallest, 0, 0, 0.0});
  }
  at->haloes += halo.haloes;
  at->particles += halo.particles;
  at->seconds += halo.seconds;
}
void add_to_bins(std::vector<SizeBin>& bins, std::size_t particles, double seconds) {
  const auto n = static_cast<std::int64_t>(particles);
  std::int64_t smallest = n > 0 ? 1 : 0;
  while (smallest > 0 && smallest <= n / 2) smallest *= 2;
  add_to_bins(bins, SizeBin{smallest, 1, n, seconds});
}

// A property as bound.h5 holds it: 0 when it could not be measured (lib/model/bound.hpp).
double value(double x) { return std::isfinite(x) ? x : 0.0; }
std::array<double, 3> value(const std::array<double, 3>& x) { return {value(x[0]), value(x[1]), value(x[2])}; }

// An object's per-type rows, a row per type of params.types: 0 where nothing was measured (no particle of
// that type, or a dissolved object, whose breakdown is empty).
void add_type_rows(std::int64_t object, const Properties& q, const Params& params,
                   std::vector<model::BoundTypeRow>& out) {
  for (std::size_t t = 0; t < params.types.size(); ++t) {
    model::BoundTypeRow r;
    r.object = object;
    r.column = static_cast<std::int64_t>(t);
    if (t < q.by_type.size()) {
      const TypeProperties &own = q.by_type[t], &all = q.by_type_inclusive[t];
      r.n_bound = own.n_bound;
      r.n_bound_inclusive = all.n_bound;
      r.mass = value(own.mass);
      r.mass_inclusive = value(all.mass);
      r.half_mass_radius = value(own.half_mass_radius);
      r.half_mass_radius_inclusive = value(all.half_mass_radius);
      r.velocity_dispersion = value(own.velocity_dispersion);
      r.velocity_dispersion_inclusive = value(all.velocity_dispersion);
      for (std::size_t k = 0; k < params.apertures.size(); ++k) {
        r.aperture_mass[k] = value(own.aperture_mass[k]);
        r.aperture_mass_inclusive[k] = value(all.aperture_mass[k]);
      }
    }
    out.push_back(r);
  }
}

// The per-type rows moved to the rank of their object (`objects`: sorted by ID over the ranks), sorted
// by (object, column) there: bound.h5 writes an object's row of a [n][types] column from its rank.
std::vector<model::BoundTypeRow> beside_objects(std::vector<model::BoundTypeRow> rows,
                                                const std::vector<model::BoundObject>& objects, const mpi::Comm& comm) {
  const mpi::SortedRuns runs(objects.empty(), objects.empty() ? 0 : static_cast<std::uint64_t>(objects.front().id),
                             comm);
  if (comm.size() > 1)
    rows = mpi::route(comm, rows,
                      [&](const model::BoundTypeRow& r) { return runs.owner(static_cast<std::uint64_t>(r.object)); });
  std::sort(rows.begin(), rows.end(), [](const model::BoundTypeRow& p, const model::BoundTypeRow& q) {
    return p.object != q.object ? p.object < q.object : p.column < q.column;
  });
  return rows;
}

// Members by group (0 .. groups-1), each group's by ID: each member moved once into its group's run (an
// in-place counting sort: no second copy of the batch), then each run sorted on its own, in cache.
void sort_by_group_then_id(std::vector<Member>& members, std::size_t groups) {
  std::vector<std::size_t> end(groups, 0);
  for (const Member& p : members) ++end[static_cast<std::size_t>(p.group)];
  std::vector<std::size_t> next(groups, 0);  // where each run's next member goes
  for (std::size_t g = 0, at = 0; g < groups; ++g) {
    next[g] = at;
    at += end[g];
    end[g] = at;
  }
  for (std::size_t g = 0; g < groups; ++g) {
    while (next[g] < end[g]) {
      Member& p = members[next[g]];
      const auto h = static_cast<std::size_t>(p.group);
      if (h == g)
        ++next[g];
      else
        std::swap(p, members[next[h]++]);
    }
  }
  for (std::size_t g = 0, b = 0; g < groups; b = end[g++])
    std::sort(members.begin() + static_cast<std::ptrdiff_t>(b), members.begin() + static_cast<std::ptrdiff_t>(end[g]),
              [](const Member& p, const Member& q) { return p.id < q.id; });
}

// A halo's objects as the hierarchy sees them: `rows` (indices into `objects`, by ID) with their specs
// (parent: its parent in the saddle hierarchy, or its halo when that fell below phew-merge's
// --mass-threshold; a sub-object's saddle radius).
std::vector<ObjectSpec> specs_of(const std::vector<std::size_t>& rows, std::span<const ObjectRow> objects) {
  std::map<std::int64_t, std::int64_t> index_of;  // clump ID -> object index
  for (std::size_t o = 0; o < rows.size(); ++o) index_of[objects[rows[o]].id] = static_cast<std::int64_t>(o);
  std::vector<ObjectSpec> specs(rows.size());
  for (std::size_t o = 0; o < rows.size(); ++o) {
    const ObjectRow& c = objects[rows[o]];
    for (const std::int64_t up : {c.parent, c.halo})
      if (up != c.id && index_of.count(up)) {
        specs[o].parent = index_of[up];
        break;
      }
    specs[o].peak = c.peak;
    if (specs[o].parent >= 0) specs[o].saddle_radius = c.saddle_radius;
  }
  return specs;
}

// The halo's one top object (its index in `rows`), or -1 when it has several or none.
std::int64_t top_of(const std::vector<ObjectSpec>& specs) {
  std::int64_t top = -1;
  for (std::size_t o = 0; o < specs.size(); ++o)
    if (specs[o].parent < 0) {
      if (top >= 0) return -1;
      top = static_cast<std::int64_t>(o);
    }
  return top;
}

// bound.h5's row of object `o` of a halo's `rows`, from what unbinding it found.
model::BoundObject object_row(std::size_t o, const std::vector<std::size_t>& rows, std::span<const ObjectRow> objects,
                              const std::vector<ObjectSpec>& specs, const ObjectSummary& s) {
  const ObjectRow& c = objects[rows[o]];
  const Properties& q = s.properties;
  model::BoundObject b;
  b.id = c.id;
  b.parent = specs[o].parent >= 0 ? objects[rows[static_cast<std::size_t>(specs[o].parent)]].id : 0;
  for (std::int64_t up = specs[o].parent; up >= 0; up = specs[static_cast<std::size_t>(up)].parent) ++b.depth;
  std::int64_t top = static_cast<std::int64_t>(o);
  while (specs[static_cast<std::size_t>(top)].parent >= 0) top = specs[static_cast<std::size_t>(top)].parent;
  b.halo = objects[rows[static_cast<std::size_t>(top)]].id;
  b.n_particles = s.n_particles;
  b.n_received = s.n_received;
  b.n_bound = q.n_bound;
  b.n_bound_inclusive = q.n_bound_inclusive;
  b.mass = value(q.mass);
  b.mass_inclusive = value(q.mass_inclusive);
  b.peak_position = c.peak;
  if (!s.dissolved) {
    b.centre = value(q.centre);
    b.centre_of_mass = value(q.centre_of_mass);
    b.most_bound_position = value(q.most_bound_position);
    b.potential_minimum_position = value(q.potential_minimum_position);
    b.shrinking_sphere_centre = value(q.shrinking_sphere_centre);
    b.bulk_velocity = value(q.bulk_velocity);
    b.angular_momentum = value(q.angular_momentum);
  }
  b.vrms = value(q.vrms);
  b.vmax = value(q.vmax);
  b.rmax = value(q.rmax);
  b.virial_ratio = value(q.virial_ratio);
  b.spin_peebles = value(q.spin_peebles);
  b.spin_bullock = value(q.spin_bullock);
  b.mvir = value(q.vir.mass);
  b.rvir = value(q.vir.radius);
  b.m200c = value(q.c200.mass);
  b.r200c = value(q.c200.radius);
  b.m200m = value(q.m200.mass);
  b.r200m = value(q.m200.radius);
  b.m500c = value(q.c500.mass);
  b.r500c = value(q.c500.radius);
  b.rs_klypin = value(q.rs_klypin);
  b.concentration_klypin = value(q.concentration_klypin);
  b.rs_fit = value(q.rs_fit);
  b.concentration_fit = value(q.concentration_fit);
  b.b_to_a = value(q.b_to_a);
  b.c_to_a = value(q.c_to_a);
  b.xoff = value(q.xoff);
  b.iterations = s.iterations;
  b.converged = s.converged;
  b.dissolved = s.dissolved;
  return b;
}

// An object's rows: itself, its most-bound particles and its per-type columns.
void add_object_rows(std::size_t o, const std::vector<std::size_t>& rows, std::span<const ObjectRow> objects,
                     const std::vector<ObjectSpec>& specs, const ObjectSummary& s, const Params& params, Rows& out) {
  out.objects.push_back(object_row(o, rows, objects, specs, s));
  const std::int64_t id = objects[rows[o]].id;
  add_type_rows(id, s.properties, params, out.by_type);
  for (std::size_t k = 0; k < s.properties.most_bound_ids.size(); ++k)
    out.most_bound.push_back({id, static_cast<std::int64_t>(k), s.properties.most_bound_ids[k]});
}

// A particle of a halo spread over the ranks, as its top object's unbinding takes it: one of the top's
// own members, or one of its sub-objects' (passed up unbound, or bound to one: fixed).
struct TopParticle {
  std::uint64_t id;
  double x[3], v[3], m;
  std::int64_t member_of;  // the object it was given to
  std::int64_t bound_to;   // fixed: the sub-object it is bound to (exclusively)
  double energy;           // fixed: its energy there
  std::uint8_t type;
  std::uint8_t fixed;
};

TopParticle top_particle(const Member& p, std::int64_t member_of) {
  TopParticle t{p.id, {p.x[0], p.x[1], p.x[2]}, {p.v[0], p.v[1], p.v[2]}, p.m, member_of, 0, 0.0, p.type, 0};
  return t;
}

// Unbinds one halo's hierarchy: `rows` are its objects (indices into `objects`, by ID), `members` its
// particles (sorted by ID), possibly none. The members are not read after they are copied: the whole
// pages of their run go back then. With `to_top` (a halo spread over the ranks, whose top object and its
// own members are left out here), its sub-objects alone: their rows are made, and every particle they
// were given goes to `to_top` (the top object's, unbound by unbind_spread_halo), with `passed_to_top`
// counting those they did not bind.
void unbind_halo(std::span<Member> members, const std::vector<std::size_t>& rows, std::span<const ObjectRow> objects,
                 const Frame& frame, const Params& params, Rows& out, std::vector<TopParticle>* to_top = nullptr,
                 std::int64_t* passed_to_top = nullptr) {
  const std::vector<ObjectSpec> specs = specs_of(rows, objects);
  // Spread: the sub-objects alone, the top's children without a parent (their unbound particles go to
  // the top's unbinding instead) but with the saddle radius they have as sub-objects.
  const std::int64_t top = to_top ? top_of(specs) : -1;
  std::vector<std::int64_t> run_index(rows.size());  // object -> its index in the run's specs (-1: the top)
  std::vector<std::size_t> run_object;               // and back
  std::vector<ObjectSpec> run_specs;
  for (std::size_t o = 0; o < rows.size(); ++o) {
    run_index[o] = static_cast<std::int64_t>(o) == top ? -1 : static_cast<std::int64_t>(run_object.size());
    if (run_index[o] >= 0) run_object.push_back(o);
  }
  for (const std::size_t o : run_object) {
    ObjectSpec spec = specs[o];
    spec.parent = spec.parent >= 0 ? run_index[static_cast<std::size_t>(spec.parent)] : -1;
    run_specs.push_back(spec);
  }
  std::map<std::int64_t, std::int64_t> index_of;  // clump ID -> the run's object index
  for (const std::size_t o : run_object) index_of[objects[rows[o]].id] = run_index[o];
  const std::size_t n = members.size();
  std::vector<std::uint64_t> id(n);
  std::vector<double> pos(3 * n), vel(3 * n), mass(n);
  std::vector<std::int64_t> object(n);
  std::vector<std::uint8_t> type(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Member& p = members[i];
    id[i] = p.id;
    type[i] = p.type;
    mass[i] = p.m;
    object[i] = index_of.at(p.label);
    for (std::size_t d = 0; d < 3; ++d) {
      pos[3 * i + d] = p.x[d];
      vel[3 * i + d] = p.v[d];
    }
  }
  // What goes to a spread top: every particle, as given (copied before the members' pages go).
  if (to_top) {
    to_top->reserve(to_top->size() + n);  // a no-op: sized for these when the top's own were taken
    for (std::size_t i = 0; i < n; ++i) to_top->push_back(top_particle(members[i], members[i].label));
  }
  // A big halo's members are most of its batch (88 bytes each), given back before it is unbound and
  // not when it reaches the batch's prefix of finished haloes (unbind_objects): only pages wholly inside
  // its run, which no other halo's thread reads.
  if (n > 0) core::release_consumed_pages(reinterpret_cast<char*>(members.data()), members.data() + n);
  // The arrays the objects are copied from go before the last object's passes: the halo itself, the
  // biggest, whose copy would otherwise sit beside them (65 bytes a particle).
  const auto let_go = [&] {
    core::release(pos);
    core::release(vel);
    core::release(mass);
    core::release(type);
  };
  const HierarchyResult r = unbind_hierarchy({id, pos, vel, mass, object, type, let_go}, run_specs, frame, params);
  out.passed += r.n_passed;

  for (std::size_t k = 0; k < run_object.size(); ++k)
    add_object_rows(run_object[k], rows, objects, specs, r.objects[k], params, out);
  if (to_top) {
    // Bound to a sub-object: fixed in the top's unbinding; the rest passed up to it.
    TopParticle* t = to_top->data() + (to_top->size() - n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t o = r.bound_to[i];
      if (o >= 0) {
        t[i].fixed = 1;
        t[i].bound_to = objects[rows[run_object[static_cast<std::size_t>(o)]]].id;
        t[i].energy = r.energy[i];
      } else {
        ++*passed_to_top;
      }
    }
    return;
  }
  out.particles.reserve(out.particles.size() + n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t o = r.bound_to[i];
    out.particles.push_back({id[i], objects[rows[static_cast<std::size_t>(object[i])]].id,
                             o >= 0 ? objects[rows[static_cast<std::size_t>(o)]].id : 0, value(r.energy[i])});
  }
}

// The top object of a halo spread over the ranks (every rank takes part): its particles on every rank
// (`mine`: the top's own members here, and the sub-objects' when this rank unbound them) sorted by ID
// over the ranks and unbound there (unbind_spread_object); the particles' rows where they are, the
// object's rows on rank 0. `passed` its sub-objects' particles passed up to it, counted where they were.
void unbind_spread_halo(std::vector<TopParticle> mine, std::int64_t passed, std::size_t top,
                        const std::vector<std::size_t>& rows, std::span<const ObjectRow> objects, const Frame& frame,
                        const Params& params, const mpi::Comm& comm, Rows& out) {
  const std::vector<ObjectSpec> specs = specs_of(rows, objects);
  std::vector<TopParticle> share =
      mpi::sort(comm, std::move(mine), [](const TopParticle& a, const TopParticle& b) { return a.id < b.id; });
  const std::int64_t top_id = objects[rows[top]].id;
  const std::size_t n = share.size();
  std::vector<std::uint64_t> id(n);
  std::vector<double> pos(3 * n), vel(3 * n), mass(n);
  std::vector<std::uint8_t> fixed(n), type(n);
  // What a row needs beyond the ID and the top's outcome, for the few particles given to a sub-object;
  // the 88-byte records go before the passes (they were most of a spread share's bytes).
  struct Given {
    std::size_t i;
    std::int64_t member_of, bound_to;
    double energy;
  };
  std::vector<Given> given;
  for (std::size_t i = 0; i < n; ++i) {
    const TopParticle& t = share[i];
    id[i] = t.id;
    mass[i] = t.m;
    fixed[i] = t.fixed;
    type[i] = t.type;
    for (std::size_t d = 0; d < 3; ++d) {
      pos[3 * i + d] = t.x[d];
      vel[3 * i + d] = t.v[d];
    }
    if (t.member_of != top_id || t.fixed) given.push_back({i, t.member_of, t.bound_to, t.energy});
  }
  core::release(share);
  out.particles.reserve(out.particles.size() + n);
  const auto let_go = [&] {
    core::release(pos);
    core::release(vel);
    core::release(mass);
  };
  ObjectResult r = unbind_spread_object(comm, {id, pos, vel, mass, fixed, type, {}, let_go}, specs[top], frame, params);
  const std::int64_t received = comm.sum(passed);
  out.passed += passed;
  r.summary.n_received = received;
  if (comm.rank() == 0) add_object_rows(top, rows, objects, specs, r.summary, params, out);
  auto g = given.begin();
  for (std::size_t i = 0; i < n; ++i) {
    const bool sub = g != given.end() && g->i == i;
    const std::int64_t member_of = sub ? g->member_of : top_id;
    if (fixed[i])
      out.particles.push_back({id[i], member_of, g->bound_to, value(g->energy)});
    else
      out.particles.push_back({id[i], member_of, r.bound[i] ? top_id : 0, value(r.energy[i])});
    if (sub) ++g;
  }
}

}  // namespace

std::map<std::int64_t, double> key_saddle_radii(std::span<const model::SaddleRow> saddles,
                                                std::span<const model::MergedPeak> peaks,
                                                std::span<const ObjectRow> objects, const mesh::CellSpace& space) {
  std::map<std::int64_t, std::int64_t> clump_of;  // peak -> its level-0 clump (0: discarded)
  for (const model::MergedPeak& p : peaks) clump_of[p.id] = p.clump;
  struct Key {
    double density;
    std::size_t row;
  };
  std::map<std::int64_t, Key> key;  // clump -> its densest saddle to another clump
  auto consider = [&](std::int64_t clump, double density, std::size_t row) {
    const auto k = key.find(clump);
    if (k == key.end() || density > k->second.density) key[clump] = {density, row};
  };
  for (std::size_t r = 0; r < saddles.size(); ++r) {
    const auto a = clump_of.find(saddles[r].peak_a), b = clump_of.find(saddles[r].peak_b);
    if (a == clump_of.end() || b == clump_of.end() || a->second <= 0 || b->second <= 0 || a->second == b->second)
      continue;
    consider(a->second, saddles[r].density, r);
    consider(b->second, saddles[r].density, r);
  }
  const grid::GridGeometry& geo = space.grid();
  std::map<std::int64_t, double> out;
  for (const ObjectRow& o : objects) {
    const auto k = key.find(o.id);
    if (k == key.end()) continue;
    const std::array<double, 3> ca = space.centre(saddles[k->second.row].cell_a),
                                cb = space.centre(saddles[k->second.row].cell_b);
    double r2 = 0;
    for (std::size_t d = 0; d < 3; ++d) {
      const double half = grid::minimum_image(cb[d] - ca[d], geo.extent[d], geo.periodic) / 2;
      const double dx = grid::minimum_image(ca[d] + half - o.peak[d], geo.extent[d], geo.periodic);
      r2 += dx * dx;
    }
    out[o.id] = std::sqrt(r2);
  }
  return out;
}

Unbound unbind_objects(std::vector<Member> members, std::span<const ObjectRow> objects, const Frame& frame,
                       const Params& params, int threads, std::int64_t batch_particles, const mpi::Comm& comm,
                       const core::PhaseReport& phase) {
  core::enter(phase, "unbind");
  std::map<std::int64_t, std::size_t> row_of;       // object ID -> row
  std::map<std::int64_t, std::size_t> halo_of;      // halo ID -> halo index (in the order objects name them)
  std::vector<std::vector<std::size_t>> halo_rows;  // per halo: its objects' rows, by ID
  for (std::size_t k = 0; k < objects.size(); ++k) row_of[objects[k].id] = k;
  for (const auto& [id, k] : row_of) {
    const auto [h, added] = halo_of.try_emplace(objects[k].halo, halo_rows.size());
    if (added) halo_rows.emplace_back();
    halo_rows[h->second].push_back(k);
  }

  // Each halo's one top object (its row), when it has one: what a halo spread over the ranks unbinds
  // there (unbind_spread_halo), its sub-objects on one rank.
  std::vector<std::int64_t> top_row(halo_rows.size(), -1);
  for (std::size_t h = 0; h < halo_rows.size(); ++h)
    if (const std::int64_t t = top_of(specs_of(halo_rows[h], objects)); t >= 0)
      top_row[h] = static_cast<std::int64_t>(halo_rows[h][static_cast<std::size_t>(t)]);

  // group: the halo's index while the members wait to be sent.
  std::size_t kept = 0;
  std::vector<std::int64_t> count_here(halo_rows.size(), 0), top_here(halo_rows.size(), 0);
  for (Member& p : members) {
    const auto k = row_of.find(p.label);
    if (k == row_of.end()) continue;  // e.g. a clump below phew-merge's --mass-threshold
    p.group = static_cast<std::int32_t>(halo_of.at(objects[k->second].halo));  // fewer haloes than labels
    ++count_here[static_cast<std::size_t>(p.group)];
    if (static_cast<std::int64_t>(k->second) == top_row[static_cast<std::size_t>(p.group)])
      ++top_here[static_cast<std::size_t>(p.group)];
    members[kept++] = p;
  }
  if (kept < members.size()) {  // some dropped: the room they took goes back (members_of_cells' is exact)
    members.resize(kept);
    members.shrink_to_fit();
  }

  // Every halo's particle count on every rank, then the schedule (lib/unbind/schedule.hpp): which rank
  // unbinds each halo and in which batch. A halo with no particle at all (a clump whose cells' mass came
  // from neighbouring particles) is scheduled too and unbound with none.
  struct HaloCount {
    std::int64_t halo, n, top;
  };
  std::vector<HaloCount> mine;
  for (std::size_t h = 0; h < count_here.size(); ++h)
    if (count_here[h]) mine.push_back({static_cast<std::int64_t>(h), count_here[h], top_here[h]});
  std::vector<std::int64_t> count(halo_rows.size(), 0), count_top(halo_rows.size(), 0);
  for (const HaloCount& c : comm.all_gatherv<HaloCount>(mine)) {
    count[static_cast<std::size_t>(c.halo)] += c.n;
    count_top[static_cast<std::size_t>(c.halo)] += c.top;
  }
  const std::int64_t largest = count.empty() ? 0 : *std::max_element(count.begin(), count.end());
  // A halo of more than a rank's share of the particles is spread over every rank (either potential;
  // with the tree's, every rank walks the whole set's tree for its block): its top object's own
  // members stay where they are and join the rest of it after the batches; its rank in the schedule
  // holds its sub-objects' alone.
  // Spread, a rank holds about 200 B per particle of its share of the halo, whole about 230 B per
  // particle of the halo (a 1.03 M-particle cluster: 182 MB on the largest of 2 ranks spread, 266 MB
  // whole; 130 MB on the largest of 4), so spreading lowers the largest rank's peak from two ranks.
  // The bytes are the same.
  std::int64_t total = 0;
  for (const std::int64_t c : count) total += c;
  std::vector<char> spread(halo_rows.size(), 0);
  std::vector<std::int64_t> scheduled(count);  // what each halo's owner holds
  if (comm.size() > 1)
    for (std::size_t h = 0; h < count.size(); ++h)
      if (top_row[h] >= 0 && count[h] > total / comm.size()) {
        spread[h] = 1;
        scheduled[h] = count[h] - count_top[h];
      }
  std::vector<std::vector<TopParticle>> to_top(halo_rows.size());  // a spread halo's particles here
  std::vector<std::int64_t> passed_to_top(halo_rows.size(), 0);
  std::vector<double> spread_seconds(halo_rows.size(), 0.0);
  if (const auto n_spread = std::count(spread.begin(), spread.end(), 1); n_spread > 0)
    core::log::info("{} halo{} of more than a rank's share of the particles ({}) unbound over every rank", n_spread,
                    n_spread == 1 ? "" : "es", core::log::thousands(total / comm.size()));
  const HaloSchedule schedule = schedule_haloes(scheduled, comm.size(), batch_particles);
  {
    const auto goes_to_top = [&](const Member& p) {
      const auto h = static_cast<std::size_t>(p.group);
      return spread[h] && static_cast<std::int64_t>(row_of.at(p.label)) == top_row[h];
    };
    // Sized once (88 bytes a particle, not doubled): the top's own members here (top_here, counted
    // above) and, on the rank the halo is scheduled on, its sub-objects' particles, which unbind_halo adds.
    for (std::size_t h = 0; h < to_top.size(); ++h)
      if (spread[h])
        to_top[h].reserve(
            static_cast<std::size_t>(top_here[h] + (schedule.owner[h] == comm.rank() ? scheduled[h] : 0)));
    std::size_t stay = 0;
    for (Member& p : members) {
      if (goes_to_top(p))
        to_top[static_cast<std::size_t>(p.group)].push_back(top_particle(p, p.label));
      else
        members[stay++] = p;
    }
    if (stay < members.size()) {
      members.resize(stay);
      members.shrink_to_fit();
    }
  }
  std::vector<std::vector<std::size_t>> batch_haloes(static_cast<std::size_t>(schedule.batches));  // this rank's
  {
    std::vector<std::size_t> order(halo_rows.size());  // biggest first, as scheduled: threads finish together
    for (std::size_t h = 0; h < order.size(); ++h) order[h] = h;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return scheduled[a] > scheduled[b]; });
    for (const std::size_t h : order)
      if (schedule.owner[h] == comm.rank()) batch_haloes[static_cast<std::size_t>(schedule.batch[h])].push_back(h);
  }
  std::uint64_t to_unbind = 0;
  for (const auto& b : batch_haloes)
    for (const std::size_t h : b) to_unbind += static_cast<std::uint64_t>(scheduled[h]);

  // Batch by batch: its members sent to their owners, unbound, their rows kept and the members
  // released; members of later batches wait where members_of_cells left them.
  core::Progress progress("unbind", "particles in haloes", to_unbind, comm.size());
  std::size_t particles_done = 0, held_most = 0;
  std::vector<SizeBin> bins;
  Rows rows;
  rows.particles.reserve(to_unbind);  // one row per member: never copied to grow
  for (std::size_t round = 0; round < batch_haloes.size(); ++round) {
    // This round's members at the end (their order does not matter: the batch is sorted below), sent
    // a piece at a time with the pieces released as they go: the batch is held about once.
    const auto going = std::partition(members.begin(), members.end(), [&](const Member& p) {
      return schedule.batch[static_cast<std::size_t>(p.group)] != static_cast<std::int64_t>(round);
    });
    std::vector<Member> send;
    if (going == members.begin()) {
      send = std::move(members);  // the last batch here (or the only one): no copy
      core::release(members);
    } else {
      send.assign(going, members.end());
      members.erase(going, members.end());
    }
    std::size_t arriving = 0;  // this rank's members of the round, from the counts every rank has
    for (const std::size_t h : batch_haloes[round]) arriving += static_cast<std::size_t>(scheduled[h]);
    std::vector<Member> batch = mpi::scatter_in_rounds(
        comm, std::move(send),
        [&](const Member& p, auto&& emit) { emit(schedule.owner[static_cast<std::size_t>(p.group)]); }, kExchangeRound,
        arriving);
    // In schedule order (biggest halo first), so that the members of the haloes done form a prefix of
    // the batch whose pages can go back while the rest are unbound.
    const std::vector<std::size_t>& here = batch_haloes[round];
    std::vector<std::int32_t> order_of(halo_rows.size(), 0);
    for (std::size_t k = 0; k < here.size(); ++k) order_of[here[k]] = static_cast<std::int32_t>(k);
    for (Member& p : batch) p.group = order_of[static_cast<std::size_t>(p.group)];
    sort_by_group_then_id(batch, here.size());
    held_most = std::max(held_most, batch.size());

    // This batch's haloes, biggest first, each with its run of members (none for a halo without).
    struct Halo {
      std::size_t begin = 0, end = 0;
      const std::vector<std::size_t>* rows = nullptr;
    };
    std::vector<Halo> haloes(here.size());
    for (std::size_t k = 0; k < here.size(); ++k) haloes[k].rows = &halo_rows[here[k]];
    for (std::size_t b = 0, e = 0; b < batch.size(); b = e) {
      while (e < batch.size() && batch[e].group == batch[b].group) ++e;
      Halo& h = haloes[static_cast<std::size_t>(batch[b].group)];
      h.begin = b;
      h.end = e;
    }
    for (std::size_t k = 0, at = 0; k < haloes.size(); ++k) {  // a halo without members: an empty run in place
      if (haloes[k].end > haloes[k].begin)
        at = haloes[k].end;
      else
        haloes[k].begin = haloes[k].end = at;
    }

    // Each halo's rows in its own slot, joined in schedule order: the same rows for any number of threads.
    std::vector<Rows> done(haloes.size());
    std::vector<double> seconds(haloes.size(), 0.0);
    std::atomic<std::size_t> done_here{0};
    std::vector<std::exception_ptr> failed(haloes.size());  // kept per halo: the first in halo order is reported
    std::vector<std::atomic<bool>> finished(haloes.size());
    std::size_t prefix = 0;  // haloes [0, prefix) finished and their members' pages given back (thread 0's)
    char* released = reinterpret_cast<char*>(batch.data());
    core::parallel_for(threads, haloes.size(), 1, [&](std::size_t h0, std::size_t h1, int thread) {
      for (std::size_t h = h0; h < h1; ++h) {
        const auto start = std::chrono::steady_clock::now();
        try {
          const std::size_t g = here[h];  // the halo's index
          unbind_halo(std::span<Member>(batch.data() + haloes[h].begin, haloes[h].end - haloes[h].begin),
                      *haloes[h].rows, objects, frame, params, done[h], spread[g] ? &to_top[g] : nullptr,
                      &passed_to_top[g]);
        } catch (...) {
          failed[h] = std::current_exception();
        }
        seconds[h] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        done_here += haloes[h].end - haloes[h].begin;
        finished[h].store(true, std::memory_order_release);
        if (thread == 0) {  // one thread reports and releases: Progress is not shared
          progress.update(particles_done + done_here.load());
          while (prefix < haloes.size() && finished[prefix].load(std::memory_order_acquire)) ++prefix;
          if (prefix > 0) released = core::release_consumed_pages(released, batch.data() + haloes[prefix - 1].end);
        }
      }
    });
    particles_done += batch.size();
    mpi::agree(comm, [&] {  // a bad object on one rank stops every rank
      for (const std::exception_ptr& e : failed)
        if (e) std::rethrow_exception(e);
    });
    for (std::size_t h = 0; h < haloes.size(); ++h) {
      Rows& r = done[h];
      rows.objects.insert(rows.objects.end(), r.objects.begin(), r.objects.end());
      rows.particles.insert(rows.particles.end(), r.particles.begin(), r.particles.end());
      rows.most_bound.insert(rows.most_bound.end(), r.most_bound.begin(), r.most_bound.end());
      rows.by_type.insert(rows.by_type.end(), r.by_type.begin(), r.by_type.end());
      rows.passed += r.passed;
      r = {};
      if (spread[here[h]])
        spread_seconds[here[h]] += seconds[h];  // its sub-objects': with its top's below
      else
        add_to_bins(bins, haloes[h].end - haloes[h].begin, seconds[h]);
    }
  }
  progress.finish();

  // The spread haloes' top objects, one after another over every rank.
  for (std::size_t h = 0; h < halo_rows.size(); ++h) {
    if (!spread[h]) continue;
    const auto start = std::chrono::steady_clock::now();
    const auto top = static_cast<std::size_t>(
        std::find(halo_rows[h].begin(), halo_rows[h].end(), static_cast<std::size_t>(top_row[h])) -
        halo_rows[h].begin());
    unbind_spread_halo(std::move(to_top[h]), passed_to_top[h], top, halo_rows[h], objects, frame, params, comm, rows);
    core::release(to_top[h]);
    const double seconds =
        comm.sum(spread_seconds[h]) + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (comm.rank() == 0) add_to_bins(bins, static_cast<std::size_t>(count[h]), seconds);
  }

  Unbound out;
  out.n_passed = comm.sum<std::int64_t>(rows.passed);
  out.batch_particles = batch_particles;
  out.n_batches = schedule.batches;
  out.largest_halo = largest;
  out.largest_batch = comm.max<std::int64_t>(static_cast<std::int64_t>(held_most));
  out.n_spread = std::count(spread.begin(), spread.end(), 1);
  for (const SizeBin& b : comm.all_gatherv<SizeBin>(bins)) add_to_bins(out.seconds_by_size, b);
  std::int64_t tops = 0, dissolved = 0, single = 0, not_converged = 0, bound = 0;
  for (const model::BoundObject& o : rows.objects) {
    tops += o.parent == 0 ? 1 : 0;
    single += o.n_particles - o.n_received == 1 ? 1 : 0;
    dissolved += o.dissolved ? 1 : 0;
    not_converged += !o.converged && !o.dissolved && o.n_particles > 0 ? 1 : 0;
  }
  for (const model::BoundParticle& p : rows.particles) bound += p.object > 0 ? 1 : 0;
  out.n_objects = comm.sum<std::int64_t>(static_cast<std::int64_t>(rows.objects.size()));
  out.n_haloes = comm.sum<std::int64_t>(tops);
  out.n_dissolved = comm.sum<std::int64_t>(dissolved);
  out.n_single = comm.sum<std::int64_t>(single);
  out.n_not_converged = comm.sum<std::int64_t>(not_converged);
  out.n_particles = comm.sum<std::int64_t>(static_cast<std::int64_t>(rows.particles.size()));
  out.n_bound = comm.sum<std::int64_t>(bound);
  out.n_unbound = out.n_particles - out.n_bound;
  core::log::info(
      "{} objects ({} haloes) unbound: {} of {} particles bound, {} passes to a parent, {} objects dissolved",
      core::log::thousands(out.n_objects), core::log::thousands(out.n_haloes), core::log::thousands(out.n_bound),
      core::log::thousands(out.n_particles), core::log::thousands(out.n_passed), core::log::thousands(out.n_dissolved));
  // One particle has no partner to be bound to (its kinetic energy in its own frame and its potential are
  // both 0): such an object is Poisson noise the grid resolved, not structure (docs/tools/unbind.md).
  if (out.n_single > 0)
    core::log::warn(
        "{} of {} objects hold a single particle of their own: noise, not structure (the mesh resolves "
        "single particles above the threshold); they bind nothing and dissolve",
        core::log::thousands(out.n_single), core::log::thousands(out.n_objects));

  out.objects = mpi::sort(comm, std::move(rows.objects),
                          [](const model::BoundObject& p, const model::BoundObject& q) { return p.id < q.id; });
  const auto by_id = [](const model::BoundParticle& p, const model::BoundParticle& q) {
    return p.id != q.id ? p.id < q.id : p.member_of < q.member_of;
  };
  {
    // By ID in passes over the bits the IDs use (two for 2^21 particles), then each run of equal IDs by
    // member_of: the order of by_id, in place of a comparison sort of the rank's every row.
    std::vector<model::BoundParticle> scratch;
    core::radix_sort_by_used_bits(rows.particles, scratch, [](const model::BoundParticle& p) { return p.id; });
    for (std::size_t b = 0, e = 0; b < rows.particles.size(); b = e) {
      for (e = b + 1; e < rows.particles.size() && rows.particles[e].id == rows.particles[b].id;) ++e;
      if (e - b > 1)
        std::sort(rows.particles.begin() + static_cast<std::ptrdiff_t>(b),
                  rows.particles.begin() + static_cast<std::ptrdiff_t>(e), by_id);
    }
  }
  out.particles = mpi::sort(comm, std::move(rows.particles), by_id);
  out.most_bound =
      mpi::sort(comm, std::move(rows.most_bound), [](const model::MostBoundRow& p, const model::MostBoundRow& q) {
        return p.object != q.object ? p.object < q.object : p.rank < q.rank;
      });
  out.by_type = beside_objects(std::move(rows.by_type), out.objects, comm);
  return out;
}

}  // namespace phew::unbind
