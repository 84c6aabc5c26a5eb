// The lower convex hull seen along the line of sight: the hull faces whose outward normal points
// against the rays (n . w < 0, Rangel et al. Eq. 14). Projected, they triangulate the projection of
// the hull; a ray enters the triangulation through the one containing its position. Walking this 2-D
// triangulation from the previous ray's facet finds the next ray's first tetrahedron in a few steps.
#pragma once

#include <phew/dtfe/field_points.hpp>
#include <phew/dtfe/triangulation.hpp>

#include <cstdint>
#include <vector>

namespace phew::dtfe {

struct HullFacet {
  std::int32_t vertex[3];     // counter-clockwise in the (u, v) projection
  std::int32_t tet;           // the tetrahedron above it
  std::int32_t neighbour[3];  // the facet across the edge opposite vertex[k]; -1 on the silhouette
};

// The lower hull facets of the triangulation (vertical and upper hull faces are left out). Not
// collective, no threads.
std::vector<HullFacet> lower_hull(const FieldPoints& points, const Triangulation& tri);

// The facet whose projection contains the (perturbed, see predicates.hpp) point p, walking from
// `start`; -1 when p is outside the hull's projection. `start` is updated to the last facet visited,
// a good start for a nearby point. Exact; the answer does not depend on `start`.
std::int32_t locate_in_hull(const std::vector<HullFacet>& hull, const std::int32_t* q, std::int64_t px, std::int64_t py,
                            std::int32_t& start);

}  // namespace phew::dtfe
