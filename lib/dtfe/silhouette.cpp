#include <phew/dtfe/silhouette.hpp>

#include <phew/dtfe/march.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace phew::dtfe {
namespace {

using P2 = std::array<std::int64_t, 2>;

// Twice the signed area of (a, b, p): > 0 when p is left of a -> b. Lattice coordinates are within
// 2^31 of each other here, so the products stay below 2^62.
std::int64_t cross(const P2& a, const P2& b, std::int64_t u, std::int64_t v) {
  return (b[0] - a[0]) * (v - a[1]) - (b[1] - a[1]) * (u - a[0]);
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {  // b > 0
  const std::int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

}  // namespace

Silhouette::Silhouette(const FieldPoints& points) {
  // Andrew's monotone chain over the projected points: exact, and the same polygon for the same set
  // whatever order the points come in.
  std::vector<P2> p(points.size());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = {points.q[3 * i], points.q[3 * i + 1]};
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  if (p.size() < 3) {
    vertex_ = p;
    return;
  }
  std::vector<P2> h(2 * p.size());
  std::size_t k = 0;
  for (const P2& x : p) {  // lower chain
    while (k >= 2 && cross(h[k - 2], h[k - 1], x[0], x[1]) <= 0) --k;
    h[k++] = x;
  }
  for (std::size_t i = p.size() - 1, lower = k + 1; i-- > 0;) {  // upper chain
    const P2& x = p[i];
    while (k >= lower && cross(h[k - 2], h[k - 1], x[0], x[1]) <= 0) --k;
    h[k++] = x;
  }
  h.resize(k - 1);  // the last point is the first
  vertex_ = std::move(h);
}

bool Silhouette::contains(std::int64_t u, std::int64_t v, bool strict) const {
  const std::size_t n = vertex_.size();
  if (n < 3) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t c = cross(vertex_[i], vertex_[(i + 1) % n], u, v);
    if (strict ? c <= 0 : c < 0) return false;
  }
  return true;
}

bool Silhouette::column(std::int64_t u, std::int64_t& lo, std::int64_t& hi) const {
  const std::size_t n = vertex_.size();
  if (n < 3) return false;
  lo = std::numeric_limits<std::int64_t>::min();
  hi = std::numeric_limits<std::int64_t>::max();
  // Each edge a -> b keeps the half-plane cross(a, b, (u, v)) >= 0, i.e. dx (v - a_v) >= r: a bound on v.
  for (std::size_t i = 0; i < n; ++i) {
    const P2& a = vertex_[i];
    const P2& b = vertex_[(i + 1) % n];
    const std::int64_t dx = b[0] - a[0], r = (b[1] - a[1]) * (u - a[0]);
    if (dx > 0)
      lo = std::max(lo, a[1] - floor_div(-r, dx));  // v - a_v >= ceil(r / dx)
    else if (dx < 0)
      hi = std::min(hi, a[1] + floor_div(-r, -dx));  // v - a_v <= floor(-r / -dx)
    else if (r > 0)
      return false;  // a vertical edge with u outside it
  }
  return lo <= hi;
}

bool margin_suffices(const FieldPoints& points, const FieldGeometry& g) {
  const Silhouette s(points);
  const std::int64_t c = to_lattice(0.5 * (g.size + g.margin), points.scale);
  return s.contains(-c, -c, true) && s.contains(c, -c, true) && s.contains(c, c, true) && s.contains(-c, c, true);
}

double margin_at_level(double start, int level) { return std::ldexp(start, level); }

std::uint64_t blank_uncovered_pixels(const FieldPoints& points, const FieldGeometry& g, std::vector<double>& sigma) {
  const Silhouette s(points);
  const auto n = static_cast<std::size_t>(g.resolution);
  const double pix = g.pixel_size();
  // Pixel edges on the lattice (the same along u and v), and each edge line's covered range.
  std::vector<std::int64_t> e(n + 1), lo(n + 1), hi(n + 1);
  std::vector<char> hit(n + 1);
  for (std::size_t i = 0; i <= n; ++i) e[i] = to_lattice(static_cast<double>(i) * pix - 0.5 * g.size, points.scale);
  for (std::size_t i = 0; i <= n; ++i) hit[i] = s.column(e[i], lo[i], hi[i]) ? 1 : 0;
  // A pixel is wholly inside the (convex) silhouette when its four corners are.
  auto corners_in = [&](std::size_t i, std::size_t j) { return hit[i] && lo[i] <= e[j] && e[j + 1] <= hi[i]; };
  std::uint64_t blanked = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (!corners_in(i, j) || !corners_in(i + 1, j)) {
        sigma[i * n + j] = std::numeric_limits<double>::quiet_NaN();
        ++blanked;
      }
  return blanked;
}

}  // namespace phew::dtfe
