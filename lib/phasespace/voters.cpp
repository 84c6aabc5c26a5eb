#include <phew/phasespace/voters.hpp>

#include <algorithm>
#include <numeric>

namespace phew::phasespace {

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
