#include <phew/unbind/spread.hpp>

#include <phew/core/error.hpp>
#include <phew/gravity/distributed_profile.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/unbind/passes.hpp>
#include <phew/unbind/potential.hpp>
#include <phew/unbind/properties.hpp>

#include <algorithm>
#include <limits>
#include <memory>

namespace phew::unbind {

namespace {

using passes::Local;
using Vec = passes::Vec;

// The object spread over the ranks (passes.hpp's Whole): sums carried rank to rank in ID order.
struct Spread {
  const mpi::Comm& comm;
  const Local& l;
  double G, eps;

  std::array<double, 4> weighted(const std::vector<std::size_t>& members, const std::vector<double>& w) const {
    return comm.relay(std::array<double, 4>{0, 0, 0, 0}, [&](std::array<double, 4> s) {
      for (const std::size_t i : members) {
        s[0] += l.m[i];
        for (std::size_t d = 0; d < 3; ++d) s[1 + d] += l.m[i] * w[3 * i + d];
      }
      return s;
    });
  }
  gravity::DistributedSphericalProfile profile(const std::vector<std::size_t>& source, const Vec& centre) const {
    return {comm, l.x, l.m, l.id, source, centre, G, eps};
  }
  // The first lowest of the ranks' first lowest, in rank order: the lowest ID among equals, as on one rank.
  Vec lowest(const std::vector<std::size_t>& members, const std::vector<double>& value, const Vec& previous) const {
    struct Best {
      double value;
      Vec x;
      int has;
    };
    Best mine{0, {0, 0, 0}, 0};
    if (!members.empty()) {
      std::size_t best = members[0];
      for (const std::size_t i : members)
        if (value[i] < value[best]) best = i;
      mine = {value[best], {l.x[3 * best], l.x[3 * best + 1], l.x[3 * best + 2]}, 1};
    }
    const Best* pick = nullptr;
    const std::vector<Best> all = comm.all_gather(mine);
    for (const Best& b : all)
      if (b.has && (!pick || b.value < pick->value)) pick = &b;
    return pick ? pick->x : previous;
  }
  std::uint64_t total(std::uint64_t n) const { return comm.sum(n); }
  double sum_m(const std::vector<std::size_t>& members, const std::vector<double>& w) const {
    return comm.relay(0.0, [&](double u) {
      for (const std::size_t i : members) u += l.m[i] * w[i];
      return u;
    });
  }
  // Every rank gathers the whole source set (its blocks in rank order: ID order, the one-rank order)
  // and computes the potential at its own block only, from the same set: the one-rank bits, each
  // rank's share of the walks (40 bytes a particle of the whole set held during the call).
  void pair_potentials(const std::vector<std::size_t>& source, const Params& params, std::vector<double>& phi) const {
    std::vector<gravity::Source> mine = sources_of(l.x, l.m, l.id, source);
    const std::vector<std::uint64_t> sizes = comm.all_gather<std::uint64_t>(source.size());
    std::uint64_t first = 0;
    for (int r = 0; r < comm.rank(); ++r) first += sizes[static_cast<std::size_t>(r)];
    std::vector<gravity::Source> all = comm.all_gatherv<gravity::Source>(mine);
    core::release(mine);
    std::vector<double> block;
    block_potential(std::move(all), first, first + source.size(), G, eps, params.theta, params.direct_below, block);
    for (std::size_t k = 0; k < source.size(); ++k) phi[source[k]] = block[k];
  }
};

// Every ID of a rank below every ID of the next ranks that hold any.
void check_id_order(const mpi::Comm& comm, const Local& l) {
  struct Range {
    std::uint64_t first, last;
    int has;
  };
  const Range mine = l.id.empty() ? Range{0, 0, 0} : Range{l.id.front(), l.id.back(), 1};
  bool seen = false;
  std::uint64_t last = 0;
  for (const Range& r : comm.all_gather(mine)) {
    if (!r.has) continue;
    if (seen && r.first <= last)
      throw core::Error::internal("unbind: an object's shares are not in ascending ID order over the ranks");
    seen = true;
    last = r.last;
  }
}

}  // namespace

ObjectResult unbind_spread_object(const mpi::Comm& comm, const ObjectParticles& share, const ObjectSpec& spec,
                                  const Frame& frame, const Params& params) {
  if (!(frame.scale_factor > 0))
    throw core::Error::internal("unbind: scale factor {} is not positive", frame.scale_factor);
  Local l;  // a rank's own input errors (an ID twice) stop every rank
  mpi::agree(comm, [&] { l = passes::gather(share, spec, frame); });
  if (share.copied) share.copied();
  check_id_order(comm, l);
  const std::size_t n = l.id.size();
  ObjectResult result;
  ObjectSummary& sum = result.summary;
  sum.n_particles = static_cast<std::int64_t>(comm.sum<std::uint64_t>(n));
  sum.n_fixed = static_cast<std::int64_t>(
      comm.sum<std::uint64_t>(static_cast<std::uint64_t>(std::count(l.fixed.begin(), l.fixed.end(), 1))));

  // The shrinking spheres' group over the ranks (bound.h5 writes their centre whatever the choice).
  auto spheres = std::make_unique<grid::ShrinkingSphereGroup>(l.x, l.m, grid::Box{}, Vec{0, 0, 0}, &comm);
  const Spread whole{comm, l, frame.G, frame.softening * frame.scale_factor};
  const passes::Outcome out = passes::remove_unbound(whole, l, spec, frame, params, spheres.get());
  const passes::Evaluation& ev = out.ev;
  passes::record_passes(out, sum);
  if (!out.dissolved) {
    const BoundState state = passes::bound_state(whole, l, out, spheres.get(), params);
    spheres.reset();
    // The bound members' radius order about the centre over the ranks, with what the properties read of
    // each particle carried into it (x, u, type, fixed) one column at a time: 8 bytes a member in flight.
    const gravity::DistributedSphericalProfile prof(comm, l.x, l.m, l.id, ev.members, ev.centre, frame.G, 0.0);
    const std::size_t run = prof.run_keys().size();
    std::vector<double> run_x(3 * run), run_u(3 * run);
    // Typed on any rank: typed on every rank's run (a rank may hold none of the share yet part of the run).
    const bool typed = comm.sum<std::uint64_t>(l.type.empty() ? 0 : 1) > 0;
    std::vector<std::uint8_t> run_type(typed ? run : 0), run_fixed(run);
    prof.carry_columns(
        8,
        [&](std::size_t c, std::size_t k) {
          const std::size_t i = ev.members[k];
          if (c < 3) return l.x[3 * i + c];
          if (c < 6) return l.u[3 * i + c - 3];
          if (c == 6) return l.type.empty() ? 0.0 : static_cast<double>(l.type[i]);
          return static_cast<double>(l.fixed[i]);
        },
        [&](std::size_t c, std::size_t j, double v) {
          if (c < 3)
            run_x[3 * j + c] = v;
          else if (c < 6)
            run_u[3 * j + c - 3] = v;
          else if (c == 6 && typed)
            run_type[j] = static_cast<std::uint8_t>(v);
          else if (c == 7)
            run_fixed[j] = static_cast<std::uint8_t>(v);
        });
    const RadialMembers radial{prof.run(), {}, prof.run_keys(), run_x, run_u, run_type, run_fixed};
    sum.properties = measure_properties(comm, l.view(), state, radial, spec.peak, frame, params);
  }
  passes::per_particle(l, out, result);
  return result;
}

}  // namespace phew::unbind
