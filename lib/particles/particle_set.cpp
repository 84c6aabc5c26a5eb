#include <phew/particles/particle_set.hpp>

#include <phew/core/units.hpp>

#include <cmath>
#include <numbers>
#include <fmt/format.h>

namespace phew::particles {
namespace {

using core::units::kGravitationalConstantCgs;
using core::units::kKpcInCm;
using core::units::kMsunInG;

bool near(double a, double b) { return std::abs(a - b) <= 1e-3 * std::abs(b); }

template <typename V>
void extend(std::vector<V>& a, const std::vector<V>& b) {
  a.insert(a.end(), b.begin(), b.end());
}

}  // namespace

void ParticleSet::append(const ParticleSet& o) {
  extend(position, o.position);
  extend(mass, o.mass);
  extend(id, o.id);
  extend(velocity, o.velocity);
  extend(potential, o.potential);
  extend(acceleration, o.acceleration);
  extend(type, o.type);
  extend(internal_energy, o.internal_energy);
  extend(star_formation_rate, o.star_formation_rate);
  extend(electron_abundance, o.electron_abundance);
}

namespace {

// The names of a format's types, by code; "" for a code no type has (RAMSES' 6-10: no family).
std::vector<const char*> type_names(const std::string& format) {
  if (format == "ramses")
    return {"tracer_gas",
            "dark_matter",
            "stars",
            "cloud",
            "debris",
            "other",
            "",
            "",
            "",
            "",
            "",
            "tracer_dark_matter",
            "tracer_stars",
            "tracer_cloud",
            "tracer_debris",
            "tracer_other"};
  if (format == "swift-hdf5")
    return {"gas", "dark_matter", "dark_matter_background", "sinks", "stars", "black_holes", "neutrinos"};
  if (format == "phew-particles") return {"particles"};
  return {"gas", "dark_matter", "dark_matter_2", "dark_matter_3", "stars", "black_holes"};
}

}  // namespace

std::string SnapshotInfo::type_name(int type) const {
  const std::vector<const char*> names = type_names(format);
  if (type >= 0 && static_cast<std::size_t>(type) < names.size() && *names[static_cast<std::size_t>(type)])
    return names[static_cast<std::size_t>(type)];
  return fmt::format("type_{}", type);
}

bool SnapshotInfo::format_has_type(int type) const {
  if (type < 0 || type >= num_types()) return false;
  const std::vector<const char*> names = type_names(format);
  return static_cast<std::size_t>(type) >= names.size() || *names[static_cast<std::size_t>(type)];
}

std::string Units::length_name() const {
  std::string base;
  if (near(length_cm, kKpcInCm))
    base = "kpc";
  else if (near(length_cm, 1e3 * kKpcInCm))
    base = "Mpc";
  else if (near(length_cm, 1e-3 * kKpcInCm))
    base = "pc";
  else
    base = fmt::format("{:g} cm", length_cm);
  return h_scaled ? base + "/h" : base;
}

std::string Units::mass_name() const {
  std::string base;
  if (near(mass_g, 1e10 * kMsunInG))
    base = "1e10 Msun";
  else if (near(mass_g, kMsunInG))
    base = "Msun";
  else
    base = fmt::format("{:g} g", mass_g);
  return h_scaled ? base + "/h" : base;
}

std::string Units::velocity_name() const {
  if (near(velocity_cm_per_s, core::units::kKmPerSInCmPerS)) return core::units::kKmPerS;
  return fmt::format("{:g} cm/s", velocity_cm_per_s);
}

std::string Units::peculiar_velocity_name() const { return velocity_name() + " (peculiar)"; }

std::string Units::source_name() const {
  switch (source) {
    case UnitsSource::file:
      return "file";
    case UnitsSource::given:
      return "given";
    case UnitsSource::inferred:
      return "inferred";
    case UnitsSource::assumed:
      break;
  }
  return "assumed";
}

std::string Units::density_name() const { return "(" + mass_name() + ")/(" + length_name() + ")^3"; }

double Units::gravitational_constant() const {
  return kGravitationalConstantCgs * mass_g / (length_cm * velocity_cm_per_s * velocity_cm_per_s);
}

double Cosmology::critical_density(double a, const Units& units) const {
  // H0 = 100 h km/s/Mpc. With h-scaled units the h^2 of H0^2 is absorbed by the units.
  const double h = units.h_scaled ? 1.0 : hubble_param;
  const double H0_per_s = 100.0 * h * core::units::kKmPerSInCmPerS / (1e3 * kKpcInCm);
  const double omega_k = 1.0 - omega_m - omega_lambda;
  const double E2 = omega_m / (a * a * a) + omega_k / (a * a) + omega_lambda;
  const double rho_cgs = 3.0 * H0_per_s * H0_per_s * E2 / (8.0 * M_PI * kGravitationalConstantCgs);
  const double density_unit = units.mass_g / (units.length_cm * units.length_cm * units.length_cm);
  return rho_cgs * a * a * a / density_unit;
}

double hubble_rate(double comoving_critical_density, double a, double G) {
  return std::sqrt(8 * std::numbers::pi * G * comoving_critical_density / (a * a * a) / 3);
}

std::uint64_t SnapshotInfo::total(int type) const {
  if (file_counts.empty())
    return type >= 0 && type < static_cast<int>(type_totals.size()) ? type_totals[static_cast<std::size_t>(type)] : 0;
  std::uint64_t n = 0;
  for (const auto& f : file_counts)
    if (type < static_cast<int>(f.size())) n += f[static_cast<std::size_t>(type)];
  return n;
}

std::uint64_t SnapshotInfo::total(const std::vector<int>& types) const {
  std::uint64_t n = 0;
  for (int t : types) n += total(t);
  return n;
}

}  // namespace phew::particles
