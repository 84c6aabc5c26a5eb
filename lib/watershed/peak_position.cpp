#include <phew/watershed/peak_position.hpp>

#include <algorithm>
#include <cmath>

namespace phew::watershed {

std::array<double, 3> quadratic_peak_offset(const std::array<double, 27>& f) {
  // On the 3x3x3 stencil the basis 1, x_i, x_i x_j (i<j), x_i^2 - 2/3 is orthogonal, so each coefficient
  // of the least-squares fit is a projection: sum(f b) / sum(b^2), with sum(x^2) = 18,
  // sum((x y)^2) = 12 and sum((x^2 - 2/3)^2) = 6.
  double g[3] = {0, 0, 0}, h[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  for (int a = -1; a <= 1; ++a)
    for (int b = -1; b <= 1; ++b)
      for (int c = -1; c <= 1; ++c) {
        const double v = f[static_cast<std::size_t>((a + 1) * 9 + (b + 1) * 3 + (c + 1))];
        const double x[3] = {double(a), double(b), double(c)};
        for (int i = 0; i < 3; ++i) {
          g[i] += v * x[i] / 18.0;
          h[i][i] += v * (x[i] * x[i] - 2.0 / 3.0) / 6.0 * 2.0;  // d2f/dx2 = 2 * coefficient of x^2
          for (int j = i + 1; j < 3; ++j) h[i][j] += v * x[i] * x[j] / 12.0;
        }
      }
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < i; ++j) h[i][j] = h[j][i];

  // Solve H d = -g by Cramer's rule; a maximum needs H negative definite (leading minors -, +, -).
  const double m1 = h[0][0], m2 = h[0][0] * h[1][1] - h[0][1] * h[1][0];
  const double det = h[0][0] * (h[1][1] * h[2][2] - h[1][2] * h[2][1]) -
                     h[0][1] * (h[1][0] * h[2][2] - h[1][2] * h[2][0]) +
                     h[0][2] * (h[1][0] * h[2][1] - h[1][1] * h[2][0]);
  if (!(m1 < 0 && m2 > 0 && det < 0)) return {0, 0, 0};
  std::array<double, 3> d{};
  for (int col = 0; col < 3; ++col) {
    double m[3][3];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) m[i][j] = j == col ? -g[i] : h[i][j];
    const double dc = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                      m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                      m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    d[static_cast<std::size_t>(col)] = std::clamp(dc / det, -0.5, 0.5);
  }
  return d;
}

}  // namespace phew::watershed
