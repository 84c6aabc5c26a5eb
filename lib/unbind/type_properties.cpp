#include <phew/unbind/type_properties.hpp>

#include <phew/core/error.hpp>

#include <cmath>
#include <cstdint>
#include <utility>

namespace phew::unbind {
namespace {

// One type's bound particles of one set (own or inclusive): `set` this rank's in index order (every
// sum is taken in it, carried over the ranks), `by_radius` the same particles as their places in this
// rank's run of the radius order (by distance to the centre, then ID), `n` the set's size on every rank.
// Sized exactly: a big halo's sets are most of its particles.
struct TypeSet {
  std::vector<std::size_t> set;
  std::vector<std::uint32_t> by_radius;
  std::uint64_t n = 0;
};

TypeProperties measure_one(const mpi::Comm& comm, const LocalParticles& p, const TypeSet& s, const grid::RadialRun& run,
                           const std::vector<double>& radius_of, double a, std::span<const double> apertures) {
  TypeProperties out;
  out.aperture_mass.assign(apertures.size(), 0.0);
  if (s.n == 0) return out;
  // [0] the mass, [1..3] the mass-weighted u, then the apertures' masses.
  std::vector<double> sums(4 + apertures.size(), 0.0);
  comm.relay_each(std::span<double>(sums), [&](std::span<double> t) {
    for (const std::size_t i : s.set) {
      const double m = p.mass[i];
      t[0] += m;
      for (std::size_t d = 0; d < 3; ++d) t[1 + d] += m * p.u[3 * i + d];
      for (std::size_t k = 0; k < apertures.size(); ++k)
        if (radius_of[i] <= apertures[k]) t[4 + k] += m;
    }
  });
  const double mass = sums[0];
  std::array<double, 3> mean{sums[1], sums[2], sums[3]};
  std::copy(sums.begin() + 4, sums.end(), out.aperture_mass.begin());
  out.n_bound = static_cast<std::int64_t>(s.n);
  out.mass = mass;
  if (!(mass > 0)) return out;
  for (double& v : mean) v /= mass;
  const double spread = comm.relay(0.0, [&](double t) {
    for (const std::size_t i : s.set)
      for (std::size_t d = 0; d < 3; ++d) {
        const double w = p.u[3 * i + d] - mean[d];
        t += p.mass[i] * w * w;
      }
    return t;
  });
  out.velocity_dispersion = std::sqrt(spread / (3 * mass));
  // Where the enclosed mass M(<= r), linear between the particles' radii (0 at r = 0), reaches half:
  // continuous in the masses, so an even count of equal masses does not turn on the last bit of a sum.
  // The scan carried over the runs: [0] M, [1] the last radius before, [2] found, [3] the radius.
  const std::array<double, 4> half = run.comm.relay(std::array<double, 4>{}, [&](std::array<double, 4> h) {
    if (h[2] != 0) return h;
    for (const std::uint32_t k : s.by_radius) {
      const double r = run.radius[k];
      const double below = h[0];
      h[0] += run.mass[k];
      if (h[0] >= 0.5 * mass) {
        h[3] = (h[1] + (r - h[1]) * (0.5 * mass - below) / run.mass[k]) / a;
        h[2] = 1;
        break;
      }
      h[1] = r;
    }
    return h;
  });
  if (half[2] != 0) out.half_mass_radius = half[3];
  return out;
}

}  // namespace

TypeBreakdown measure_by_type(const mpi::Comm& comm, const LocalParticles& p, std::span<const std::size_t> members,
                              const RadialMembers& radial, const std::array<double, 3>& centre, const Frame& frame,
                              const Params& params) {
  TypeBreakdown out;
  const std::size_t n_types = params.types.size();
  if (n_types == 0) return out;
  if (!p.type.empty() && p.type.size() != p.mass.size())
    throw core::Error::internal("unbind: {} particle types for {} particles", p.type.size(), p.mass.size());
  std::array<int, 256> column{};
  column.fill(-1);
  for (std::size_t c = 0; c < n_types; ++c) column.at(static_cast<std::size_t>(params.types[c])) = static_cast<int>(c);
  const auto column_of = [&](std::size_t i) { return p.type.empty() ? 0 : column[p.type[i]]; };
  const auto is_own = [&](std::size_t i) { return p.fixed.empty() || !p.fixed[i]; };
  // A type none of whose particles is fixed (on any rank) has the same own and inclusive sets: they
  // are made, and measured, once.
  std::vector<std::uint64_t> n_all(n_types, 0), n_own(n_types, 0);
  for (const std::size_t i : members)
    if (const int c = column_of(i); c >= 0) {
      ++n_all[static_cast<std::size_t>(c)];
      if (is_own(i)) ++n_own[static_cast<std::size_t>(c)];
    }
  std::vector<std::uint64_t> here_all(n_all), here_own(n_own);  // this rank's, for the sets' room
  comm.sum_each(std::span<std::uint64_t>(n_all));
  comm.sum_each(std::span<std::uint64_t>(n_own));
  const auto shared = [&](std::size_t c) { return n_own[c] == n_all[c]; };
  std::vector<TypeSet> own(n_types), all(n_types);
  for (std::size_t c = 0; c < n_types; ++c) {
    all[c].n = n_all[c];
    own[c].n = n_own[c];
    all[c].set.reserve(here_all[c]);
    if (!shared(c)) own[c].set.reserve(here_own[c]);
  }
  for (const std::size_t i : members)
    if (const int c = column_of(i); c >= 0) {
      const auto t = static_cast<std::size_t>(c);
      all[t].set.push_back(i);
      if (!shared(t) && is_own(i)) own[t].set.push_back(i);
    }
  // The radius order is the run's (the same distances, sorted by (radius, ID)); each member's radius,
  // computed as the profile computes it, only for the apertures.
  const grid::RadialRun& run = radial.run;
  for (std::size_t k = 0; k < run.radius.size(); ++k) {
    const std::size_t i = radial.at(k);
    const int c = radial.type.empty() ? 0 : column[radial.type[i]];
    if (c < 0) continue;
    const auto t = static_cast<std::size_t>(c);
    all[t].by_radius.push_back(static_cast<std::uint32_t>(k));
    if (!shared(t) && (radial.fixed.empty() || !radial.fixed[i]))
      own[t].by_radius.push_back(static_cast<std::uint32_t>(k));
  }
  std::vector<double> radius_of(params.apertures.empty() ? 0 : p.mass.size(), 0.0);
  if (!radius_of.empty())
    for (const std::size_t i : members) {
      const double dx = p.x[3 * i] - centre[0], dy = p.x[3 * i + 1] - centre[1], dz = p.x[3 * i + 2] - centre[2];
      radius_of[i] = std::sqrt(dx * dx + dy * dy + dz * dz);
    }
  for (std::size_t c = 0; c < n_types; ++c) {
    out.inclusive.push_back(measure_one(comm, p, all[c], run, radius_of, frame.scale_factor, params.apertures));
    out.own.push_back(shared(c) ? out.inclusive.back()
                                : measure_one(comm, p, own[c], run, radius_of, frame.scale_factor, params.apertures));
  }
  return out;
}

}  // namespace phew::unbind
