#include <phew/grid/shrinking_sphere.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace phew::grid {

std::size_t shrinking_sphere_stop(std::size_t n, const ShrinkingSphere& params) {
  const auto fraction = static_cast<std::size_t>(params.stop_fraction * static_cast<double>(n));
  return std::max(params.stop_min, std::min(fraction, params.stop_max));
}

std::array<double, 3> shrinking_sphere_centre(std::span<const double> position, std::span<const double> mass,
                                              const Box& box, const std::array<double, 3>& reference,
                                              const ShrinkingSphere& params) {
  const std::size_t n = mass.size();
  auto wrapped = [&](std::array<double, 3> c) {
    for (std::size_t d = 0; d < 3; ++d) c[d] = wrap_into(box, c[d], d);
    return c;
  };
  if (n == 0) return wrapped(reference);
  // The group around the reference, unwrapped: separations below are plain differences.
  std::vector<double> x(3 * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t d = 0; d < 3; ++d)
      x[3 * i + d] = reference[d] + minimum_image(position[3 * i + d] - reference[d], box.extent[d], box.periodic);

  // The particles that may lie inside the sphere: those within `reach` of `anchor`, in index order.
  // While the sphere lies inside that ball, scanning them is scanning every particle (the same ones in
  // the same order: the same sums, bit for bit), and the ball is remade around the centre as the sphere
  // shrinks, so a group of n costs a few passes over n, not one per step (up to ~200 steps).
  std::vector<std::size_t> near(n);
  for (std::size_t i = 0; i < n; ++i) near[i] = i;
  std::array<double, 3> anchor{};
  double reach = INFINITY;
  auto distance2 = [&](std::size_t i, const std::array<double, 3>& c) {
    const double dx = x[3 * i] - c[0], dy = x[3 * i + 1] - c[1], dz = x[3 * i + 2] - c[2];
    return dx * dx + dy * dy + dz * dz;
  };
  // Keeps those of `near` within `radius` of `centre` (0.1% more: rounding never drops one that counts).
  std::vector<std::size_t> kept;  // the next ball's, kept from one remake to the next
  auto remake = [&](const std::array<double, 3>& centre, double radius, bool from_all) {
    const double keep2 = (radius * 1.001) * (radius * 1.001);
    kept.clear();
    if (from_all) {
      for (std::size_t i = 0; i < n; ++i)
        if (distance2(i, centre) <= keep2) kept.push_back(i);
    } else {
      for (const std::size_t i : near)
        if (distance2(i, centre) <= keep2) kept.push_back(i);
    }
    near.swap(kept);
    anchor = centre;
    reach = radius;
  };

  // Mass-weighted mean of the particles within r of c (all when r < 0); how many there were.
  auto mean_within = [&](const std::array<double, 3>& c, double r, std::array<double, 3>& out) {
    double m = 0, s[3] = {0, 0, 0};
    std::size_t count = 0;
    for (const std::size_t i : near) {
      if (r >= 0 && distance2(i, c) > r * r) continue;
      ++count;
      m += mass[i];
      for (std::size_t d = 0; d < 3; ++d) s[d] += mass[i] * x[3 * i + d];
    }
    if (count > 0 && m > 0)
      for (std::size_t d = 0; d < 3; ++d) out[d] = s[d] / m;
    return count;
  };

  std::array<double, 3> c = reference;
  mean_within(reference, -1, c);
  double r = 0;
  for (std::size_t i = 0; i < n; ++i) r = std::max(r, std::sqrt(distance2(i, c)));
  const std::size_t stop = shrinking_sphere_stop(n, params);
  // 0.975^3000 ~ 1e-33: a bound that only a group with `stop` particles on one point can reach.
  for (int step = 0; step < 3000 && r > 0; ++step) {
    r *= params.shrink;
    // The sphere (c, r) inside the ball (anchor, reach)? Remade at 1.05 r around the centre when it is
    // not, or when the ball is 1.15 times too wide (about every 4 steps): a step then scans 1.2-1.5
    // times the volume it counts, a remake the ball once more (tighter balls remade more often cost
    // less in all: bench/README.md, unbind_bench.sh). From the ball's own particles when the new ball
    // lies inside the old.
    const double off = std::isfinite(reach) ? std::sqrt((c[0] - anchor[0]) * (c[0] - anchor[0]) +
                                                        (c[1] - anchor[1]) * (c[1] - anchor[1]) +
                                                        (c[2] - anchor[2]) * (c[2] - anchor[2]))
                                            : 0.0;
    if (off + r > reach || 1.15 * r < reach) remake(c, 1.05 * r, off + 1.05 * r > reach);
    std::array<double, 3> next = c;
    if (mean_within(c, r, next) < stop) break;
    c = next;
  }
  return wrapped(c);
}

}  // namespace phew::grid
