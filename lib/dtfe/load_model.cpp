#include <phew/dtfe/load_model.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace phew::dtfe {

double TriangulationModel::predict(double n) const { return n >= 2 ? c * n * std::log2(n) : 0.0; }

double PowerLawModel::predict(double n) const { return n > 0 ? alpha * std::pow(n, beta) : 0.0; }

TriangulationModel fit_triangulation(std::span<const double> n, std::span<const double> seconds) {
  // c = (X^T X)^-1 X^T t with the single regressor x = n log2 n.
  double xx = 0, xt = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (n[i] < 2) continue;
    const double x = n[i] * std::log2(n[i]);
    xx += x * x;
    xt += x * seconds[i];
  }
  return {xx > 0 ? xt / xx : 0.0};
}

PowerLawModel fit_power_law(std::span<const double> n, std::span<const double> seconds, double default_beta) {
  std::vector<double> x, t;
  for (std::size_t i = 0; i < n.size(); ++i)
    if (n[i] > 0 && seconds[i] > 0) x.push_back(n[i]), t.push_back(seconds[i]);
  PowerLawModel m{0, default_beta};
  if (x.empty()) return m;
  const bool distinct = std::any_of(x.begin(), x.end(), [&](double v) { return v != x[0]; });
  if (!distinct) {
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i) s += t[i] / std::pow(x[i], default_beta);
    m.alpha = s / static_cast<double>(x.size());
    return m;
  }
  // Start: log t = log alpha + beta log n by least squares.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double k = static_cast<double>(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double lx = std::log(x[i]), ly = std::log(t[i]);
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
  }
  m.beta = (k * sxy - sx * sy) / (k * sxx - sx * sx);
  m.alpha = std::exp((sy - m.beta * sx) / k);
  auto cost = [&](double a, double b) {
    double c = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double r = t[i] - a * std::pow(x[i], b);
      c += r * r;
    }
    return c;
  };
  // Gauss-Newton on r_i = t_i - alpha n_i^beta; J = -(n^beta, alpha n^beta log n). A step that does
  // not lower the cost is halved (up to 20 times), so the fit never gets worse than the start.
  double current = cost(m.alpha, m.beta);
  for (int iter = 0; iter < 50; ++iter) {
    double a11 = 0, a12 = 0, a22 = 0, g1 = 0, g2 = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double p = std::pow(x[i], m.beta), lx = std::log(x[i]);
      const double j1 = p, j2 = m.alpha * p * lx;
      const double r = t[i] - m.alpha * p;
      a11 += j1 * j1, a12 += j1 * j2, a22 += j2 * j2;
      g1 += j1 * r, g2 += j2 * r;
    }
    const double det = a11 * a22 - a12 * a12;
    if (!(std::abs(det) > 0)) break;
    double da = (a22 * g1 - a12 * g2) / det, db = (a11 * g2 - a12 * g1) / det;
    bool improved = false;
    for (int half = 0; half < 20; ++half) {
      const double a = m.alpha + da, b = m.beta + db;
      const double c = cost(a, b);
      if (a > 0 && std::isfinite(c) && c < current) {
        const double gain = current - c;
        m.alpha = a, m.beta = b, current = c;
        improved = gain > 1e-12 * current;
        break;
      }
      da *= 0.5, db *= 0.5;
    }
    if (!improved) break;
  }
  return m;
}

}  // namespace phew::dtfe
