#include <phew/gravity/spherical_profile.hpp>

#include <phew/core/radix_sort.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>

namespace phew::gravity {

SphericalProfile::SphericalProfile(std::span<const double> position, std::span<const double> mass,
                                   std::span<const std::size_t> members, const std::array<double, 3>& centre, double G,
                                   double softening)
    : G_(G), eps2_(softening * softening) {
  std::vector<std::pair<double, std::size_t>> order(members.size());
  for (std::size_t k = 0; k < members.size(); ++k) {
    const std::size_t i = members[k];
    const double dx = position[3 * i] - centre[0], dy = position[3 * i + 1] - centre[1],
                 dz = position[3 * i + 2] - centre[2];
    order[k] = {std::sqrt(dx * dx + dy * dy + dz * dz), i};
  }
  // By radius, then index (as the pairs compare): a stable radix sort by the radius's bits (a
  // non-negative double's bits order as its value), then each run of equal radii by index.
  {
    std::vector<std::pair<double, std::size_t>> scratch;  // let go before the profile's own arrays are made
    core::radix_sort(order, scratch,
                     [](const std::pair<double, std::size_t>& p) { return std::bit_cast<std::uint64_t>(p.first); });
  }
  const std::size_t n = order.size();
  for (std::size_t b = 0, e = 0; b < n; b = e) {
    for (e = b + 1; e < n && order[e].first == order[b].first;) ++e;
    if (e - b > 1)
      std::sort(order.begin() + static_cast<std::ptrdiff_t>(b), order.begin() + static_cast<std::ptrdiff_t>(e));
  }
  radius_.resize(n);
  mass_.resize(n);
  index_.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    radius_[k] = order[k].first;
    index_[k] = order[k].second;
    mass_[k] = mass[order[k].second];
  }
  before_.assign(n + 1, 0.0);
  for (std::size_t k = 0; k < n; ++k) before_[k + 1] = before_[k] + mass_[k];
  outside_.assign(n + 1, 0.0);
  for (std::size_t k = n; k-- > 0;) {
    const double s = std::sqrt(radius_[k] * radius_[k] + eps2_);
    outside_[k] = outside_[k + 1] + (s > 0 ? mass_[k] / s : 0.0);
  }
}

double SphericalProfile::at_member(std::size_t k) const {
  const double s = std::sqrt(radius_[k] * radius_[k] + eps2_);
  const double inner = s > 0 ? before_[k] / s : 0.0;  // members at the very centre, unsoftened: no pull
  return -G_ * (inner + outside_[k + 1]);
}

double SphericalProfile::at_radius(double r) const {
  const auto k = static_cast<std::size_t>(std::upper_bound(radius_.begin(), radius_.end(), r) - radius_.begin());
  const double s = std::sqrt(r * r + eps2_);
  const double inner = s > 0 ? before_[k] / s : 0.0;
  return -G_ * (inner + outside_[k]);
}

void SphericalProfile::potentials(std::vector<double>& phi) const {
  for (std::size_t k = 0; k < radius_.size(); ++k) phi[index_[k]] = at_member(k);
}

double SphericalProfile::potential_energy() const {
  double u = 0;
  for (std::size_t k = 0; k < radius_.size(); ++k) {
    const double s = std::sqrt(radius_[k] * radius_[k] + eps2_);
    if (s > 0) u += mass_[k] * before_[k] / s;
  }
  return -G_ * u;
}

}  // namespace phew::gravity
