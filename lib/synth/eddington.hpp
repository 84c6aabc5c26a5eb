// The isotropic equilibrium of a spherical profile: its distribution function f(E) by Eddington's
// inversion, computed numerically on a radius grid, velocity sampling from it, and the Jeans velocity
// dispersion (used by the tests and by dynamical friction).
//
//   f(E) = 1/(sqrt(8) pi^2) [ int_0^E d^2rho/dpsi^2 dpsi / sqrt(E - psi) + (drho/dpsi)_{psi=0} / sqrt(E) ]
//
// with psi = -Phi and E = psi - v^2/2 (Binney & Tremaine 2008, eq. 4.46b). d^2rho/dpsi^2 is evaluated
// analytically at the grid radii (from rho, its log slopes, M and Phi) and taken linear in psi between
// them, so that each interval's integral against 1/sqrt(E - psi) is done in closed form.
#pragma once

#include <phew/synth/profiles.hpp>
#include <phew/synth/random.hpp>

#include <vector>

namespace phew::synth {

class DistributionFunction {
 public:
  // Tabulates f at E = psi(r_k) for radii r_k log-spaced (`per_decade` per decade, and at most r_d/4 apart in the taper) over the profile's
  // range, with the truncation radius on a node. Not collective; ~0.1 s for 128 per decade.
  explicit DistributionFunction(const Profile& profile, int per_decade = 128);

  const Profile& profile() const { return *profile_; }
  double f(double E) const;  // E = relative energy psi - v^2/2 > 0 (bound); 0 for E <= 0
  // Grid nodes where the inversion came out negative (set to 0): 0 for a model with a positive f.
  int negative_nodes() const { return negative_; }

  // A speed at radius r drawn from p(v) ~ f(psi(r) - v^2/2) v^2 on [0, sqrt(2 psi(r))]: rejection
  // under a 32-bin envelope built from the monotone upper envelope of f, so the draw is exact
  // for the tabulated f.
  double sample_speed(double r, Rng& rng) const;
  // 4 pi int f v^2 dv at radius r: equals density(r) when the inversion is right (tests).
  double density_from_f(double r) const;

 private:
  std::size_t node_above(double E) const;  // k with psi[k] >= E > psi[k+1]
  double interpolate(const std::vector<double>& table, double E) const;

  const Profile* profile_;
  std::vector<double> r_, psi_, f_, env_;  // env_: max of f over E' <= E (monotone in E)
  double tail_power_ = 0;                  // f ~ E^p below the last node
  int negative_ = 0;
};

// Isotropic Jeans dispersion sigma_r^2(r) = (1/rho) int_r^inf rho G M / r'^2 dr', tabulated on a log grid.
class JeansDispersion {
 public:
  explicit JeansDispersion(const Profile& profile, int per_decade = 64);
  double sigma2(double r) const;  // one-dimensional velocity dispersion squared at r

 private:
  const Profile* profile_;
  std::vector<double> lnr_, lnp_;  // ln r and ln(rho sigma^2)
};

}  // namespace phew::synth
