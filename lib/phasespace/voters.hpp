// Voters of a peak (Geda & Teyssier 2025, Sec. 4.1-4.4): the candidates most bound in the boosted
// potential. With accelerations a_i = -grad Phi(x_i) and a0 their mean over the candidates (Eq. 4),
// Phi_boost(x) = Phi(x) + a0 . (x - x0), x0 the peak position (Eqs. 2-3, sign made explicit in
// ../shared/papers/README.md): adding a uniform external field g to a halo adds -g.(x - x0) to Phi and
// g to every a_i, hence g to a0, and the two cancel.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace phew::phasespace {

struct Candidate {
  std::uint64_t id;
  std::array<double, 3> dx;  // position relative to the peak (minimum image), physical units
  std::array<double, 3> v;   // velocity, physical units
  double potential;          // Phi(x), physical units
  std::array<double, 3> acceleration;
};

struct VoterChoice {
  std::array<double, 3> a0{0, 0, 0};
  std::vector<std::uint64_t> id;  // most bound first
  std::vector<double> energy;     // E = |v - v_bulk|^2 / 2 + Phi_boost, per unit mass
};

// The candidates' own spherical potential about the peak, as RAMSES' unbinding computes a clump's from
// its cumulative mass profile (ACACIA picks its tracers with it; Ivković & Teyssier 2022):
// Phi_i = -G [M(<r_i) / s_i + sum over r_j > r_i of m_j / s_j], s = sqrt(r^2 + eps^2), and the
// acceleration of the mass inside, -G M(<r_i) dx_i / s_i^3. M(<r_i) is the mass of the candidates before
// i in (radius, ID) order. `mass` [candidates], `G` and `softening` (eps) in the candidates' physical
// units. Fills every candidate's potential and acceleration. Not collective.
void spherical_potential(std::vector<Candidate>& candidates, std::span<const double> mass, double G, double softening);

// The n most bound candidates (fewer when there are fewer candidates). Ties in energy are broken by the
// lower particle ID. `boost` false uses Phi itself (to show what the boost is for). Not collective.
VoterChoice choose_voters(const std::vector<Candidate>& candidates, const std::array<double, 3>& bulk_velocity,
                          std::size_t n, bool boost = true);

}  // namespace phew::phasespace
