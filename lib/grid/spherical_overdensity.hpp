// Spherical-overdensity masses and radii around given centres, from particles, for Δ = 200 and for the
// virial Δ of Bryan & Norman (1998): the OUTERMOST radius where the mean enclosed density is still Δ
// times the critical density (as SOAP and AHF take it), so that a dense particle near the centre with
// a gap behind it does not end the search. Positions, radii and densities are comoving, like the grid's,
// so the critical density is ρ_crit(a)·a³ (Cosmology::critical_density).
#pragma once

#include <phew/grid/particle_index.hpp>
#include <phew/grid/radial_run.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace phew::grid {

// Bryan & Norman (1998) virial overdensity relative to critical, flat universe:
// Δ_c = 18π² + 82x − 39x², x = Ω_m(a) − 1, Ω_m(a) = Ω_m a⁻³ / (Ω_m a⁻³ + Ω_Λ).
double bryan_norman_delta(double omega_m, double omega_lambda, double a);

// The fewest particles a spherical-overdensity sphere may hold; below it the mass is not measurable.
inline constexpr std::size_t kSoMinParticles = 20;

struct Overdensity {
  // NaN when not measurable: fewer than the minimum count of particles inside Δ ρ_crit, or the mean
  // density still above Δ ρ_crit at the largest radius searched.
  double radius = std::numeric_limits<double>::quiet_NaN();
  double mass = std::numeric_limits<double>::quiet_NaN();
  std::int64_t n_particles = 0;  // inside the radius (0 when not measurable)
  bool measured() const { return n_particles > 0; }
};
struct SoMasses {
  Overdensity vir, c200;
};

// Particles sorted by distance from a centre (`radius` ascending, with their `mass`): the outermost
// particle k where the mean density of particles 0..k, M_k / (4π r_k³/3), is at least `target`. The
// radius is where M_k alone has that mean density, cbrt(3 M_k / (4π target)), which lies between r_k and
// the next particle; the mass is M_k. Not measurable (NaN) when there is no such particle or fewer than
// `min_particles` are inside. Pure.
Overdensity outermost_overdensity(std::span<const double> radius, std::span<const double> mass, double target,
                                  std::size_t min_particles);
// The same over a radial order whole or spread over ranks (the same result on every rank). Collective.
Overdensity outermost_overdensity(const RadialRun& run, double target, std::size_t min_particles);

// For each centre: all the particles of the index within a search radius R, which starts at
// `start_radius` and doubles (at most to `max_radius`) until the mean density inside R is below the
// smaller of Δ_vir and 200 times ρ_crit; then outermost_overdensity for Δ_vir and 200. The outermost
// radius is looked for inside R only, so `start_radius` should enclose the object (a gap in the density
// inside it would otherwise stop the growth). A Δ whose mean density is still above it at `max_radius`
// is not measurable. Periodic separations through the nearest image (the index's box; max_radius at
// most half the box). Not collective.
std::vector<SoMasses> spherical_overdensity(const ParticleIndex& particles,
                                            std::span<const std::array<double, 3>> centres,
                                            std::span<const double> start_radius, double max_radius,
                                            double critical_density, double delta_vir,
                                            std::size_t min_particles = kSoMinParticles);

}  // namespace phew::grid
