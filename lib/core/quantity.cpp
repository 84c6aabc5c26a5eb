#include <phew/core/quantity.hpp>

#include <phew/core/error.hpp>

#include <charconv>
#include <cmath>

namespace phew::core {
namespace {

// Splits "80mean" into 80 and "mean"; throws on a missing or non-finite number.
std::pair<double, std::string> split_number(const std::string& text, const char* what) {
  double v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || ptr == first) throw Error::usage("{} '{}' does not start with a number", what, text);
  if (!std::isfinite(v)) throw Error::usage("{} '{}' is not finite", what, text);
  if (v < 0) throw Error::usage("{} '{}' is negative", what, text);
  return {v, std::string(ptr, last)};
}

}  // namespace

DensityThreshold DensityThreshold::parse(const std::string& text) {
  auto [v, suffix] = split_number(text, "density threshold");
  DensityThreshold t{v, Unit::absolute};
  if (suffix == "mean")
    t.unit = Unit::mean;
  else if (suffix == "crit")
    t.unit = Unit::crit;
  else if (!suffix.empty())
    throw Error::usage("density threshold '{}' has unknown unit '{}' (expected none, 'mean' or 'crit')", text, suffix);
  return t;
}

double DensityThreshold::resolve(double mean_density, std::optional<double> critical_density) const {
  switch (unit) {
    case Unit::absolute:
      return value;
    case Unit::mean:
      return value * mean_density;
    case Unit::crit:
      if (!critical_density || !(*critical_density > 0))
        throw Error::input("threshold '{}' needs the critical density, but the input has no cosmology", to_string());
      return value * *critical_density;
  }
  return value;
}

std::string DensityThreshold::to_string() const {
  switch (unit) {
    case Unit::absolute:
      return fmt::format("{}", value);
    case Unit::mean:
      return fmt::format("{}mean", value);
    case Unit::crit:
      return fmt::format("{}crit", value);
  }
  return {};
}

MassThreshold MassThreshold::parse(const std::string& text) {
  auto [v, suffix] = split_number(text, "mass threshold");
  MassThreshold t{v, Unit::absolute};
  if (suffix == "particles")
    t.unit = Unit::particles;
  else if (!suffix.empty())
    throw Error::usage("mass threshold '{}' has unknown unit '{}' (expected none or 'particles')", text, suffix);
  return t;
}

double MassThreshold::resolve(double particle_mass) const {
  if (unit == Unit::absolute) return value;
  if (!(particle_mass > 0))
    throw Error::input("threshold '{}' needs the particle mass, but the input does not record it", to_string());
  return value * particle_mass;
}

std::string MassThreshold::to_string() const {
  return unit == Unit::absolute ? fmt::format("{}", value) : fmt::format("{}particles", value);
}

}  // namespace phew::core
