#include <phew/dtfe/surface_density.hpp>

#include <phew/core/error.hpp>
#include <phew/dtfe/density.hpp>
#include <phew/dtfe/exact_map.hpp>
#include <phew/dtfe/silhouette.hpp>
#include <phew/dtfe/tet_projection.hpp>

#include <chrono>
#include <cmath>

namespace phew::dtfe {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

MapMode parse_map_mode(const std::string& text) {
  if (text == "ray") return MapMode::ray;
  if (text == "exact") return MapMode::exact;
  throw core::Error::usage("--mode '{}': expected ray or exact", text);
}

const char* to_string(MapMode m) { return m == MapMode::ray ? "ray" : "exact"; }

FieldResult surface_density(const FieldPoints& points, const FieldGeometry& g, const MapSettings& settings) {
  FieldResult r;
  r.n_particles = points.n_selected;
  r.n_vertices = points.size();
  r.window_mass = points.total_mass();

  const auto t0 = std::chrono::steady_clock::now();
  // Neither the projected rays nor the exact pixels follow neighbours.
  const Triangulation tri = triangulate(points, settings.backend, settings.threads, false);
  const std::vector<double> rho = vertex_densities(points, tri, settings.threads);
  r.n_tets = tri.tets.size();
  r.n_flat_tets = tri.flat_tets;
  r.n_absorbed = tri.absorbed.size();
  r.seconds_triangulation = seconds_since(t0);

  const auto t1 = std::chrono::steady_clock::now();
  if (settings.mode == MapMode::ray) {
    // The marcher's rays, tetrahedron by tetrahedron (tet_projection.hpp: RayMarcher is the reference).
    MarchStats stats;
    r.sigma = project_map(points, tri, rho, g, settings.samples, settings.threads, &stats, points.empty_outside);
    r.steps = stats.steps;
  } else {
    r.sigma = exact_map(points, tri, rho, g, settings.threads);
    if (!points.empty_outside) blank_uncovered_pixels(points, g, r.sigma);
  }
  r.seconds_interpolation = seconds_since(t1);

  const double area = g.pixel_size() * g.pixel_size();
  double total = 0;
  for (double s : r.sigma) {
    if (std::isnan(s))
      ++r.n_outside;
    else
      total += s;
  }
  r.map_mass = total * area;
  return r;
}

}  // namespace phew::dtfe
