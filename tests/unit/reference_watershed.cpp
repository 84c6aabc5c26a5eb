#include "reference_watershed.hpp"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace phew::test {
namespace {

// Neighbour cell indices (26-neighbourhood), without the cell itself; may repeat on tiny grids.
std::vector<long> neighbours(long c, const std::array<long, 3>& n, bool periodic) {
  const long i = c / (n[1] * n[2]), j = (c / n[2]) % n[1], k = c % n[2];
  std::vector<long> out;
  for (long a = -1; a <= 1; ++a)
    for (long b = -1; b <= 1; ++b)
      for (long d = -1; d <= 1; ++d) {
        if (a == 0 && b == 0 && d == 0) continue;
        long x = i + a, y = j + b, z = k + d;
        if (periodic) {
          x = (x + n[0]) % n[0];
          y = (y + n[1]) % n[1];
          z = (z + n[2]) % n[2];
        } else if (x < 0 || y < 0 || z < 0 || x >= n[0] || y >= n[1] || z >= n[2]) {
          continue;
        }
        const long m = (x * n[1] + y) * n[2] + z;
        if (m != c) out.push_back(m);
      }
  return out;
}

}  // namespace

ReferenceResult reference_watershed(const std::vector<double>& rho, const std::array<long, 3>& n, bool periodic,
                                    double threshold) {
  const long cells = n[0] * n[1] * n[2];
  auto before = [&](long a, long b) { return rho[a] > rho[b] || (rho[a] == rho[b] && a < b); };
  std::vector<long> order;
  for (long c = 0; c < cells; ++c)
    if (rho[c] > threshold) order.push_back(c);
  std::sort(order.begin(), order.end(), before);

  ReferenceResult r;
  r.label.assign(static_cast<std::size_t>(cells), 0);
  for (long c : order) {
    long best = c;
    for (long m : neighbours(c, n, periodic))
      if (before(m, best)) best = m;
    if (best == c) {
      r.peak_cell.push_back(c);
      r.label[c] = static_cast<std::int64_t>(r.peak_cell.size());
    } else {
      r.label[c] = r.label[best];
    }
  }
  for (long c : order)
    for (long m : neighbours(c, n, periodic)) {
      const auto lc = r.label[c], lm = r.label[m];
      if (lm == 0 || lm == lc) continue;
      const auto key = std::make_pair(std::min(lc, lm), std::max(lc, lm));
      const double s = 0.5 * (rho[c] + rho[m]);
      const std::int64_t ca = lc < lm ? c : m, cb = lc < lm ? m : c;
      auto it = r.saddles.find(key);
      if (it == r.saddles.end() || s > std::get<0>(it->second) ||
          (s == std::get<0>(it->second) &&
           std::make_pair(ca, cb) < std::make_pair(std::get<1>(it->second), std::get<2>(it->second))))
        r.saddles[key] = {s, ca, cb};
    }
  return r;
}

}  // namespace phew::test
