#include <phew/unbind/type_properties.hpp>

#include <phew/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <utility>

namespace phew::unbind {
namespace {

// One type's particles of one set (own or inclusive): its properties from the indices, in index order.
TypeProperties measure_one(const LocalParticles& p, std::span<const std::size_t> set,
                           const std::array<double, 3>& centre, double a, std::span<const double> apertures) {
  TypeProperties out;
  out.aperture_mass.assign(apertures.size(), 0.0);
  if (set.empty()) return out;
  double mass = 0;
  std::array<double, 3> mean{0, 0, 0};
  std::vector<std::pair<double, std::size_t>> radius;  // (physical distance to the centre, index)
  radius.reserve(set.size());
  for (const std::size_t i : set) {
    const double m = p.mass[i];
    mass += m;
    double r2 = 0;
    for (std::size_t d = 0; d < 3; ++d) {
      mean[d] += m * p.u[3 * i + d];
      const double dx = p.x[3 * i + d] - centre[d];
      r2 += dx * dx;
    }
    radius.emplace_back(std::sqrt(r2), i);
    for (std::size_t k = 0; k < apertures.size(); ++k)
      if (radius.back().first <= apertures[k]) out.aperture_mass[k] += m;
  }
  out.n_bound = static_cast<std::int64_t>(set.size());
  out.mass = mass;
  if (!(mass > 0)) return out;
  for (double& v : mean) v /= mass;
  double spread = 0;
  for (const std::size_t i : set)
    for (std::size_t d = 0; d < 3; ++d) {
      const double w = p.u[3 * i + d] - mean[d];
      spread += p.mass[i] * w * w;
    }
  out.velocity_dispersion = std::sqrt(spread / (3 * mass));
  // Where the enclosed mass M(<= r), linear between the particles' radii (0 at r = 0), reaches half:
  // continuous in the masses, so an even count of equal masses does not turn on the last bit of a sum.
  std::sort(radius.begin(), radius.end());
  double enclosed = 0, r_before = 0;
  for (const auto& [r, i] : radius) {
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
                              const std::array<double, 3>& centre, const Frame& frame, const Params& params) {
  TypeBreakdown out;
  const std::size_t n_types = params.types.size();
  if (n_types == 0) return out;
  if (!p.type.empty() && p.type.size() != p.mass.size())
    throw core::Error::internal("unbind: {} particle types for {} particles", p.type.size(), p.mass.size());
  std::array<int, 256> column{};
  column.fill(-1);
  for (std::size_t c = 0; c < n_types; ++c) column.at(static_cast<std::size_t>(params.types[c])) = static_cast<int>(c);
  std::vector<std::vector<std::size_t>> own(n_types), all(n_types);
  for (const std::size_t i : members) {
    const int c = p.type.empty() ? 0 : column[p.type[i]];
    if (c < 0) continue;
    all[static_cast<std::size_t>(c)].push_back(i);
    if (p.fixed.empty() || !p.fixed[i]) own[static_cast<std::size_t>(c)].push_back(i);
  }
  for (std::size_t c = 0; c < n_types; ++c) {
    out.own.push_back(measure_one(p, own[c], centre, frame.scale_factor, params.apertures));
    out.inclusive.push_back(measure_one(p, all[c], centre, frame.scale_factor, params.apertures));
  }
  return out;
}

}  // namespace phew::unbind
