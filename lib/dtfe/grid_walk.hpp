// The naive alternative the paper replaces (Sec. III C 1, Eq. 4): sample the DTFE interpolant on a
// 3-D grid of resolution^2 x nz points, locating each sample by walking through the triangulation
// from the previous one (Eq. 6), and sum along the line of sight. It converges to the marched
// integral as nz grows; the tests use it as a slow reference and bench/ as the named alternative.
#pragma once

#include <phew/dtfe/field_points.hpp>
#include <phew/dtfe/triangulation.hpp>

#include <cstdint>
#include <vector>

namespace phew::dtfe {

struct WalkStats {
  std::uint64_t samples = 0;  // points located
  std::uint64_t steps = 0;    // tetrahedra visited by the walks
};

class TetWalker {
 public:
  // Keeps references to `points` and `tri` (which must outlive it); copies the densities.
  TetWalker(const FieldPoints& points, const Triangulation& tri, const std::vector<double>& rho);

  // The interpolated density at the lattice point p (0 outside the hull), walking from tetrahedron
  // `hint` (updated to the tetrahedron found, or the last one visited).
  double density(const std::int64_t p[3], std::int32_t& hint, std::uint64_t& steps) const;

  // The map of `g` from nz samples per pixel along the line of sight (midpoints of nz equal slices
  // of the depth), pixel centres as in RayMarcher::map. Same result for any thread count.
  std::vector<double> map(const FieldGeometry& g, int nz, int threads, WalkStats* stats = nullptr) const;

 private:
  const FieldPoints& points_;
  const core::RawVector<Tet>& tets_;
  const core::RawVector<TetNeighbours>& neighbours_;
  std::vector<double> rho_;
};

}  // namespace phew::dtfe
