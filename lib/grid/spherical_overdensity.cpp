#include "grid/spherical_overdensity.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace phew {

double bryan_norman_delta(double omega_m, double omega_lambda, double a) {
  const double m = omega_m / (a * a * a);
  const double x = m / (m + omega_lambda) - 1.0;
  return 18.0 * std::numbers::pi * std::numbers::pi + 82.0 * x - 39.0 * x * x;
}

namespace {

// The crossing of Δ ρ_crit in particles sorted by radius ((r², m) pairs), or nullopt when the mean
// enclosed density is still above it at the last one.
struct Crossing {
  bool found = false;
  Overdensity at;
};
Crossing crossing(const std::vector<std::pair<double, double>>& by_radius, double target) {
  double enclosed = 0;
  for (const auto& [r2, m] : by_radius) {
    const double r = std::sqrt(r2);
    const double inside = enclosed + m;
    if (inside < target * (4.0 / 3.0) * std::numbers::pi * r * r * r) {
      // Between the previous particle and this one the mass is `enclosed`: the radius where its mean
      // density is the target (0 when the innermost particle is already below it).
      const double radius = std::cbrt(3.0 * enclosed / (4.0 * std::numbers::pi * target));
      return {true, {radius, enclosed}};
    }
    enclosed = inside;
  }
  return {};
}

}  // namespace

std::vector<SoMasses> spherical_overdensity(const ParticleIndex& particles, std::span<const std::array<double, 3>> centres,
                                            std::span<const double> start_radius, double max_radius,
                                            double critical_density, double delta_vir) {
  std::vector<SoMasses> out(centres.size());
  std::vector<std::pair<double, double>> by_radius;
  for (std::size_t c = 0; c < centres.size(); ++c) {
    double r = std::min(std::max(start_radius[c], 1e-300), max_radius);
    for (;;) {
      by_radius.clear();
      const double r2max = r * r;
      particles.visit(centres[c], {r, r, r}, [&](double x, double y, double z, double m) {
        const double r2 = x * x + y * y + z * z;
        if (r2 <= r2max) by_radius.emplace_back(r2, m);
      });
      std::sort(by_radius.begin(), by_radius.end());
      const Crossing vir = crossing(by_radius, delta_vir * critical_density);
      const Crossing c200 = crossing(by_radius, 200.0 * critical_density);
      // Both crossings inside the sphere, or the sphere as large as it may get.
      if ((vir.found && c200.found) || r >= max_radius) {
        out[c] = {vir.at, c200.at};
        break;
      }
      r = std::min(2 * r, max_radius);
    }
  }
  return out;
}

}  // namespace phew
