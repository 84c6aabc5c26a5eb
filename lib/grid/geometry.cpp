#include <phew/grid/geometry.hpp>

#include <phew/core/error.hpp>
#include <phew/core/parse.hpp>

#include <vector>

namespace phew::grid {

std::array<std::int64_t, 3> parse_grid_shape(const std::string& text) {
  std::vector<std::int64_t> n;
  try {
    n = core::parse_list<std::int64_t>(text, "grid");
  } catch (const core::Error&) {
    n.clear();
  }
  if ((n.size() != 1 && n.size() != 3) || std::any_of(n.begin(), n.end(), [](std::int64_t v) { return v < 1; }))
    throw core::Error::usage("grid '{}': expected N or NX,NY,NZ with positive integers", text);
  return n.size() == 1 ? std::array<std::int64_t, 3>{n[0], n[0], n[0]} : std::array<std::int64_t, 3>{n[0], n[1], n[2]};
}

std::array<std::int64_t, 3> grid_rule_shape(const std::array<double, 3>& extent, double particles,
                                            double threshold_over_mean) {
  const double volume = extent[0] * extent[1] * extent[2];
  const double cell = std::cbrt(volume * kParticlesPerThresholdCell / (threshold_over_mean * particles));
  std::array<std::int64_t, 3> shape{8, 8, 8};
  if (!(cell > 0) || !std::isfinite(cell)) return shape;
  for (std::size_t d = 0; d < 3; ++d) {
    // Down, so that the cells are no smaller than the rule's; the 1e-9 keeps an exact multiple of 8
    // (64.0 computed as 63.99999...) from dropping to the one below.
    const double n = std::floor(extent[d] / cell / 8 * (1 + 1e-9)) * 8;
    shape[d] = std::max<std::int64_t>(8, static_cast<std::int64_t>(n));
  }
  return shape;
}

std::array<std::int64_t, 3> coarse_grid_shape(const std::array<double, 3>& extent, double particles) {
  return grid_rule_shape(extent, particles, 1.0 / kParticlesPerThresholdCell);  // one particle per cell at the mean
}

Box parse_region(const std::string& text) {
  std::vector<double> r;
  try {
    r = core::parse_list<double>(text, "region", 6);
  } catch (const core::Error&) {
    throw core::Error::usage("region '{}': expected six numbers x0,y0,z0,x1,y1,z1", text);
  }
  Box b;
  // Beyond 1e30 no length unit phew knows (cm the smallest) describes a simulated volume; the extent
  // would also overflow or lose every digit of the cells (--region +-1e300).
  for (double v : r)
    if (!(std::abs(v) <= 1e30))
      throw core::Error::usage("region '{}': {:g} is not a finite coordinate within +-1e30", text, v);
  for (std::size_t d = 0; d < 3; ++d) {
    if (!(r[d + 3] > r[d]))
      throw core::Error::usage("region '{}': upper corner must be above the lower corner in every axis", text);
    b.origin[d] = r[d];
    b.extent[d] = r[d + 3] - r[d];
  }
  b.periodic = false;
  return b;
}

}  // namespace phew::grid
