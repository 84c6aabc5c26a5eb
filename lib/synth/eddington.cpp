#include <phew/synth/eddington.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numbers>

namespace phew::synth {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr int kSpeedBins = 32;

// Radii covering [lo, hi]: log-spaced (`per_decade` per decade) with the truncation radius on a node
// (the second derivative of the density jumps there, so no interval may straddle it), and beyond it no
// further apart than a quarter of the decay length, so that the steep taper is resolved too.
std::vector<double> radius_grid(const Profile& p, int per_decade) {
  const ProfileSpec& s = p.spec();
  const double lo = p.inner_radius(), hi = p.outer_radius();
  const double anchor = s.truncation_radius > 0 ? s.truncation_radius : s.scale_radius;
  const double ratio = std::pow(10.0, 1.0 / per_decade);
  const auto below = static_cast<long>(std::ceil(per_decade * std::log10(anchor / lo)));
  std::vector<double> r;
  for (long k = below; k > 0; --k) r.push_back(anchor * std::pow(10.0, -static_cast<double>(k) / per_decade));
  r.push_back(anchor);
  const double max_step = s.truncation_radius > 0 ? 0.25 * s.decay_radius : INFINITY;
  while (r.back() < hi) r.push_back(std::min(r.back() * ratio, r.back() + max_step));
  return r;
}

// d^2 rho / d psi^2 at r, from rho' = rho s, rho'' = rho (s^2 + s'), psi' = -G M / r^2,
// psi'' = 2 G M / r^3 - 4 pi G rho.
double d2rho_dpsi2(const Profile& p, double r, bool outside) {
  const double G = p.spec().G, rho = p.density(r), m = p.enclosed_mass(r);
  double s = 0, ds = 0;
  p.log_slopes(r, outside, s, ds);
  const double d1 = rho * s, d2 = rho * (s * s + ds);
  const double p1 = -G * m / (r * r), p2 = 2.0 * G * m / (r * r * r) - 4.0 * kPi * G * rho;
  return (d2 * p1 - d1 * p2) / (p1 * p1 * p1);
}

double drho_dpsi(const Profile& p, double r) {
  double s = 0, ds = 0;
  p.log_slopes(r, true, s, ds);
  return p.density(r) * s / (-p.spec().G * p.enclosed_mass(r) / (r * r));
}

}  // namespace

DistributionFunction::DistributionFunction(const Profile& profile, int per_decade) : profile_(&profile) {
  r_ = radius_grid(profile, per_decade);
  const std::size_t n = r_.size();
  psi_.resize(n);
  std::vector<double> g_in(n), g_out(n);  // d2rho/dpsi2 on the inner and outer side of each node
  for (std::size_t k = 0; k < n; ++k) {
    psi_[k] = -profile.potential(r_[k]);
    g_in[k] = d2rho_dpsi2(profile, r_[k], false);
    g_out[k] = d2rho_dpsi2(profile, r_[k], true);
  }
  const double boundary = drho_dpsi(profile, r_[n - 1]);  // int_0^psi_last d2rho + (drho/dpsi)_0

  f_.assign(n, 0.0);
  const double norm = 1.0 / (std::sqrt(8.0) * kPi * kPi);
  for (std::size_t j = 0; j + 1 < n; ++j) {
    const double E = psi_[j];
    double sum = 0;
    for (std::size_t k = j; k + 1 < n; ++k) {
      // g linear in psi on [psi_{k+1}, psi_k], integrated against 1/sqrt(E - psi) in closed form,
      // written with D = psi_k - psi_{k+1} so that far intervals do not lose digits to cancellation.
      const double D = psi_[k] - psi_[k + 1];
      const double sa = std::sqrt(E - psi_[k]), sb = std::sqrt(E - psi_[k + 1]);
      const double gk = g_out[k], gk1 = g_in[k + 1];
      sum += gk * 2.0 * D / (sa + sb) - (gk - gk1) * (2.0 * D / 3.0) * (2.0 * sa + sb) / ((sa + sb) * (sa + sb));
    }
    f_[j] = norm * (sum + boundary / std::sqrt(E));
  }
  // The last node: continue the power law of the two before it.
  if (n >= 3 && f_[n - 2] > 0 && f_[n - 3] > 0)
    tail_power_ = std::max(0.0, std::log(f_[n - 2] / f_[n - 3]) / std::log(psi_[n - 2] / psi_[n - 3]));
  if (n >= 2) f_[n - 1] = f_[n - 2] * std::pow(psi_[n - 1] / psi_[n - 2], tail_power_);
  for (double& v : f_)
    if (!(v >= 0)) {
      v = 0;
      ++negative_;
    }
  env_ = f_;
  for (std::size_t k = n - 1; k-- > 0;) env_[k] = std::max(env_[k], env_[k + 1]);
}

std::size_t DistributionFunction::node_above(double E) const {
  const auto it = std::lower_bound(psi_.begin(), psi_.end(), E, std::greater<>());  // first psi <= E
  return static_cast<std::size_t>(it - psi_.begin()) - 1;
}

// Log-linear in E where f is positive at both nodes, else linear; the same rule for f and its envelope,
// so that the envelope stays above f between nodes.
double DistributionFunction::interpolate(const std::vector<double>& table, double E) const {
  const std::size_t n = psi_.size();
  if (E <= 0) return 0;
  if (E >= psi_[0]) return table[0];
  if (E <= psi_[n - 1]) return table[n - 1] * std::pow(E / psi_[n - 1], tail_power_);
  const std::size_t k = node_above(E);
  const double t = (psi_[k] - E) / (psi_[k] - psi_[k + 1]);
  if (f_[k] > 0 && f_[k + 1] > 0) return std::exp((1.0 - t) * std::log(table[k]) + t * std::log(table[k + 1]));
  return (1.0 - t) * table[k] + t * table[k + 1];
}

double DistributionFunction::f(double E) const { return interpolate(f_, E); }

double DistributionFunction::sample_speed(double r, Rng& rng) const {
  const double psi = -profile_->potential(r);
  if (!(psi > 0)) return 0;
  const double vmax = std::sqrt(2.0 * psi), dv = vmax / kSpeedBins;
  // On bin [v_i, v_i+1]: f(psi - v^2/2) v^2 <= env(psi - v_i^2/2) v_{i+1}^2, env being monotone in E.
  std::array<double, kSpeedBins> bound{}, cumulative{};
  double total = 0;
  for (int i = 0; i < kSpeedBins; ++i) {
    const double v0 = i * dv, v1 = (i + 1) * dv;
    bound[static_cast<std::size_t>(i)] = interpolate(env_, psi - 0.5 * v0 * v0) * v1 * v1;
    total += bound[static_cast<std::size_t>(i)];
    cumulative[static_cast<std::size_t>(i)] = total;
  }
  if (!(total > 0)) return 0;
  for (;;) {
    const double pick = rng.uniform() * total;
    const auto i = static_cast<std::size_t>(std::min<std::ptrdiff_t>(
        std::upper_bound(cumulative.begin(), cumulative.end(), pick) - cumulative.begin(), kSpeedBins - 1));
    const double v = (static_cast<double>(i) + rng.uniform()) * dv;
    if (rng.uniform() * bound[i] < f(psi - 0.5 * v * v) * v * v) return v;
  }
}

double DistributionFunction::density_from_f(double r) const {
  const double psi = -profile_->potential(r);
  if (!(psi > 0)) return 0;
  // Simpson in v on a fine grid; f(psi - v^2/2) v^2 is smooth apart from the integrable end points.
  const int n = 20000;
  const double vmax = std::sqrt(2.0 * psi), h = vmax / n;
  double sum = 0;
  for (int i = 0; i <= n; ++i) {
    const double v = i * h;
    const double w = (i == 0 || i == n) ? 1.0 : (i % 2 ? 4.0 : 2.0);
    sum += w * f(psi - 0.5 * v * v) * v * v;
  }
  return 4.0 * kPi * sum * h / 3.0;
}

JeansDispersion::JeansDispersion(const Profile& profile, int per_decade) : profile_(&profile) {
  const std::vector<double> r = radius_grid(profile, per_decade);
  const double G = profile.spec().G;
  // 8-point Gauss-Legendre per interval of rho G M / r^2, summed from the outside in.
  static constexpr std::array<double, 4> x = {0.1834346424956498, 0.5255324099163290, 0.7966664774136267,
                                              0.9602898564975363};
  static constexpr std::array<double, 4> w = {0.3626837833783620, 0.3137066458778873, 0.2223810344533745,
                                              0.1012285362903763};
  std::vector<double> p(r.size(), 0.0);
  for (std::size_t k = r.size() - 1; k-- > 0;) {
    const double h = 0.5 * (r[k + 1] - r[k]), c = 0.5 * (r[k + 1] + r[k]);
    double sum = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      for (double sign : {-1.0, 1.0}) {
        const double s = c + sign * h * x[i];
        sum += w[i] * profile.density(s) * G * profile.enclosed_mass(s) / (s * s);
      }
    p[k] = p[k + 1] + sum * h;
  }
  // Keep the nodes where the pressure is positive (the last one is 0 by construction).
  for (std::size_t k = 0; k < r.size(); ++k)
    if (p[k] > 0) {
      lnr_.push_back(std::log(r[k]));
      lnp_.push_back(std::log(p[k]));
    }
}

double JeansDispersion::sigma2(double r) const {
  const double lr = std::log(r);
  double lp;
  if (lr <= lnr_.front())
    lp = lnp_.front();
  else if (lr >= lnr_.back())
    lp = lnp_.back();
  else {
    const std::size_t k = static_cast<std::size_t>(std::upper_bound(lnr_.begin(), lnr_.end(), lr) - lnr_.begin()) - 1;
    const double t = (lr - lnr_[k]) / (lnr_[k + 1] - lnr_[k]);
    lp = (1.0 - t) * lnp_[k] + t * lnp_[k + 1];
  }
  return std::exp(lp) / profile_->density(r);
}

}  // namespace phew::synth
