// Spherical-overdensity masses and radii around given centres, from particles: the radius within
// which the mean enclosed density falls to Δ times the critical density, for Δ = 200 and for the
// virial Δ of Bryan & Norman (1998). Positions, radii and densities are comoving, like the grid's, so
// the critical density is ρ_crit(a)·a³ (Cosmology::critical_density).
#pragma once

#include "grid/particle_index.hpp"

#include <array>
#include <span>
#include <vector>

namespace phew {

// Bryan & Norman (1998) virial overdensity relative to critical, flat universe:
// Δ_c = 18π² + 82x − 39x², x = Ω_m(a) − 1, Ω_m(a) = Ω_m a⁻³ / (Ω_m a⁻³ + Ω_Λ).
double bryan_norman_delta(double omega_m, double omega_lambda, double a);

struct Overdensity {
  double radius = 0, mass = 0;  // 0 when the density around the centre never reaches Δ ρ_crit
};
struct SoMasses {
  Overdensity vir, c200;
};

// For each centre: particles are taken in spheres of growing radius (from `start_radius`, doubling up
// to `max_radius`) until the mean enclosed density falls below Δ ρ_crit; the radius is where
// M(<r) / (4π r³/3) = Δ ρ_crit between the particle where it falls and the one before. Not collective.
std::vector<SoMasses> spherical_overdensity(const ParticleIndex& particles, std::span<const std::array<double, 3>> centres,
                                            std::span<const double> start_radius, double max_radius,
                                            double critical_density, double delta_vir);

}  // namespace phew
