#include <phew/unbind/type_properties.hpp>

#include <phew/core/error.hpp>

#include <cmath>
#include <utility>

namespace phew::unbind {
namespace {

// One type's bound particles of one set (own or inclusive): `set` in index order (every sum is taken in
// it), `by_radius` the same particles as (distance to the centre, index) in the profile's order.
struct TypeSet {
  std::vector<std::size_t> set;
  std::vector<std::pair<double, std::size_t>> by_radius;
};

TypeProperties measure_one(const LocalParticles& p, const TypeSet& s, const std::vector<double>& radius_of, double a,
                           std::span<const double> apertures) {
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
  for (const auto& [r, i] : s.by_radius) {
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
  std::vector<TypeSet> own(n_types), all(n_types);
  for (const std::size_t i : members)
    if (const int c = column_of(i); c >= 0) {
      all[static_cast<std::size_t>(c)].set.push_back(i);
      if (is_own(i)) own[static_cast<std::size_t>(c)].set.push_back(i);
    }
  // The radii and their order are the profile's (the same distances, sorted by (radius, index)).
  std::vector<double> radius_of(p.mass.size(), 0.0);
  for (std::size_t k = 0; k < profile.size(); ++k) {
    const std::size_t i = profile.index()[k];
    radius_of[i] = profile.radius()[k];
    if (const int c = column_of(i); c >= 0) {
      all[static_cast<std::size_t>(c)].by_radius.emplace_back(profile.radius()[k], i);
      if (is_own(i)) own[static_cast<std::size_t>(c)].by_radius.emplace_back(profile.radius()[k], i);
    }
  }
  for (std::size_t c = 0; c < n_types; ++c) {
    out.own.push_back(measure_one(p, own[c], radius_of, frame.scale_factor, params.apertures));
    out.inclusive.push_back(measure_one(p, all[c], radius_of, frame.scale_factor, params.apertures));
  }
  return out;
}

}  // namespace phew::unbind
