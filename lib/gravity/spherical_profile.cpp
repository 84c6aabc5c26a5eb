#include <phew/gravity/spherical_profile.hpp>

#include <phew/core/error.hpp>
#include <phew/core/radix_sort.hpp>
#include <phew/core/raw_vector.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

namespace phew::gravity {

SphericalProfile::SphericalProfile(std::span<const double> position, std::span<const double> mass,
                                   std::span<const std::size_t> members, const std::array<double, 3>& centre, double G,
                                   double softening)
    : G_(G), eps2_(softening * softening) {
  const std::size_t n = members.size();
  if (n > std::numeric_limits<std::uint32_t>::max())
    throw core::Error::internal("spherical profile: {} members in one object", n);
  std::vector<double> r(n);
  // By radius, then index (the order of (radius, index) pairs): a radix sort of 32-bit keys, the radius
  // rounded to float with the member's place beside it (rounding keeps the order: r < r' gives
  // float(r) <= float(r')), then each run of equal floats by the exact radius and index. Half the passes
  // over half the bytes of a sort by the double's 64 bits.
  std::vector<std::uint64_t> keyed(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = members[k];
    const double dx = position[3 * i] - centre[0], dy = position[3 * i + 1] - centre[1],
                 dz = position[3 * i + 2] - centre[2];
    r[k] = std::sqrt(dx * dx + dy * dy + dz * dz);
    keyed[k] = std::uint64_t{std::bit_cast<std::uint32_t>(static_cast<float>(r[k]))} << 32 | k;
  }
  if (n < core::kRadixSortMin) {
    std::sort(keyed.begin(), keyed.end());  // whole words (equal floats by place: their runs are sorted below)
  } else {
    std::vector<std::uint64_t> scratch;  // let go before the profile's own arrays are made
    core::radix_sort(
        keyed, scratch, [](std::uint64_t v) { return v >> 32; }, 32);
  }
  const auto place = [](std::uint64_t v) { return static_cast<std::size_t>(static_cast<std::uint32_t>(v)); };
  for (std::size_t b = 0, e = 0; b < n; b = e) {
    for (e = b + 1; e < n && keyed[e] >> 32 == keyed[b] >> 32;) ++e;
    if (e - b > 1)
      std::sort(keyed.begin() + static_cast<std::ptrdiff_t>(b), keyed.begin() + static_cast<std::ptrdiff_t>(e),
                [&](std::uint64_t p, std::uint64_t q) {
                  const std::size_t kp = place(p), kq = place(q);
                  return r[kp] != r[kq] ? r[kp] < r[kq] : members[kp] < members[kq];
                });
  }
  // The keys become the members' indices in place, the radii go once permuted: a big object's profile
  // holds 40 bytes a member at most while it is made, not 56.
  radius_.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t at = place(keyed[k]);
    radius_[k] = r[at];
    keyed[k] = members[at];
  }
  core::release(r);
  static_assert(std::is_same_v<std::uint64_t, std::size_t>, "the keys' room holds the indices");
  index_ = std::move(keyed);
  mass_.resize(n);
  for (std::size_t k = 0; k < n; ++k) mass_[k] = mass[index_[k]];
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
