#include <phew/synth/profiles.hpp>

#include <phew/core/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

namespace phew::synth {
namespace {

constexpr double kPi = std::numbers::pi;

// 8-point Gauss-Legendre on [-1, 1]: exact for polynomials of degree 15, so one interval of the
// smooth taper (width <= r_d/4) is integrated to rounding error.
constexpr std::array<double, 4> kGlX = {0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363};
constexpr std::array<double, 4> kGlW = {0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763};

// ln(1+x) - x/(1+x), accurate for small x where the two terms cancel.
double nfw_m(double x) {
  if (x < 1e-4) return x * x * (0.5 - x * (2.0 / 3.0 - 0.75 * x));
  return std::log1p(x) - x / (1.0 + x);
}

bool positive_finite(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

std::string to_string(ProfileModel m) {
  switch (m) {
    case ProfileModel::nfw:
      return "nfw";
    case ProfileModel::plummer:
      return "plummer";
    case ProfileModel::hernquist:
      return "hernquist";
  }
  return "?";
}

double nfw_r200(double m200, double critical_density, double overdensity) {
  return std::cbrt(3.0 * m200 / (4.0 * kPi * overdensity * critical_density));
}

ProfileSpec nfw_from_m200(double m200, double concentration, double critical_density, double overdensity,
                          double truncation, double decay, double G) {
  ProfileSpec s;
  s.model = ProfileModel::nfw;
  const double r200 = nfw_r200(m200, critical_density, overdensity);
  s.scale_radius = r200 / concentration;
  s.mass = m200 / nfw_m(concentration);
  s.truncation_radius = truncation * r200;
  s.decay_radius = decay * s.truncation_radius;
  s.G = G;
  return s;
}

Profile::Profile(const ProfileSpec& spec) : spec_(spec) {
  if (!positive_finite(spec.mass))
    throw core::Error::usage("{} profile: mass must be positive, got {:g}", to_string(spec.model), spec.mass);
  if (!positive_finite(spec.scale_radius))
    throw core::Error::usage("{} profile: scale radius must be positive, got {:g}", to_string(spec.model),
                             spec.scale_radius);
  if (!positive_finite(spec.G)) throw core::Error::usage("profile: G must be positive");
  if (!(spec.truncation_radius >= 0) || !std::isfinite(spec.truncation_radius))
    throw core::Error::usage("{} profile: truncation radius must be >= 0, got {:g}", to_string(spec.model),
                             spec.truncation_radius);
  if (spec.model == ProfileModel::nfw && spec.truncation_radius == 0)
    throw core::Error::usage("nfw profile: needs a truncation radius (its mass diverges)");
  tapered_ = spec.truncation_radius > 0;
  if (tapered_ && !positive_finite(spec.decay_radius))
    throw core::Error::usage("{} profile: decay radius must be positive, got {:g}", to_string(spec.model),
                             spec.decay_radius);
  inner_ = 1e-6 * std::min(spec.scale_radius, tapered_ ? spec.truncation_radius : spec.scale_radius);

  if (!tapered_) {
    total_mass_ = spec.mass;
    outer_ = mass_inner_inverse(spec.mass * (1.0 - 1e-13));
    return;
  }
  const double rt = spec.truncation_radius, rd = spec.decay_radius;
  double s = 0, ds = 0;
  slopes_inner(rt, s, ds);
  rho_t_ = rho_inner(rt);
  eps_ = rt * s + rt / rd;
  mass_t_ = mass_inner(rt);

  // Tail nodes every r_d/4 (or r_t/4) until 4 pi r^3 rho is negligible beyond the peak of r^2 rho.
  const double step = 0.25 * std::min(rd, rt);
  const double peak = std::max(rt, (3.0 + eps_) * rd);
  tail_r_ = {rt};
  tail_m_ = {mass_t_};
  for (int k = 1; k < 10'000'000; ++k) {
    const double a = tail_r_.back(), b = rt + k * step;
    tail_m_.push_back(tail_m_.back() + 4.0 * kPi * tail_integral(a, b, 2));
    tail_r_.push_back(b);
    if (b > peak && 4.0 * kPi * b * b * b * density(b) < 1e-18 * tail_m_.back()) break;
  }
  tail_q_.assign(tail_r_.size(), 0.0);
  for (std::size_t k = tail_r_.size() - 1; k-- > 0;)
    tail_q_[k] = tail_q_[k + 1] + tail_integral(tail_r_[k], tail_r_[k + 1], 1);
  total_mass_ = tail_m_.back();
  outer_ = tail_r_.back();
  // Inside r_t the taper only adds a constant to the untapered potential (shells outside r).
  phi_shift_ = (-spec.G * mass_t_ / rt - 4.0 * kPi * spec.G * tail_q_[0]) - phi_inner(rt);
}

double Profile::rho_inner(double r) const {
  const double a = spec_.scale_radius, x = r / a;
  switch (spec_.model) {
    case ProfileModel::nfw:
      return spec_.mass / (4.0 * kPi * a * a * a) / (x * (1.0 + x) * (1.0 + x));
    case ProfileModel::plummer:
      return 3.0 * spec_.mass / (4.0 * kPi * a * a * a) * std::pow(1.0 + x * x, -2.5);
    case ProfileModel::hernquist:
      return spec_.mass / (2.0 * kPi * a * a * a) / (x * std::pow(1.0 + x, 3));
  }
  return 0;
}

double Profile::mass_inner(double r) const {
  const double a = spec_.scale_radius, x = r / a;
  switch (spec_.model) {
    case ProfileModel::nfw:
      return spec_.mass * nfw_m(x);
    case ProfileModel::plummer:
      return spec_.mass * x * x * x / std::pow(1.0 + x * x, 1.5);
    case ProfileModel::hernquist:
      return spec_.mass * (x / (1.0 + x)) * (x / (1.0 + x));
  }
  return 0;
}

double Profile::phi_inner(double r) const {
  const double a = spec_.scale_radius, x = r / a, GM = spec_.G * spec_.mass;
  switch (spec_.model) {
    case ProfileModel::nfw:
      return x < 1e-8 ? -GM / a * (1.0 - 0.5 * x) : -GM * std::log1p(x) / r;
    case ProfileModel::plummer:
      return -GM / (a * std::sqrt(1.0 + x * x));
    case ProfileModel::hernquist:
      return -GM / (r + a);
  }
  return 0;
}

void Profile::slopes_inner(double r, double& s, double& ds) const {
  const double a = spec_.scale_radius, x = r / a;
  switch (spec_.model) {
    case ProfileModel::nfw:
      s = (-1.0 / x - 2.0 / (1.0 + x)) / a;
      ds = (1.0 / (x * x) + 2.0 / ((1.0 + x) * (1.0 + x))) / (a * a);
      return;
    case ProfileModel::plummer:
      s = -5.0 * x / (1.0 + x * x) / a;
      ds = -5.0 * (1.0 - x * x) / ((1.0 + x * x) * (1.0 + x * x)) / (a * a);
      return;
    case ProfileModel::hernquist:
      s = (-1.0 / x - 3.0 / (1.0 + x)) / a;
      ds = (1.0 / (x * x) + 3.0 / ((1.0 + x) * (1.0 + x))) / (a * a);
      return;
  }
}

double Profile::density(double r) const {
  if (!tapered_ || r <= spec_.truncation_radius) return rho_inner(r);
  const double rt = spec_.truncation_radius;
  return rho_t_ * std::exp(eps_ * std::log(r / rt) - (r - rt) / spec_.decay_radius);
}

void Profile::log_slopes(double r, bool outside, double& s, double& ds) const {
  const double rt = spec_.truncation_radius;
  if (!tapered_ || r < rt || (r == rt && !outside)) return slopes_inner(r, s, ds);
  s = eps_ / r - 1.0 / spec_.decay_radius;
  ds = -eps_ / (r * r);
}

double Profile::tail_integral(double a, double b, int power) const {
  const double h = 0.5 * (b - a), c = 0.5 * (a + b);
  double sum = 0;
  for (std::size_t i = 0; i < kGlX.size(); ++i)
    for (double sign : {-1.0, 1.0}) {
      const double r = c + sign * h * kGlX[i];
      sum += kGlW[i] * density(r) * (power == 2 ? r * r : r);
    }
  return sum * h;
}

double Profile::enclosed_mass(double r) const {
  if (r <= 0) return 0;
  if (!tapered_ || r <= spec_.truncation_radius) return mass_inner(r);
  if (r >= tail_r_.back()) return total_mass_;
  const std::size_t k =
      static_cast<std::size_t>(std::upper_bound(tail_r_.begin(), tail_r_.end(), r) - tail_r_.begin()) - 1;
  return tail_m_[k] + 4.0 * kPi * tail_integral(tail_r_[k], r, 2);
}

double Profile::potential(double r) const {
  r = std::max(r, 0.0);
  if (!tapered_) return phi_inner(r);
  if (r <= spec_.truncation_radius) return phi_inner(r) + phi_shift_;
  if (r >= tail_r_.back()) return -spec_.G * total_mass_ / r;
  const std::size_t k =
      static_cast<std::size_t>(std::upper_bound(tail_r_.begin(), tail_r_.end(), r) - tail_r_.begin()) - 1;
  const double m = tail_m_[k] + 4.0 * kPi * tail_integral(tail_r_[k], r, 2);
  const double q = tail_q_[k] - tail_integral(tail_r_[k], r, 1);
  return -spec_.G * m / r - 4.0 * kPi * spec_.G * q;
}

// Safeguarded Newton in ln r on M(r) = m inside a bracket [lo, hi] with M(lo) <= m <= M(hi).
double Profile::solve_radius(double m, double lo, double hi) const {
  lo = std::max(lo, 1e-14 * hi);
  double r = std::sqrt(lo * hi);
  for (int it = 0; it < 300; ++it) {
    const double f = enclosed_mass(r) - m;
    if (f == 0) return r;
    (f > 0 ? hi : lo) = r;
    const double dlnr = -f / (4.0 * kPi * r * r * r * density(r));
    double next = r * std::exp(dlnr);
    if (!(next > lo && next < hi) || !std::isfinite(next)) next = std::sqrt(lo * hi);
    if (std::abs(next - r) <= 1e-15 * r || hi - lo <= 1e-15 * hi) return next;
    r = next;
  }
  return r;
}

double Profile::mass_inner_inverse(double m) const {
  const double a = spec_.scale_radius, y = m / spec_.mass;
  switch (spec_.model) {
    case ProfileModel::plummer:
      return a / std::sqrt(std::pow(y, -2.0 / 3.0) - 1.0);
    case ProfileModel::hernquist: {
      const double q = std::sqrt(y);
      return a * q / (1.0 - q);
    }
    case ProfileModel::nfw: {
      if (y < 1e-20) return a * std::sqrt(2.0 * y);  // m(x) = x^2/2 to 1e-10 there
      // m(x) grows like ln x: x = e^(y+1) bounds it above.
      return solve_radius(m, 1e-12 * a, a * std::exp(y + 2.0));
    }
  }
  return 0;
}

double Profile::radius_of_mass(double m) const {
  if (m <= 0) return 0;
  if (!tapered_) return mass_inner_inverse(m);
  if (m <= mass_t_) return std::min(mass_inner_inverse(m), spec_.truncation_radius);
  if (m >= total_mass_) return tail_r_.back();
  const std::size_t k =
      static_cast<std::size_t>(std::upper_bound(tail_m_.begin(), tail_m_.end(), m) - tail_m_.begin()) - 1;
  return solve_radius(m, tail_r_[k], tail_r_[std::min(k + 1, tail_r_.size() - 1)]);
}

}  // namespace phew::synth
