// A clustered periodic box: a particle lattice displaced by the Zel'dovich approximation from a
// Gaussian random field (power-law or BBKS CDM spectrum, normalised to sigma8 at z = 0 and scaled by the
// linear growth factor). FFTW is used with FFTW_ESTIMATE plans only, whose algorithm choice does not
// depend on timing, so the same inputs give the same bytes run after run.
#pragma once

#include <phew/synth/random.hpp>
#include <phew/synth/scene.hpp>

#include <cstdint>
#include <vector>

namespace phew::synth {

struct ZeldovichSpec {
  std::uint64_t n_side = 0;  // particles per axis
  double box = 0;            // kpc/h, comoving
  double sigma8 = 0.8;
  Spectrum spectrum = Spectrum::cdm;
  double index = 1;
  double omega_m = 0.3, omega_lambda = 0.7, hubble = 0.7;
  double redshift = 0;
};

// Linear growth factor D(a) normalised to D(1) = 1 and growth rate f = dlnD/dlna, for matter +
// Lambda (+ curvature) without radiation (Heath 1977 integral).
double growth_factor(double a, double omega_m, double omega_lambda);
double growth_rate(double a, double omega_m, double omega_lambda);

// The linear power spectrum at the spec's redshift, P(k) in (kpc/h)^3, k in h/kpc.
class PowerSpectrum {
 public:
  explicit PowerSpectrum(const ZeldovichSpec& spec);
  double operator()(double k) const;
  double sigma(double radius) const;  // rms of the linear field in top-hat spheres of this radius (kpc/h)

 private:
  double shape(double k) const;
  double shape_sigma2(double radius) const;
  ZeldovichSpec spec_;
  double amplitude_ = 1;
};

// Bytes of memory the realisation needs per lattice particle besides the outputs (FFT buffers).
inline constexpr double kZeldovichBytesPerParticle = 16.0;

// Positions (comoving kpc/h, wrapped into [0, box)) and Gadget velocities u = v_pec / sqrt(a) (km/s)
// of the n_side^3 lattice particles in lattice order (x slowest), appended to `position`/`velocity`
// ([n][3] interleaved). `rng` supplies the white noise (n_side^3 normal deviates in lattice order).
// Not collective. Returns the rms displacement (kpc/h).
double zeldovich_lattice(const ZeldovichSpec& spec, Rng& rng, std::vector<double>& position,
                         std::vector<double>& velocity);

// The linear density contrast on the n_side^3 grid (lattice order) from the same noise: what the
// displacements are derived from (for tests).
std::vector<double> linear_density(const ZeldovichSpec& spec, Rng& rng);

}  // namespace phew::synth
