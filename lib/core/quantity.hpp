// The one parser for thresholds written as numbers with an optional unit suffix (docs/cli.md,
// "Thresholds and units"):
//   densities: "1.5e-7" (absolute, grid units), "80mean" (x mean density), "80crit" (x critical density)
//   masses:    "3.2" (absolute, snapshot units), "10particles" (x particle mass)
#pragma once

#include <optional>
#include <string>

namespace phew::core {

struct DensityThreshold {
  enum class Unit { absolute, mean, crit };
  double value = 0;
  Unit unit = Unit::absolute;

  // Throws Error(usage) on a malformed or negative value or an unknown unit.
  static DensityThreshold parse(const std::string& text);
  // The absolute density; throws Error(input) for "crit" when the critical density is unknown.
  double resolve(double mean_density, std::optional<double> critical_density) const;
  std::string to_string() const;
};

struct MassThreshold {
  enum class Unit { absolute, particles };
  double value = 0;
  Unit unit = Unit::absolute;

  static MassThreshold parse(const std::string& text);
  // Throws Error(input) for "particles" when the particle mass is unknown (0 or not positive).
  double resolve(double particle_mass) const;
  std::string to_string() const;
};

}  // namespace phew::core
