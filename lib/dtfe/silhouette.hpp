// The silhouette of a field's triangulation: its convex hull seen along the line of sight, i.e. the
// convex hull of the points projected on the map's plane. A ray outside it crosses no tetrahedron, so
// its column has no DTFE value; the silhouette tells which pixels the triangulation covers, and the
// default margin is grown until it covers the map with room to spare (docs/tools/dtfe-surface.md).
//
// Everything is on the field's lattice (field_points.hpp) with exact integer orientations, so
// "covered" is decided the same way on every rank for the same canonical points.
#pragma once

#include <phew/dtfe/field_points.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace phew::dtfe {

class Silhouette {
 public:
  explicit Silhouette(const FieldPoints& points);

  // The hull's vertices, counter-clockwise, lattice (u, v); fewer than 3 when the points project
  // onto a line or a point (then it contains nothing).
  const std::vector<std::array<std::int64_t, 2>>& vertices() const { return vertex_; }

  // Whether (u, v) lies inside: strictly (not on the boundary), or in the closed polygon.
  bool contains(std::int64_t u, std::int64_t v, bool strict) const;

  // The lattice v-range [lo, hi] of the closed polygon on the line u = const; false when it misses
  // the polygon.
  bool column(std::int64_t u, std::int64_t& lo, std::int64_t& hi) const;

 private:
  std::vector<std::array<std::int64_t, 2>> vertex_;
};

// The default margin's test for the points selected with window g (g.margin included): the map
// widened by g.margin / 2 on every side lies strictly inside the silhouette, so the hull's boundary,
// where columns thin out and the hull vertices' DTFE densities are biased, stays at least half the
// margin away from every pixel.
bool margin_suffices(const FieldPoints& points, const FieldGeometry& g);

// The margins the default rule tries, m_k = start * 2^k.
double margin_at_level(double start, int level);

// Exact mode: sets to NaN the pixels of `sigma` ([i][j], the map of g) not wholly inside the
// silhouette of `points` (their average would count the uncovered part as empty). Returns how many.
std::uint64_t blank_uncovered_pixels(const FieldPoints& points, const FieldGeometry& g, std::vector<double>& sigma);

}  // namespace phew::dtfe
