// The spherical potential of a set of particles about a centre, from their cumulative mass profile, as
// RAMSES' unbinding computes a clump's: unbind's profile potential and voters --potential profile.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <vector>

namespace phew::gravity {

// The members sorted by distance from a centre (ties by index), with the sums the spherical potential
// needs. Plummer softening eps enters through s(r) = sqrt(r^2 + eps^2): a shell of mass dm at radius r'
// contributes -G dm / s(max(r, r')) at radius r (exact for eps = 0, Newton's shell theorem; a smooth
// approximation of a softened shell otherwise, finite at the centre).
class SphericalProfile {
 public:
  SphericalProfile(std::span<const double> position, std::span<const double> mass, std::span<const std::size_t> members,
                   const std::array<double, 3>& centre, double G, double softening);

  std::size_t size() const { return radius_.size(); }
  // Sorted by radius: the distance, mass and particle index of the k-th member.
  const std::vector<double>& radius() const { return radius_; }
  const std::vector<double>& mass() const { return mass_; }
  const std::vector<std::size_t>& index() const { return index_; }
  // Mass of members 0..k-1 (k = 0..size()): M(<r_k) without member k itself.
  double mass_before(std::size_t k) const { return before_[k]; }
  double total_mass() const { return before_.back(); }

  // Phi at the k-th member due to all the others: -G [M(<r_k) / s(r_k) + sum_{j > k} m_j / s(r_j)].
  double at_member(std::size_t k) const;
  // Phi at distance r from the centre due to every member (members at exactly r count as inside).
  double at_radius(double r) const;
  // Phi of every member into phi[particle index] (other entries untouched).
  void potentials(std::vector<double>& phi) const;
  // U = 1/2 sum_i m_i Phi_i = -G sum_k m_k M(<r_k) / s(r_k): each pair once, at the outer radius.
  double potential_energy() const;

 private:
  double G_, eps2_;
  std::vector<double> radius_, mass_;
  std::vector<std::size_t> index_;
  std::vector<double> before_;   // [size + 1] prefix sums of mass
  std::vector<double> outside_;  // [size + 1] suffix sums of m_j / s(r_j), j >= k
};

}  // namespace phew::gravity
