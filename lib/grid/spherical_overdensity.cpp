#include <phew/grid/spherical_overdensity.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

namespace phew::grid {

double bryan_norman_delta(double omega_m, double omega_lambda, double a) {
  const double m = omega_m / (a * a * a);
  const double x = m / (m + omega_lambda) - 1.0;
  return 18.0 * std::numbers::pi * std::numbers::pi + 82.0 * x - 39.0 * x * x;
}

namespace {

double sphere_volume(double r) { return 4.0 / 3.0 * std::numbers::pi * r * r * r; }

}  // namespace

Overdensity outermost_overdensity(std::span<const double> radius, std::span<const double> mass, double target,
                                  std::size_t min_particles) {
  return outermost_overdensity(RadialRun::whole(radius, mass), target, min_particles);
}

Overdensity outermost_overdensity(const RadialRun& run, double target, std::size_t min_particles) {
  // Enclosed mass at each particle, then the last one whose mean enclosed density reaches the target
  // (compared as M >= target V, so a particle at r = 0 counts as infinitely dense): each rank's last,
  // then the last rank's that has one.
  const std::vector<double> enclosed = run.enclosed();
  struct Last {
    int found;
    std::uint64_t at;
    double mass;
  };
  Last mine{0, 0, 0};
  for (std::size_t k = 0; k < enclosed.size(); ++k)
    if (enclosed[k] >= target * sphere_volume(run.radius[k])) mine = {1, run.first + k, enclosed[k]};
  Last last{0, 0, 0};
  for (const Last& l : run.comm.all_gather(mine))
    if (l.found) last = l;
  if (!last.found || last.at + 1 < std::max<std::size_t>(min_particles, 1)) return {};
  Overdensity o;
  o.mass = last.mass;
  o.radius = std::cbrt(3.0 * last.mass / (4.0 * std::numbers::pi * target));
  o.n_particles = static_cast<std::int64_t>(last.at + 1);
  return o;
}

std::vector<SoMasses> spherical_overdensity(const ParticleIndex& particles,
                                            std::span<const std::array<double, 3>> centres,
                                            std::span<const double> start_radius, double max_radius,
                                            double critical_density, double delta_vir, std::size_t min_particles) {
  std::vector<SoMasses> out(centres.size());
  const double lowest = std::min(delta_vir, 200.0) * critical_density;
  std::vector<std::pair<double, double>> by_radius;
  std::vector<double> r, m;
  for (std::size_t c = 0; c < centres.size(); ++c) {
    double search = std::min(std::max(start_radius[c], 1e-300), max_radius);
    double inside = 0;
    for (;;) {
      by_radius.clear();
      inside = 0;
      const double r2max = search * search;
      particles.visit(centres[c], {search, search, search}, [&](double x, double y, double z, double mass) {
        const double r2 = x * x + y * y + z * z;
        if (r2 <= r2max) {
          by_radius.emplace_back(r2, mass);
          inside += mass;
        }
      });
      if (inside < lowest * sphere_volume(search) || search >= max_radius) break;
      search = std::min(2 * search, max_radius);
    }
    std::sort(by_radius.begin(), by_radius.end());
    r.resize(by_radius.size());
    m.resize(by_radius.size());
    for (std::size_t i = 0; i < by_radius.size(); ++i) {
      r[i] = std::sqrt(by_radius[i].first);
      m[i] = by_radius[i].second;
    }
    // A Δ still reached at the edge of the largest sphere has its radius beyond it: not measurable.
    auto measure = [&](double delta) {
      const double target = delta * critical_density;
      return inside >= target * sphere_volume(search) ? Overdensity{}
                                                      : outermost_overdensity(r, m, target, min_particles);
    };
    out[c] = {measure(delta_vir), measure(200.0)};
  }
  return out;
}

}  // namespace phew::grid
