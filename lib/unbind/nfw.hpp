// NFW concentrations of a halo, two ways: from the ratio Vmax / V_Delta (Klypin, Trujillo-Gomez &
// Primack 2011, ApJ 740, 102) and from a least-squares fit of the density profile in radial bins.
#pragma once

#include <phew/grid/radial_run.hpp>

#include <cstddef>
#include <span>

namespace phew::unbind {

// mu(x) = ln(1 + x) - x / (1 + x): an NFW halo's M(<r) = 4 pi rho_s r_s^3 mu(r / r_s).
double nfw_mu(double x);

// The concentration c = R_Delta / r_s of an NFW halo whose Vmax / V_Delta (V_Delta = sqrt(G M_Delta /
// R_Delta)) is `ratio`: the root c > 2.1626 of 0.216 c / mu(c) = ratio^2 (Klypin et al. 2011, with
// their rounded 0.216 = max mu(x)/x). NaN when ratio^2 is below the curve's minimum (Vmax not above
// V_Delta: no NFW halo has it) or not finite.
double klypin_concentration(double ratio);

struct NfwFitParams {
  int bins = 20;                     // log-spaced in radius from the inner radius to R_Delta
  std::size_t inner_particles = 50;  // the inner radius is that of this many particles (and >= `min_radius`)
  std::size_t min_per_bin = 10;      // bins holding fewer particles are left out
  double min_radius = 0;             // e.g. the softening length
};

// The NFW scale radius that fits the particles best inside `outer_radius`: `radius` ascending with
// their `mass`. In each used bin i the measured shell mass M_i is compared with the model's
// A [mu(r_hi / r_s) - mu(r_lo / r_s)] (the shell average of the density, so no bin-centre bias); the
// fit minimises sum_i (ln M_i - ln model_i)^2 (least squares in ln rho: the shell volume cancels), the
// normalisation A analytically for each r_s, r_s over R_Delta / 100 .. R_Delta by a grid of 161
// points in ln r_s refined by golden sections. NaN when fewer than 3 bins are usable or the best r_s
// is at an end of the range.
double fit_nfw_scale_radius(std::span<const double> radius, std::span<const double> mass, double outer_radius,
                            const NfwFitParams& params);
// The same over a radial order whole or spread over ranks (the same result on every rank). Collective.
double fit_nfw_scale_radius(const grid::RadialRun& run, double outer_radius, const NfwFitParams& params);

}  // namespace phew::unbind
