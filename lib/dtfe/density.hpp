// DTFE densities at the vertices (Rangel et al. Eq. 2): rho_i = (d + 1) m_i / sum of the volumes of
// the tetrahedra that have vertex i, d = 3. The sum over each vertex's tetrahedra integrates the
// linear interpolant to exactly the total mass over the hull, which is what makes the maps conserve
// mass.
#pragma once

#include <phew/dtfe/field_points.hpp>
#include <phew/dtfe/triangulation.hpp>

#include <vector>

namespace phew::dtfe {

// Densities in snapshot mass / length^3, one per point (0 for points left out of the triangulation,
// whose mass went to the vertex that absorbed them). Volumes are summed as exact integers on the
// lattice, so the result does not depend on the order of the tetrahedra (backend, threads).
// Throws Error(input) when a vertex has no volume (a degenerate, flat set). Not collective.
std::vector<double> vertex_densities(const FieldPoints& points, const Triangulation& tri, int threads = 1);

}  // namespace phew::dtfe
