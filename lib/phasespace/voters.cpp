#include <phew/phasespace/voters.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace phew::phasespace {

void spherical_potential(std::vector<Candidate>& c, std::span<const double> mass, double G, double softening) {
  const std::size_t n = c.size();
  std::vector<std::size_t> order(n);  // by radius, then ID: the same for any order the candidates come in
  std::vector<double> r(n);
  for (std::size_t i = 0; i < n; ++i) {
    order[i] = i;
    r[i] = std::sqrt(c[i].dx[0] * c[i].dx[0] + c[i].dx[1] * c[i].dx[1] + c[i].dx[2] * c[i].dx[2]);
  }
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return r[a] != r[b] ? r[a] < r[b] : c[a].id < c[b].id; });
  const double eps2 = softening * softening;
  std::vector<double> s(n), outside(n + 1, 0.0);  // outside[k]: sum over order[k..] of m / s
  for (std::size_t k = n; k-- > 0;) {
    const std::size_t i = order[k];
    s[i] = std::sqrt(r[i] * r[i] + eps2);
    outside[k] = outside[k + 1] + (s[i] > 0 ? mass[i] / s[i] : 0.0);
  }
  double inside = 0;  // M(<r) of the candidates before
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[k];
    const double pull = s[i] > 0 ? inside / s[i] : 0.0;  // a candidate at the very centre, unsoftened: none
    c[i].potential = -G * (pull + outside[k + 1]);
    for (std::size_t d = 0; d < 3; ++d) c[i].acceleration[d] = s[i] > 0 ? -G * pull * c[i].dx[d] / (s[i] * s[i]) : 0.0;
    inside += mass[i];
  }
}

VoterChoice choose_voters(const std::vector<Candidate>& c, const std::array<double, 3>& vb, std::size_t n, bool boost) {
  VoterChoice out;
  if (c.empty()) return out;
  // a0 = the mean acceleration of the candidates, summed in the order given (callers sort by ID).
  if (boost) {
    for (const Candidate& k : c)
      for (std::size_t d = 0; d < 3; ++d) out.a0[d] += k.acceleration[d];
    for (double& a : out.a0) a /= static_cast<double>(c.size());
  }
  std::vector<double> e(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) {
    double kin = 0, boost_term = 0;
    for (std::size_t d = 0; d < 3; ++d) {
      const double dv = c[i].v[d] - vb[d];
      kin += dv * dv;
      boost_term += out.a0[d] * c[i].dx[d];
    }
    e[i] = 0.5 * kin + c[i].potential + boost_term;
  }
  std::vector<std::size_t> idx(c.size());
  std::iota(idx.begin(), idx.end(), 0);
  const std::size_t k = std::min(n, c.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&](std::size_t a, std::size_t b) { return e[a] != e[b] ? e[a] < e[b] : c[a].id < c[b].id; });
  for (std::size_t i = 0; i < k; ++i) {
    out.id.push_back(c[idx[i]].id);
    out.energy.push_back(e[idx[i]]);
  }
  return out;
}

}  // namespace phew::phasespace
