// The surface-density kernel (Rangel et al. Sec. IV A, Fig. 3): for each pixel a ray along the line
// of sight, marched from tetrahedron to tetrahedron. Each crossed tetrahedron adds the exact integral
// of the linear interpolant over the ray's stretch inside it, i.e. its value at the midpoint times the
// length (Eq. 12), which equals the mean of its values on the entry and exit faces times the length.
//
// Rays are parallel to an axis, so the Plücker test of the ray against an edge (Eq. 8) is the 2-D
// orientation of the ray's position against the edge's projection, and the barycentric weights on a
// face (Eq. 9) are those orientations. They are exact on the lattice; ties (a ray through a vertex
// or along an edge or face) are broken by simulation of simplicity (predicates.hpp) instead of the
// paper's random Perturb: deterministic, never a hang, never a NaN, and the limit of the integral of
// a continuous interpolant, so no bias.
#pragma once

#include <phew/dtfe/field_points.hpp>
#include <phew/dtfe/hull.hpp>
#include <phew/dtfe/triangulation.hpp>

#include <cstdint>
#include <vector>

namespace phew::dtfe {

struct MarchStats {
  std::uint64_t rays = 0;    // rays marched (pixels x samples)
  std::uint64_t missed = 0;  // rays outside the hull's projection (NaN)
  std::uint64_t steps = 0;   // tetrahedra crossed

  MarchStats& operator+=(const MarchStats& o) {
    rays += o.rays, missed += o.missed, steps += o.steps;
    return *this;
  }
};

// The snapshot-length coordinate x (relative to the field's centre) on the lattice of quantum `scale`.
std::int64_t to_lattice(double x, double scale);

// A vertex as the march reads it: projected lattice position, height on the line of sight (lattice
// units) and density; 32 bytes, so one never straddles two cache lines.
struct alignas(32) MarchVertex {
  std::int32_t u, v;
  double w, rho;
};

class RayMarcher {
 public:
  // Keeps references to `points`, `tri` and `hull` (which must outlive it); copies the densities.
  RayMarcher(const FieldPoints& points, const Triangulation& tri, const std::vector<HullFacet>& hull,
             const std::vector<double>& rho);

  // The integral of the density along the ray at lattice position (px, py), in snapshot mass per
  // length^2; NaN when the ray misses the hull (no tetrahedron says what lies there). `hint` is a hull
  // facet to start the search from (updated); `steps` counts tetrahedra.
  // Throws Error(internal) if the triangulation is inconsistent (never on valid input).
  double ray(std::int64_t px, std::int64_t py, std::int32_t& hint, std::uint64_t& steps) const;

  // The same for n rays at (pu[k], pv[k]) into out[k].
  void rays(const std::int64_t* pu, const std::int64_t* pv, std::size_t n, double* out, std::int32_t& hint,
            std::uint64_t& steps) const;

  // The map of `g` (resolution^2 pixels, [i][j] with i along u, j along v): each pixel is the ray
  // through its centre, or with samples > 1 the mean of that many rays at pseudo-random positions in
  // the pixel (a fixed hash of the pixel and sample index: the same on any rank and thread).
  // A pixel with a ray outside the hull is NaN, unless `empty_outside` (the columns there hold no
  // matter, FieldPoints::empty_outside): then such rays count as 0.
  // Rows are shared dynamically among `threads`; the result does not depend on their number.
  std::vector<double> map(const FieldGeometry& g, int samples, int threads, MarchStats* stats = nullptr,
                          bool empty_outside = false) const;

 private:
  core::RawVector<MarchVertex> vertex_;
  const core::RawVector<Tet>& tets_;
  const core::RawVector<TetNeighbours>& neighbours_;
  const std::vector<HullFacet>& hull_;
  const std::int32_t* q_;  // the points' lattice coordinates, for the hull walk
  double scale_;
};

// Where sample s of pixel (i, j) lies inside the pixel, in [0, 1)^2 (samples > 1).
void sample_offset(int i, int j, int s, double& du, double& dv);

// The lattice position of a ray along one map axis: `offset` (0.5 for the centre, sample_offset's for
// a sample) into pixel i. RayMarcher::map and project_map place their rays with it.
inline std::int64_t ray_position(const FieldGeometry& g, double scale, int i, double offset) {
  return to_lattice((static_cast<double>(i) + offset) * g.pixel_size() - 0.5 * g.size, scale);
}

}  // namespace phew::dtfe
