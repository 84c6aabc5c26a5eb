// The exact pixel average (beyond the paper): each pixel gets the integral of the DTFE interpolant
// over its whole column divided by its area, not the value of one ray. Each tetrahedron's projection
// is cut into the pieces where the same lower and upper face bound it; on a piece the column integral
// (thickness x mean density) is a quadratic in (u, v), integrated exactly over the piece clipped to
// every pixel it covers. The map's total is then the triangulated mass inside the map, to rounding:
// no one-ray-per-pixel noise.
#pragma once

#include <phew/dtfe/field_points.hpp>
#include <phew/dtfe/triangulation.hpp>

#include <vector>

namespace phew::dtfe {

// The map of `g` ([i][j], i along u), in snapshot mass / length^2. Each pixel's contributions are
// added in tetrahedron order whatever the threads, so the map does not depend on their number.
// Not collective.
std::vector<double> exact_map(const FieldPoints& points, const Triangulation& tri, const std::vector<double>& rho,
                              const FieldGeometry& g, int threads);

}  // namespace phew::dtfe
