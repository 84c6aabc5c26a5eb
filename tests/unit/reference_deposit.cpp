#include "reference_deposit.hpp"

#include <cmath>

namespace phew::test {
namespace {

// Kernel value W(s) for a particle at distance s (in cells) from a cell centre.
double kernel_value(const std::string& kernel, double s) {
  s = std::abs(s);
  if (kernel == "ngp") return s < 0.5 ? 1.0 : (s == 0.5 ? 0.5 : 0.0);
  if (kernel == "cic") return s < 1.0 ? 1.0 - s : 0.0;
  if (s < 0.5) return 0.75 - s * s;  // tsc
  if (s < 1.5) return 0.5 * (1.5 - s) * (1.5 - s);
  return 0.0;
}

}  // namespace

std::vector<double> reference_deposit(const std::array<long, 3>& n, const std::array<double, 3>& box,
                                      const std::vector<double>& pos, const std::vector<double>& mass,
                                      const std::string& kernel) {
  std::vector<double> grid(static_cast<std::size_t>(n[0] * n[1] * n[2]), 0.0);
  for (std::size_t p = 0; p < mass.size(); ++p) {
    double u[3];
    long c[3];
    for (int d = 0; d < 3; ++d) {
      u[d] = pos[3 * p + static_cast<std::size_t>(d)] / box[static_cast<std::size_t>(d)] *
             static_cast<double>(n[static_cast<std::size_t>(d)]);
      c[d] = static_cast<long>(std::floor(u[d]));
    }
    // Visit the 5x5x5 cells around the particle's cell and weight each by the kernel at its centre.
    for (long a = -2; a <= 2; ++a)
      for (long b = -2; b <= 2; ++b)
        for (long e = -2; e <= 2; ++e) {
          const long idx[3] = {c[0] + a, c[1] + b, c[2] + e};
          double w = 1;
          for (int d = 0; d < 3; ++d) w *= kernel_value(kernel, static_cast<double>(idx[d]) + 0.5 - u[d]);
          if (kernel == "ngp") {
            // NGP with the half-open cell convention: only the containing cell.
            w = (a == 0 && b == 0 && e == 0) ? 1.0 : 0.0;
          }
          if (w == 0) continue;
          long wrapped[3];
          for (int d = 0; d < 3; ++d) {
            const long nd = n[static_cast<std::size_t>(d)];
            wrapped[d] = ((idx[d] % nd) + nd) % nd;
          }
          grid[static_cast<std::size_t>((wrapped[0] * n[1] + wrapped[1]) * n[2] + wrapped[2])] += mass[p] * w;
        }
  }
  return grid;
}

}  // namespace phew::test
