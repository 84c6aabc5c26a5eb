#include <phew/unbind/nfw.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace phew::unbind {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Where mu(x)/x peaks (the radius of Vmax in scale radii): 0.216 c / mu(c) is increasing beyond it.
constexpr double kXmax = 2.16258;

double klypin_curve(double c) { return 0.216 * c / nfw_mu(c); }

}  // namespace

double nfw_mu(double x) { return std::log1p(x) - x / (1 + x); }

double klypin_concentration(double ratio) {
  const double target = ratio * ratio;
  if (!std::isfinite(target) || target < klypin_curve(kXmax)) return kNaN;
  double lo = std::log(kXmax), hi = std::log(1e6);
  if (target > klypin_curve(std::exp(hi))) return kNaN;
  for (int it = 0; it < 200 && hi - lo > 1e-13; ++it) {
    const double mid = 0.5 * (lo + hi);
    (klypin_curve(std::exp(mid)) < target ? lo : hi) = mid;
  }
  return std::exp(0.5 * (lo + hi));
}

double fit_nfw_scale_radius(std::span<const double> radius, std::span<const double> mass, double outer_radius,
                            const NfwFitParams& params) {
  return fit_nfw_scale_radius(grid::RadialRun::whole(radius, mass), outer_radius, params);
}

double fit_nfw_scale_radius(const grid::RadialRun& run, double outer_radius, const NfwFitParams& params) {
  const std::size_t n = run.total;
  if (!(outer_radius > 0) || params.bins < 3 || n == 0) return kNaN;
  const std::size_t k_inner = std::min(params.inner_particles, n) - (params.inner_particles > 0 ? 1 : 0);
  const double r_in = std::max(run.at(run.radius, k_inner), params.min_radius);
  if (!(r_in > 0) || !(r_in < outer_radius)) return kNaN;

  // Shells [edge_b, edge_b+1): their mass (carried over the runs in radius order) and particle count.
  const auto bins = static_cast<std::size_t>(params.bins);
  std::vector<double> edge(bins + 1);
  const double step = std::log(outer_radius / r_in) / static_cast<double>(bins);
  for (std::size_t b = 0; b <= bins; ++b) edge[b] = r_in * std::exp(step * static_cast<double>(b));
  edge[bins] = outer_radius;
  std::vector<double> shell_mass(bins, 0.0);
  std::vector<std::uint64_t> count(bins, 0);
  run.comm.relay_each(std::span<double>(shell_mass), [&](std::span<double> sums) {
    std::size_t b = 0;  // a particle's shell depends on its radius alone: each run finds it from the first
    for (std::size_t k = 0; k < run.radius.size(); ++k) {
      const double r = run.radius[k];
      if (r < r_in) continue;
      if (r >= outer_radius) break;
      while (b + 1 < bins && r >= edge[b + 1]) ++b;
      sums[b] += run.mass[k];
      ++count[b];
    }
  });
  run.comm.sum_each(std::span<std::uint64_t>(count));
  std::vector<double> lo, hi, ln_m, weight;
  double weights = 0;
  for (std::size_t i = 0; i < bins; ++i)
    if (count[i] >= std::max<std::uint64_t>(params.min_per_bin, 1) && shell_mass[i] > 0) {
      lo.push_back(edge[i]);
      hi.push_back(edge[i + 1]);
      ln_m.push_back(std::log(shell_mass[i]));
      weight.push_back(static_cast<double>(count[i]));  // 1 / var(ln M_i) for Poisson counts
      weights += weight.back();
    }
  if (ln_m.size() < 3) return kNaN;

  // Residual sum of squares at ln r_s = s, the normalisation ln A taken at its optimum (the mean).
  std::vector<double> resid(ln_m.size());
  auto cost = [&](double s) {
    const double rs = std::exp(s);
    double mean = 0;
    for (std::size_t i = 0; i < ln_m.size(); ++i) {
      resid[i] = ln_m[i] - std::log(nfw_mu(hi[i] / rs) - nfw_mu(lo[i] / rs));
      mean += weight[i] * resid[i];
    }
    mean /= weights;
    double ss = 0;
    for (std::size_t i = 0; i < ln_m.size(); ++i) ss += weight[i] * (resid[i] - mean) * (resid[i] - mean);
    return ss;
  };
  constexpr int kGrid = 160;
  const double s_lo = std::log(outer_radius / 100), s_hi = std::log(outer_radius);
  const double ds = (s_hi - s_lo) / kGrid;
  int best = 0;
  double best_cost = std::numeric_limits<double>::infinity();
  for (int g = 0; g <= kGrid; ++g) {
    const double c = cost(s_lo + ds * g);
    if (c < best_cost) {
      best_cost = c;
      best = g;
    }
  }
  if (best == 0 || best == kGrid) return kNaN;
  // Golden sections inside the two grid steps around the best point.
  const double golden = 0.5 * (std::sqrt(5.0) - 1);
  double a = s_lo + ds * (best - 1), d = s_lo + ds * (best + 1);
  double x1 = d - golden * (d - a), x2 = a + golden * (d - a);
  double f1 = cost(x1), f2 = cost(x2);
  for (int it = 0; it < 100 && d - a > 1e-10; ++it) {
    if (f1 <= f2) {
      d = x2;
      x2 = x1;
      f2 = f1;
      x1 = d - golden * (d - a);
      f1 = cost(x1);
    } else {
      a = x1;
      x1 = x2;
      f1 = f2;
      x2 = a + golden * (d - a);
      f2 = cost(x2);
    }
  }
  return std::exp(0.5 * (a + d));
}

}  // namespace phew::unbind
