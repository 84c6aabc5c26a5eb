// Axis ratios of a particle distribution from the iterated reduced inertia tensor (Allgood et al. 2006,
// MNRAS 367, 1781; as ROCKSTAR's calc_shape, but weighted by 1/r_ell^2).
#pragma once

#include <phew/mpi/comm.hpp>

#include <array>
#include <cstddef>
#include <span>

namespace phew::unbind {

// Eigenvalues (descending) and unit eigenvectors (rows, in the same order) of a symmetric 3x3 matrix, by
// cyclic Jacobi rotations.
struct Eigen3 {
  std::array<double, 3> value{};
  std::array<std::array<double, 3>, 3> vector{};
};
Eigen3 symmetric_eigen(const std::array<std::array<double, 3>, 3>& m);

struct Shape {
  double b_to_a, c_to_a;             // NaN when not measurable
  std::array<double, 3> major_axis;  // unit vector
  int iterations = 0;
  bool converged = false;
};

// The shape of the particles `members` (positions [n][3] relative to the centre, masses [n]) inside an
// ellipsoid whose major semi-axis is `radius`: start from the sphere, take
//   I_jk = sum m x_j x_k / r_ell^2 / sum m,  r_ell^2 = x_a^2 + (x_b / q)^2 + (x_c / s)^2
// (coordinates along the current principal axes) over the particles with r_ell <= radius, its
// eigenvalues l_a >= l_b >= l_c give q = b/a = sqrt(l_b / l_a) and s = c/a = sqrt(l_c / l_a); repeat
// with the ellipsoid (radius, q radius, s radius) along the new axes until q and s change by less than
// `tolerance` (relative), at most `max_iterations` times. NaN when fewer than 10 particles are inside.
Shape reduced_inertia_shape(std::span<const double> position, std::span<const double> mass,
                            std::span<const std::size_t> members, double radius, int max_iterations, double tolerance);
// The same for a set spread over the ranks of `comm`, each giving its share (the shares in rank order
// being the set's order): the sums carried from rank to rank, the one-rank bits on every rank. Collective.
Shape reduced_inertia_shape(const mpi::Comm& comm, std::span<const double> position, std::span<const double> mass,
                            std::span<const std::size_t> members, double radius, int max_iterations, double tolerance);

}  // namespace phew::unbind
