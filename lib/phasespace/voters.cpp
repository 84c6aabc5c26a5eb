#include <phew/phasespace/voters.hpp>

#include <phew/gravity/spherical_profile.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace phew::phasespace {

void spherical_potential(std::vector<Candidate>& c, std::span<const double> mass, double G, double softening) {
  // The candidates as a profile about the peak (the origin of their offsets), numbered in ID order so
  // that the profile's ties in radius (by index) fall by ID whatever order they come in.
  const std::size_t n = c.size();
  std::vector<std::size_t> by_id(n);
  std::iota(by_id.begin(), by_id.end(), std::size_t{0});
  std::sort(by_id.begin(), by_id.end(), [&](std::size_t a, std::size_t b) { return c[a].id < c[b].id; });
  std::vector<double> x(3 * n), m(n);
  for (std::size_t k = 0; k < n; ++k) {
    m[k] = mass[by_id[k]];
    for (std::size_t d = 0; d < 3; ++d) x[3 * k + d] = c[by_id[k]].dx[d];
  }
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  const gravity::SphericalProfile profile(x, m, all, {0, 0, 0}, G, softening);
  for (std::size_t k = 0; k < n; ++k) {
    Candidate& ck = c[by_id[profile.index()[k]]];
    ck.potential = profile.at_member(k);
    // The pull of the mass inside, M(<r) / s, as at_member's first term.
    const double r = profile.radius()[k], s = std::sqrt(r * r + softening * softening);
    const double pull = s > 0 ? profile.mass_before(k) / s : 0.0;
    for (std::size_t d = 0; d < 3; ++d) ck.acceleration[d] = s > 0 ? -G * pull * ck.dx[d] / (s * s) : 0.0;
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
