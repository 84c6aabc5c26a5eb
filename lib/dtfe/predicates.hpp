// Exact geometric predicates on quantised coordinates.
//
// Every field's particles are put on an integer lattice of at most 2^29 steps from the field's centre
// (field_points.hpp), so orientation tests are exact in integer arithmetic: 2-D orientations of a
// point against an edge fit in int64 (|det| < 2^62), 3-D orientations (six times a signed volume) fit
// in __int128 (|det| < 2^93). No filter, no adaptive arithmetic, and no rounding can ever make two
// tests disagree, which is what keeps the marching and walking below consistent and hang-free.
#pragma once

#include <cstdint>

namespace phew::dtfe {

// Quantised coordinates are within [-kQuantMax, kQuantMax].
inline constexpr std::int64_t kQuantBits = 29;
inline constexpr std::int64_t kQuantMax = std::int64_t{1} << kQuantBits;

__extension__ typedef __int128 Int128;  // GCC and Clang; -Wpedantic knows it is an extension

// Twice the signed area of (a, b, p): > 0 when p is left of the directed line a -> b.
inline std::int64_t orient2d(std::int64_t ax, std::int64_t ay, std::int64_t bx, std::int64_t by, std::int64_t px,
                             std::int64_t py) {
  return (ax - px) * (by - py) - (ay - py) * (bx - px);
}

// The sign of orient2d for the point p + (eps, eps^2), eps -> 0+ (simulation of simplicity): rays
// through a vertex or along an edge are moved off it, the same way for every test of the same ray,
// so the perturbed ray is a real ray and all decisions about it are consistent. `det` receives the
// unperturbed value (a barycentric weight, possibly 0). Returns 0 only when a and b coincide in
// projection (an edge parallel to the rays).
// The perturbed sign when orient2d(a, b, p) is 0: it depends on the edge alone. d/d eps of the
// determinant is (ay - by), the eps^2 term (bx - ax).
inline int orient2d_tie(std::int64_t ax, std::int64_t ay, std::int64_t bx, std::int64_t by) {
  if (ay != by) return ay > by ? 1 : -1;
  if (bx != ax) return bx > ax ? 1 : -1;
  return 0;
}

inline int orient2d_sos(std::int64_t ax, std::int64_t ay, std::int64_t bx, std::int64_t by, std::int64_t px,
                        std::int64_t py, std::int64_t& det) {
  det = orient2d(ax, ay, bx, by, px, py);
  if (det != 0) return det > 0 ? 1 : -1;
  return orient2d_tie(ax, ay, bx, by);
}

// Six times the signed volume of (a, b, c, d): > 0 when d lies on the side of plane (a, b, c) that
// (b - a) x (c - a) points to.
inline Int128 orient3d(const std::int32_t* a, const std::int32_t* b, const std::int32_t* c, const std::int32_t* d) {
  const Int128 e1x = std::int64_t{b[0]} - a[0], e1y = std::int64_t{b[1]} - a[1], e1z = std::int64_t{b[2]} - a[2];
  const Int128 e2x = std::int64_t{c[0]} - a[0], e2y = std::int64_t{c[1]} - a[1], e2z = std::int64_t{c[2]} - a[2];
  const Int128 e3x = std::int64_t{d[0]} - a[0], e3y = std::int64_t{d[1]} - a[1], e3z = std::int64_t{d[2]} - a[2];
  return e3x * (e1y * e2z - e1z * e2y) + e3y * (e1z * e2x - e1x * e2z) + e3z * (e1x * e2y - e1y * e2x);
}

inline int sign(Int128 v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }

}  // namespace phew::dtfe
