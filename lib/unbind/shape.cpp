#include <phew/unbind/shape.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace phew::unbind {

Eigen3 symmetric_eigen(const std::array<std::array<double, 3>, 3>& m) {
  std::array<std::array<double, 3>, 3> a = m;
  std::array<std::array<double, 3>, 3> v{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}};  // columns: eigenvectors
  for (int sweep = 0; sweep < 50; ++sweep) {
    const double off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
    const double scale = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2];
    if (off <= 1e-30 * scale || off == 0) break;
    for (std::size_t p = 0; p < 2; ++p)
      for (std::size_t q = p + 1; q < 3; ++q) {
        if (a[p][q] == 0) continue;
        // The rotation in the (p, q) plane that zeroes a[p][q] (Numerical Recipes' stable form).
        const double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (std::size_t k = 0; k < 3; ++k) {  // a <- a J
          const double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (std::size_t k = 0; k < 3; ++k) {  // a <- J^T a
          const double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
        for (std::size_t k = 0; k < 3; ++k) {
          const double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq;
          v[k][q] = s * vkp + c * vkq;
        }
      }
  }
  std::array<std::size_t, 3> order{0, 1, 2};
  std::sort(order.begin(), order.end(),
            [&](std::size_t i, std::size_t j) { return a[i][i] > a[j][j] || (a[i][i] == a[j][j] && i < j); });
  Eigen3 e;
  for (std::size_t r = 0; r < 3; ++r) {
    e.value[r] = a[order[r]][order[r]];
    for (std::size_t k = 0; k < 3; ++k) e.vector[r][k] = v[k][order[r]];
  }
  return e;
}

Shape reduced_inertia_shape(std::span<const double> position, std::span<const double> mass,
                            std::span<const std::size_t> members, double radius, int max_iterations, double tolerance) {
  return reduced_inertia_shape(mpi::Comm::self(), position, mass, members, radius, max_iterations, tolerance);
}

Shape reduced_inertia_shape(const mpi::Comm& comm, std::span<const double> position, std::span<const double> mass,
                            std::span<const std::size_t> members, double radius, int max_iterations, double tolerance) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Shape out{nan, nan, {nan, nan, nan}, 0, false};
  if (!(radius > 0)) return out;
  std::array<std::array<double, 3>, 3> axes{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}};
  double q = 1, s = 1;
  const double r2max = radius * radius;
  for (int it = 0; it < std::max(max_iterations, 1); ++it) {
    // The sums in member order, carried over the ranks' members in turn: [0] the mass, then t's upper
    // triangle by rows.
    std::uint64_t inside = 0;
    const std::array<double, 7> sums = comm.relay(std::array<double, 7>{}, [&](std::array<double, 7> acc) {
      for (const std::size_t i : members) {
        const double* x = &position[3 * i];
        double along[3];
        for (std::size_t r = 0; r < 3; ++r) along[r] = axes[r][0] * x[0] + axes[r][1] * x[1] + axes[r][2] * x[2];
        const double r_ell2 = along[0] * along[0] + along[1] * along[1] / (q * q) + along[2] * along[2] / (s * s);
        if (r_ell2 > r2max || r_ell2 <= 0) continue;
        ++inside;
        const double w = mass[i] / r_ell2;
        acc[0] += mass[i];
        for (std::size_t j = 0, at = 1; j < 3; ++j)
          for (std::size_t k = j; k < 3; ++k) acc[at++] += w * x[j] * x[k];
      }
      return acc;
    });
    inside = comm.sum(inside);
    const double total = sums[0];
    std::array<std::array<double, 3>, 3> t{};
    for (std::size_t j = 0, at = 1; j < 3; ++j)
      for (std::size_t k = j; k < 3; ++k) t[j][k] = sums[at++];
    if (inside < 10 || !(total > 0)) return Shape{nan, nan, {nan, nan, nan}, it, false};
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t k = j; k < 3; ++k) t[k][j] = t[j][k] /= total;
    const Eigen3 e = symmetric_eigen(t);
    if (!(e.value[2] > 0)) return Shape{nan, nan, {nan, nan, nan}, it, false};
    const double q_new = std::sqrt(e.value[1] / e.value[0]), s_new = std::sqrt(e.value[2] / e.value[0]);
    const bool done = std::abs(q_new - q) <= tolerance * q_new && std::abs(s_new - s) <= tolerance * s_new;
    q = q_new;
    s = s_new;
    axes = e.vector;
    out = Shape{q, s, e.vector[0], it + 1, done};
    if (done) break;
  }
  // A sign convention for the major axis, so that it does not depend on the rotations taken.
  auto& a = out.major_axis;
  const std::size_t big = std::abs(a[0]) >= std::abs(a[1]) && std::abs(a[0]) >= std::abs(a[2]) ? 0
                          : std::abs(a[1]) >= std::abs(a[2])                                   ? 1
                                                                                               : 2;
  if (a[big] < 0)
    for (double& c : a) c = -c;
  return out;
}

}  // namespace phew::unbind
