// The ray map made tetrahedron by tetrahedron (projected tetrahedra) in place of ray by ray.
//
// A ray parallel to the line of sight crosses a tetrahedron between two of its faces, and adds the
// integral of the linear interpolant over that stretch: the length times the mean of the values at its
// two ends (Rangel et al. Eq. 12). RayMarcher finds the stretches by walking each ray from tetrahedron
// to tetrahedron, a chain of dependent loads (≈ 100 cycles a step on a map of 10^6 particles). Here each
// tetrahedron in turn finds the rays that cross it: the pixels in its projected bounding box, each
// tested against its faces' projections with the same exact integer orientations and the same
// simulation of simplicity (predicates.hpp) as the marcher, so a ray through a vertex or along an edge
// is counted in exactly the tetrahedra the marcher would cross. Faces are found as those whose
// projection contains the (perturbed) ray: none or two, and the stretch is between their heights.
//
// Each ray's terms are those of the marcher, summed in tetrahedron order rather than along the ray, so
// a pixel differs from RayMarcher::map in its last bits only (tests: the marcher is the reference).
// Rows of pixels are cut into bands; a band's tetrahedra are listed in their order, each band summed on
// one thread: the same bits for any number of threads. Rays outside the hull (crossing no tetrahedron)
// are NaN, or 0 with `empty_outside`, as in RayMarcher::map.
#pragma once

#include <phew/dtfe/field_points.hpp>
#include <phew/dtfe/march.hpp>
#include <phew/dtfe/triangulation.hpp>

#include <vector>

namespace phew::dtfe {

// RayMarcher::map's map (pixel [i][j], i along u, j along v; `samples` rays per pixel at the same
// positions), from the points, their triangulation and the densities at the points.
// Throws Error(internal) if a tetrahedron's faces disagree about a ray (never on a valid triangulation).
std::vector<double> project_map(const FieldPoints& points, const Triangulation& tri, const std::vector<double>& rho,
                                const FieldGeometry& g, int samples, int threads, MarchStats* stats = nullptr,
                                bool empty_outside = false);

}  // namespace phew::dtfe
