#include <phew/unbind/type_properties.hpp>

#include <phew/core/error.hpp>

#include <cmath>
#include <cstdint>
#include <utility>

namespace phew::unbind {
namespace {

// One type's bound particles of one set (own or inclusive): `set` in index order (every sum is taken in
// it), `by_radius` the same particles as their places in the profile (its order: by distance to the
// centre, then index). Sized exactly: a big halo's sets are most of its particles.
struct TypeSet {
  std::vector<std::size_t> set;
  std::vector<std::uint32_t> by_radius;
};

TypeProperties measure_one(const LocalParticles& p, const TypeSet& s, const gravity::SphericalProfile& profile,
                           const std::vector<double>& radius_of, double a, std::span<const double> apertures) {
  TypeProperties out;
  out.aperture_mass.assign(apertures.size(), 0.0);
  if (s.set.empty()) return out;
  double mass = 0;
  std::array<double, 3> mean{0, 0, 0};
  for (const std::size_t i : s.set) {
    const double m = p.mass[i];
    mass += m;
    for (std::size_t d = 0; d < 3; ++d) mean[d] += m * p.u[3 * i + d];
    for (std::size_t k = 0; k < apertures.size(); ++k)
      if (radius_of[i] <= apertures[k]) out.aperture_mass[k] += m;
  }
  out.n_bound = static_cast<std::int64_t>(s.set.size());
  out.mass = mass;
  if (!(mass > 0)) return out;
  for (double& v : mean) v /= mass;
  double spread = 0;
  for (const std::size_t i : s.set)
    for (std::size_t d = 0; d < 3; ++d) {
      const double w = p.u[3 * i + d] - mean[d];
      spread += p.mass[i] * w * w;
    }
  out.velocity_dispersion = std::sqrt(spread / (3 * mass));
  // Where the enclosed mass M(<= r), linear between the particles' radii (0 at r = 0), reaches half:
  // continuous in the masses, so an even count of equal masses does not turn on the last bit of a sum.
  double enclosed = 0, r_before = 0;
  for (const std::uint32_t k : s.by_radius) {
    const double r = profile.radius()[k];
    const std::size_t i = profile.index()[k];
    const double below = enclosed;
    enclosed += p.mass[i];
    if (enclosed >= 0.5 * mass) {
      out.half_mass_radius = (r_before + (r - r_before) * (0.5 * mass - below) / p.mass[i]) / a;
      break;
    }
    r_before = r;
  }
  return out;
}

}  // namespace

TypeBreakdown measure_by_type(const LocalParticles& p, std::span<const std::size_t> members,
                              const gravity::SphericalProfile& profile, const Frame& frame, const Params& params) {
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
  // A type none of whose particles is fixed has the same own and inclusive sets: they are made, and
  // measured, once.
  std::vector<std::size_t> n_all(n_types, 0), n_own(n_types, 0);
  for (const std::size_t i : members)
    if (const int c = column_of(i); c >= 0) {
      ++n_all[static_cast<std::size_t>(c)];
      if (is_own(i)) ++n_own[static_cast<std::size_t>(c)];
    }
  std::vector<TypeSet> own(n_types), all(n_types);
  const auto shared = [&](std::size_t c) { return n_own[c] == n_all[c]; };
  for (std::size_t c = 0; c < n_types; ++c) {
    all[c].set.reserve(n_all[c]);
    all[c].by_radius.reserve(n_all[c]);
    if (!shared(c)) {
      own[c].set.reserve(n_own[c]);
      own[c].by_radius.reserve(n_own[c]);
    }
  }
  for (const std::size_t i : members)
    if (const int c = column_of(i); c >= 0) {
      const auto t = static_cast<std::size_t>(c);
      all[t].set.push_back(i);
      if (!shared(t) && is_own(i)) own[t].set.push_back(i);
    }
  // The radii and their order are the profile's (the same distances, sorted by (radius, index)); the
  // radius of each particle only for the apertures.
  std::vector<double> radius_of(params.apertures.empty() ? 0 : p.mass.size(), 0.0);
  for (std::size_t k = 0; k < profile.size(); ++k) {
    const std::size_t i = profile.index()[k];
    if (!radius_of.empty()) radius_of[i] = profile.radius()[k];
    if (const int c = column_of(i); c >= 0) {
      const auto t = static_cast<std::size_t>(c);
      all[t].by_radius.push_back(static_cast<std::uint32_t>(k));
      if (!shared(t) && is_own(i)) own[t].by_radius.push_back(static_cast<std::uint32_t>(k));
    }
  }
  for (std::size_t c = 0; c < n_types; ++c) {
    out.inclusive.push_back(measure_one(p, all[c], profile, radius_of, frame.scale_factor, params.apertures));
    out.own.push_back(shared(c) ? out.inclusive.back()
                                : measure_one(p, own[c], profile, radius_of, frame.scale_factor, params.apertures));
  }
  return out;
}

}  // namespace phew::unbind
