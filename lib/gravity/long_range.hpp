// The long-range part of the gravitational potential of a periodic box, on a mesh (particle-mesh),
// as in Gadget's TreePM: the potential of a point mass is split into
//   -G m erf(r / 2 r_s) / r   (long range: smooth, solved here in Fourier space)
//   -G m erfc(r / 2 r_s) / r  (short range: summed over neighbours, see forest.hpp).
// The mass is assigned to the mesh by CIC (grid/deposit, the same bits on any rank count), Poisson's
// equation is solved with the Green's function -4 pi G / k^2 exp(-k^2 r_s^2), divided by the CIC window
// twice (assignment and interpolation), the acceleration is the potential's 4-point finite difference,
// and both are interpolated to any point by CIC. The k = 0 mode is zero: the potential is that of the
// density contrast, as in every cosmological code.
#pragma once

#include <phew/core/raw_vector.hpp>
#include <phew/gravity/fft3d.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace phew::gravity {

class LongRangeField {
 public:
  // `mesh`: a periodic box and its mesh shape; `position`/`mass`: this rank's particles, wrapped into the
  // box, in snapshot order with rank r's before rank r+1's (as read_share gives them). The field can be
  // sampled up to `reach` (length units) beyond this rank's slab of the mesh. The FFT and the Green's
  // function run on up to `threads` threads (the same bits on any number). Collective.
  LongRangeField(const grid::GridGeometry& mesh, double G, double r_split, std::span<const double> position,
                 std::span<const double> mass, double reach, const mpi::Comm& comm, int threads = 1);

  const mpi::SlabDecomposition& slabs() const { return fft_.x_slabs(); }
  // Potential and acceleration (-grad) of the long-range part at x: any periodic image of a point within
  // `reach` of this rank's slab (the same bits for every image and rank). Not collective.
  void sample(const double x[3], double& phi, double acc[3]) const;

 private:
  grid::GridGeometry mesh_;
  std::array<double, 3> cell_{};
  SlabFft fft_;
  std::int64_t first_plane_ = 0;  // global (unwrapped) index of the first plane held
  std::int64_t held_planes_ = 0;
  core::RawVector<double> phi_;  // [held_planes][n1][n2]: every value written once, never zero-filled first
};

// long_range_green() of every mode of a mesh, from per-axis tables: its split and window factors are
// products over the axes, so a mode costs a division and four multiplications, not an exp() and three
// sin(). Mode indices as stored by SlabFft (0 .. n-1, the upper half standing for negative k; z only
// up to n2/2). Agrees with long_range_green to rounding (test_gravity).
class GreenTable {
 public:
  GreenTable(const grid::GridGeometry& mesh, double G, double r_split);
  double operator()(std::int64_t i0, std::int64_t i1, std::int64_t i2) const {
    const auto a = static_cast<std::size_t>(i0), b = static_cast<std::size_t>(i1), c = static_cast<std::size_t>(i2);
    const double k2 = k2_[0][a] + k2_[1][b] + k2_[2][c];
    if (k2 == 0) return 0;
    return -4 * M_PI * G_ / k2 * (factor_[0][a] * factor_[1][b] * factor_[2][c]);
  }

 private:
  double G_;
  std::array<std::vector<double>, 3> k2_, factor_;  // per axis: k^2, and exp(-k^2 r_s^2) / W^2 with W = sinc^2
};

// The Green's function factor of mode (m0, m1, m2) (integer wave numbers in [-n/2, n/2]) for a mesh of
// cell sizes h over box L: -4 pi G / k^2 exp(-k^2 r_s^2) / W_cic(k)^2, 0 for k = 0. Exposed for tests.
double long_range_green(const std::array<std::int64_t, 3>& m, const grid::GridGeometry& mesh, double G, double r_split);

}  // namespace phew::gravity
