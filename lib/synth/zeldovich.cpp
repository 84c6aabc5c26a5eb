#include <phew/synth/zeldovich.hpp>

#include <phew/core/error.hpp>
#include <phew/gravity/fftw_buffer.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/synth/random.hpp>

#include <fftw3.h>

#include <cmath>
#include <complex>
#include <new>
#include <numbers>

namespace phew::synth {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kH0 = 0.1;  // 100 km/s/Mpc in km/s per kpc/h

double hubble_e(double a, double om, double ol) {
  const double ok = 1.0 - om - ol;
  return std::sqrt(om / (a * a * a) + ok / (a * a) + ol);
}

// int_0^a da' / (a' E(a'))^3 by Simpson's rule; the integrand goes to 0 like a'^(3/2) at a' = 0.
double growth_integral(double a, double om, double ol) {
  const int n = 4000;
  const double h = a / n;
  double sum = 0;
  for (int i = 1; i <= n; ++i) {
    const double x = i * h;
    const double y = std::pow(x * hubble_e(x, om, ol), -3.0);
    sum += (i == n ? 1.0 : (i % 2 ? 4.0 : 2.0)) * y;
  }
  return sum * h / 3.0;
}

double top_hat(double x) {
  if (x < 1e-3) return 1.0 - x * x / 10.0;
  return 3.0 * (std::sin(x) - x * std::cos(x)) / (x * x * x);
}

using FftwBuffer = gravity::FftwBuffer<double>;

struct Plan {
  fftw_plan p;
  explicit Plan(fftw_plan plan) : p(plan) {
    if (!p) throw core::Error::internal("FFTW could not make a plan");
  }
  ~Plan() { fftw_destroy_plan(p); }
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
};

long freq(std::size_t i, std::size_t n) {
  return i <= n / 2 ? static_cast<long>(i) : static_cast<long>(i) - static_cast<long>(n);
}

// White noise (unit variance per cell, lattice order) -> its FFT times sqrt(P(k) / V_cell) / N^3, so
// that an inverse FFT gives a field with power P(k). In place in `b` (padded r2c layout).
void noise_spectrum(const ZeldovichSpec& spec, Rng& rng, FftwBuffer& b) {
  const std::size_t n = spec.n_side, nz = n / 2 + 1, pad = 2 * nz;
  const int ni = static_cast<int>(n);
  const Plan forward(fftw_plan_dft_r2c_3d(ni, ni, ni, b.data, b.as_complex(), FFTW_ESTIMATE));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t k = 0; k < n; ++k) b.data[grid::linear_index(i, j, k, n, pad)] = rng.normal();
  fftw_execute(forward.p);
  const PowerSpectrum power(spec);
  const double cell = spec.box / static_cast<double>(n), vcell = cell * cell * cell;
  const double n3 = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  const double dk = 2.0 * kPi / spec.box;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t k = 0; k < nz; ++k) {
        const double kx = dk * static_cast<double>(freq(i, n)), ky = dk * static_cast<double>(freq(j, n)),
                     kz = dk * static_cast<double>(k);
        const double kk = std::sqrt(kx * kx + ky * ky + kz * kz);
        const double amp = kk > 0 ? std::sqrt(power(kk) / vcell) / n3 : 0.0;
        fftw_complex& z = b.as_complex()[grid::linear_index(i, j, k, n, nz)];
        z[0] *= amp;
        z[1] *= amp;
      }
}

}  // namespace

double growth_factor(double a, double om, double ol) {
  return hubble_e(a, om, ol) * growth_integral(a, om, ol) / growth_integral(1.0, om, ol);
}

double growth_rate(double a, double om, double ol) {
  const double ok = 1.0 - om - ol, e = hubble_e(a, om, ol);
  const double dlne = (-3.0 * om / (a * a * a) - 2.0 * ok / (a * a)) / (2.0 * e * e);
  return dlne + 1.0 / (a * a * e * e * e * growth_integral(a, om, ol));
}

PowerSpectrum::PowerSpectrum(const ZeldovichSpec& spec) : spec_(spec) {
  const double a = 1.0 / (1.0 + spec.redshift);
  const double target = spec.sigma8 * growth_factor(a, spec.omega_m, spec.omega_lambda);
  amplitude_ = target * target / shape_sigma2(8000.0);
}

double PowerSpectrum::shape(double k) const {
  if (spec_.spectrum == Spectrum::power_law) return std::pow(k, spec_.index);
  // BBKS (Bardeen et al. 1986) transfer function with shape parameter Gamma = Omega_m h; k in h/Mpc.
  const double q = k * 1000.0 / (spec_.omega_m * spec_.hubble);
  const double t =
      std::log1p(2.34 * q) / (2.34 * q) *
      std::pow(1.0 + 3.89 * q + std::pow(16.1 * q, 2) + std::pow(5.46 * q, 3) + std::pow(6.71 * q, 4), -0.25);
  return std::pow(k, spec_.index) * t * t;
}

double PowerSpectrum::operator()(double k) const { return amplitude_ * shape(k); }

// (1/2 pi^2) int k^3 P(k) W^2(kR) dln k: exact window up to kR = 100, its average 4.5/(kR)^4 beyond
// (the oscillations are not resolvable there), plus the analytic remainder of a power law.
double PowerSpectrum::shape_sigma2(double radius) const {
  auto integrate = [&](double lo, double hi, int n, bool averaged) {
    const double h = (std::log(hi) - std::log(lo)) / n;
    double sum = 0;
    for (int i = 0; i <= n; ++i) {
      const double x = lo * std::exp(i * h), k = x / radius;
      const double w2 = averaged ? 4.5 / (x * x * x * x) : top_hat(x) * top_hat(x);
      sum += (i == 0 || i == n ? 1.0 : (i % 2 ? 4.0 : 2.0)) * k * k * k * shape(k) * w2;
    }
    return sum * h / 3.0;
  };
  double s = integrate(1e-6, 100.0, 40000, false) + integrate(100.0, 1e8, 4000, true);
  if (spec_.spectrum == Spectrum::power_law)
    s += 4.5 * std::pow(1e8, spec_.index - 1.0) / (1.0 - spec_.index) * std::pow(radius, -(3.0 + spec_.index));
  return s / (2.0 * kPi * kPi);
}

double PowerSpectrum::sigma(double radius) const { return std::sqrt(amplitude_ * shape_sigma2(radius)); }

std::vector<double> linear_density(const ZeldovichSpec& spec, Rng& rng) {
  const std::size_t n = spec.n_side, pad = 2 * (n / 2 + 1);
  const int ni = static_cast<int>(n);
  FftwBuffer b(n * n * pad);
  const Plan backward(fftw_plan_dft_c2r_3d(ni, ni, ni, b.as_complex(), b.data, FFTW_ESTIMATE));
  noise_spectrum(spec, rng, b);
  fftw_execute(backward.p);
  std::vector<double> out(n * n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t k = 0; k < n; ++k)
        out[grid::linear_index(i, j, k, n, n)] = b.data[grid::linear_index(i, j, k, n, pad)];
  return out;
}

double zeldovich_lattice(const ZeldovichSpec& spec, Rng& rng, std::vector<double>& position,
                         std::vector<double>& velocity) {
  const std::size_t n = spec.n_side, nz = n / 2 + 1, pad = 2 * nz;
  const int ni = static_cast<int>(n);
  const std::size_t first = position.size() / 3, count = n * n * n;
  position.resize(3 * (first + count));
  velocity.resize(3 * (first + count));

  FftwBuffer delta(n * n * pad), work(n * n * pad);
  noise_spectrum(spec, rng, delta);
  const Plan backward(fftw_plan_dft_c2r_3d(ni, ni, ni, work.as_complex(), work.data, FFTW_ESTIMATE));

  const double a = 1.0 / (1.0 + spec.redshift);
  // Peculiar velocity a H f psi, stored as Gadget's u = v / sqrt(a).
  const double vfac = std::sqrt(a) * kH0 * hubble_e(a, spec.omega_m, spec.omega_lambda) *
                      growth_rate(a, spec.omega_m, spec.omega_lambda);
  const double dk = 2.0 * kPi / spec.box, cell = spec.box / static_cast<double>(n), box = spec.box;
  double sum2 = 0;
  for (std::size_t d = 0; d < 3; ++d) {
    // psi_k = i k / k^2 delta_k (so that delta = -div psi); the Nyquist plane of axis d is zeroed,
    // where i k_d would break the Hermitian symmetry the inverse real transform assumes.
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t k = 0; k < nz; ++k) {
          const long f[3] = {freq(i, n), freq(j, n), static_cast<long>(k)};
          const std::size_t idx = grid::linear_index(i, j, k, n, nz);
          const double kx = dk * static_cast<double>(f[0]), ky = dk * static_cast<double>(f[1]),
                       kz = dk * static_cast<double>(f[2]);
          const double k2 = kx * kx + ky * ky + kz * kz;
          const bool nyquist = n % 2 == 0 && std::labs(f[d]) == static_cast<long>(n / 2);
          const double g = (k2 > 0 && !nyquist) ? dk * static_cast<double>(f[d]) / k2 : 0.0;
          const fftw_complex& z = delta.as_complex()[idx];
          work.as_complex()[idx][0] = -g * z[1];
          work.as_complex()[idx][1] = g * z[0];
        }
    fftw_execute(backward.p);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t k = 0; k < n; ++k) {
          const double psi = work.data[grid::linear_index(i, j, k, n, pad)];
          const std::size_t lattice[3] = {i, j, k};
          const std::size_t p = first + grid::linear_index(i, j, k, n, n);
          position[3 * p + d] = grid::wrap_position((static_cast<double>(lattice[d]) + 0.5) * cell + psi, box);
          velocity[3 * p + d] = vfac * psi;
          sum2 += psi * psi;
        }
  }
  return std::sqrt(sum2 / static_cast<double>(count));
}

}  // namespace phew::synth
