// One field from its points to its map: triangulate, DTFE densities, then rays (the paper's kernel,
// optionally k samples per pixel) or the exact pixel average. What the tool and the benchmarks call.
#pragma once

#include <phew/dtfe/field_points.hpp>
#include <phew/dtfe/triangulation.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace phew::dtfe {

enum class MapMode {
  ray,    // each pixel: the ray through its centre, or the mean of `samples` rays in it (Sec. IV A)
  exact,  // each pixel: the exact average of the column integral over the pixel (beyond the paper)
};
MapMode parse_map_mode(const std::string& text);  // "ray" or "exact"; throws Error(usage)
const char* to_string(MapMode m);

struct MapSettings {
  MapMode mode = MapMode::ray;
  int samples = 1;  // rays per pixel in ray mode
  Backend backend = Backend::qhull;
  int threads = 1;
};

struct FieldResult {
  std::vector<double> sigma;      // [resolution][resolution], snapshot mass / length^2
  std::uint64_t n_particles = 0;  // particles (and images) in the window
  std::uint64_t n_vertices = 0;   // distinct positions triangulated
  std::uint64_t n_tets = 0;
  std::uint64_t n_flat_tets = 0;
  std::uint64_t n_absorbed = 0;      // points the backend dropped (their mass went to a neighbour)
  std::uint64_t steps = 0;           // tetrahedra crossed by rays (ray mode)
  std::uint64_t n_outside = 0;       // pixels outside the hull's silhouette: NaN in sigma
  double window_mass = 0;            // mass of the particles in the window
  double map_mass = 0;               // sum of the finite sigma x pixel area
  double seconds_triangulation = 0;  // triangulation + densities
  double seconds_interpolation = 0;  // the map
};

// The map of field `g` from its points. A pixel the triangulation does not cover (ray mode: one of its
// rays misses the hull; exact mode: it is not wholly inside the hull's silhouette) is NaN, never a
// made-up 0, unless points.empty_outside says the columns there are empty. Throws Error(input) for
// fewer than 4 distinct or coplanar points. Not collective; uses settings.threads threads. The map is
// the same for any thread count.
FieldResult surface_density(const FieldPoints& points, const FieldGeometry& g, const MapSettings& settings);

}  // namespace phew::dtfe
