// dtfe-surface kernel benchmark: triangulation rate (CGAL, Qhull), ray marching rate at 1 and 2
// threads, the exact pixel average, and the named alternative the paper replaces: a 3-D grid of
// samples located by walking and summed along the line of sight, at matched accuracy.
//
//   dtfe_kernel [--n 100000,1000000] [--ng 1024] [--qhull-max 1000000] [--seed 1] [--json FILE]
//
// Particles: a seeded clustered set in the unit box (70 % in 200 Plummer blobs with scale radii
// 0.002-0.022, 30 % uniform), one field through the whole periodic box. Prints a table; --json
// writes every number.
#include <phew/core/parse.hpp>
#include <phew/dtfe/density.hpp>
#include <phew/dtfe/exact_map.hpp>
#include <phew/dtfe/field_points.hpp>
#include <phew/dtfe/grid_walk.hpp>
#include <phew/dtfe/hull.hpp>
#include <phew/dtfe/march.hpp>
#include <phew/dtfe/tet_projection.hpp>
#include <phew/dtfe/triangulation.hpp>
#include <phew/mpi/comm.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace phew::dtfe;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

long peak_rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

void clustered(std::size_t n, std::uint64_t seed, std::vector<double>& pos, std::vector<double>& mass) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::array<double, 4>> blobs;
  for (int k = 0; k < 200; ++k) blobs.push_back({u(rng), u(rng), u(rng), 0.002 + 0.02 * u(rng)});
  pos.clear();
  mass.assign(n, 1.0 / static_cast<double>(n));
  while (pos.size() < 3 * n) {
    double x[3];
    if (u(rng) < 0.7) {
      const auto& b = blobs[rng() % blobs.size()];
      const double r = b[3] / std::sqrt(std::pow(std::max(u(rng), 1e-12), -2.0 / 3.0) - 1);
      if (r > 0.2) continue;
      const double ct = 2 * u(rng) - 1, ph = 6.283185307179586 * u(rng), st = std::sqrt(1 - ct * ct);
      x[0] = b[0] + r * st * std::cos(ph), x[1] = b[1] + r * st * std::sin(ph), x[2] = b[2] + r * ct;
    } else {
      for (double& v : x) v = u(rng);
    }
    for (double& v : x) v -= std::floor(v);
    pos.insert(pos.end(), x, x + 3);
  }
}

double relative_l1(const std::vector<double>& a, const std::vector<double>& b, std::size_t begin, std::size_t end) {
  double e = 0, s = 0;
  for (std::size_t i = begin; i < end; ++i) e += std::abs(a[i] - b[i]), s += std::abs(b[i]);
  return s > 0 ? e / s : 0;
}

struct Row {
  std::size_t n;
  std::string what;
  int threads;
  double seconds;
  double rate;       // per second
  std::string unit;  // of the rate
  std::string note;
};

}  // namespace

int main(int argc, char** argv) {
  const phew::mpi::Environment environment(argc, argv);
  std::vector<std::size_t> sizes{100000, 1000000};
  int ng = 1024;
  std::size_t qhull_max = 1000000;
  std::uint64_t seed = 1;
  std::string json;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--n") {
      sizes.clear();
      for (double n : phew::core::parse_list<double>(v, "--n")) sizes.push_back(static_cast<std::size_t>(n));
    } else if (k == "--ng")
      ng = phew::core::parse_number<int>(v, "--ng");
    else if (k == "--qhull-max")
      qhull_max = static_cast<std::size_t>(phew::core::parse_number<double>(v, "--qhull-max"));
    else if (k == "--seed")
      seed = phew::core::parse_number<std::uint64_t>(v, "--seed");
    else if (k == "--json")
      json = v;
    else {
      std::fprintf(stderr, "dtfe_kernel: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::vector<Row> rows;
  const double rays = static_cast<double>(ng) * ng;
  for (std::size_t n : sizes) {
    std::vector<double> pos, mass;
    clustered(n, seed, pos, mass);
    FieldGeometry g;
    g.center = {0.5, 0.5, 0.5};
    g.size = 1;
    g.depth = 1;
    g.margin = 0;
    g.resolution = ng;
    g.axis = 2;
    double t0 = now();
    const FieldPoints pts = select_field(pos, mass, g, {1, 1, 1});
    rows.push_back(
        {n, "select + quantise + sort", 1, now() - t0, static_cast<double>(n) / (now() - t0), "points/s", ""});
    pos = {};
    std::vector<Backend> backends;
    if (cgal_available()) backends.push_back(Backend::cgal);
    if (n <= qhull_max) backends.push_back(Backend::qhull);
    Triangulation tri;
    for (Backend b : backends)
      for (int threads : {1, 2}) {
        if (b == Backend::qhull && threads == 2) continue;  // Qhull is sequential
        t0 = now();
        Triangulation t = triangulate(pts, b, threads);
        const double s = now() - t0;
        rows.push_back({n, std::string("triangulation ") + to_string(b), threads, s, static_cast<double>(n) / s,
                        "points/s",
                        std::to_string(t.tets.size()) + " tetrahedra, " + std::to_string(t.flat_tets) + " flat"});
        if (tri.tets.empty()) tri = std::move(t);
      }
    t0 = now();
    const std::vector<double> rho = vertex_densities(pts, tri, 2);
    const std::vector<HullFacet> hull = lower_hull(pts, tri);
    rows.push_back({n, "densities + lower hull", 2, now() - t0, static_cast<double>(n) / (now() - t0), "points/s", ""});
    const RayMarcher marcher(pts, tri, hull, rho);
    std::vector<double> marched;
    for (int threads : {1, 2}) {
      MarchStats st;
      t0 = now();
      marched = marcher.map(g, 1, threads, &st);
      const double s = now() - t0;
      rows.push_back({n, "ray marching", threads, s, rays / s, "rays/s",
                      std::to_string(s / rays * 1e6).substr(0, 5) + " us/ray, " +
                          std::to_string(static_cast<double>(st.steps) / static_cast<double>(st.rays)).substr(0, 5) +
                          " tets/ray"});
    }
    // The same rays, tetrahedron by tetrahedron (what dtfe-surface runs).
    for (int threads : {1, 2}) {
      MarchStats st;
      t0 = now();
      const auto projected = project_map(pts, tri, rho, g, 1, threads, &st);
      const double s = now() - t0;
      double most = 0;
      for (std::size_t k = 0; k < projected.size(); ++k)
        if (!std::isnan(marched[k])) most = std::max(most, std::abs(projected[k] - marched[k]) / marched[k]);
      rows.push_back({n, "rays, tetrahedron by tetrahedron", threads, s, rays / s, "rays/s",
                      std::to_string(s / rays * 1e6).substr(0, 5) + " us/ray, largest difference from the marched " +
                          std::to_string(most)});
    }
    for (int threads : {1, 2}) {
      t0 = now();
      const auto exact = exact_map(pts, tri, rho, g, threads);
      const double s = now() - t0;
      double tot = 0;
      for (double v : exact) tot += v;
      rows.push_back({n, "exact pixel average", threads, s, rays / s, "pixels/s",
                      "map mass / particle mass - 1 = " + std::to_string(tot / rays / pts.total_mass() - 1)});
    }
    // The walking alternative on a band of rows (the full map would take too long), with nz doubled
    // until it matches the marched integral to 1 % and to 0.1 % (relative L1 over the band).
    const TetWalker walker(pts, tri, rho);
    const int band = std::max(8, ng / 32);
    const std::size_t b0 = static_cast<std::size_t>(ng / 2 - band / 2) * static_cast<std::size_t>(ng);
    const std::size_t b1 = b0 + static_cast<std::size_t>(band) * static_cast<std::size_t>(ng);
    for (double target : {1e-2, 1e-3}) {
      for (int nz = 64; nz <= 65536; nz *= 2) {
        std::vector<double> walked(static_cast<std::size_t>(ng) * static_cast<std::size_t>(ng), 0.0);
        WalkStats ws;
        t0 = now();
        // Rows b0..b1 of the full map, by walking each of their pixels' columns.
        {
          const double pix = g.pixel_size();
          std::int32_t hint = 0;
          for (std::size_t k = b0; k < b1; ++k) {
            const std::size_t i = k / static_cast<std::size_t>(ng), j = k % static_cast<std::size_t>(ng);
            double acc = 0;
            for (int z = 0; z < nz; ++z) {
              const int zz = (j % 2 == 0) ? z : nz - 1 - z;
              const std::int64_t p[3] = {to_lattice((static_cast<double>(i) + 0.5) * pix - 0.5, pts.scale),
                                         to_lattice((static_cast<double>(j) + 0.5) * pix - 0.5, pts.scale),
                                         to_lattice((zz + 0.5) / nz - 0.5, pts.scale)};
              acc += walker.density(p, hint, ws.steps);
            }
            walked[k] = acc / nz;
            ws.samples += static_cast<std::uint64_t>(nz);
          }
        }
        const double s = now() - t0;
        const double err = relative_l1(walked, marched, b0, b1);
        if (err <= target || nz == 65536) {
          const double band_rays = static_cast<double>(b1 - b0);
          rows.push_back(
              {n, "walking 3-D grid (1 thread)", 1, s * rays / band_rays, rays / (s * rays / band_rays), "rays/s",
               "nz = " + std::to_string(nz) + " for L1 error " + std::to_string(err).substr(0, 7) +
                   " <= " + std::to_string(target).substr(0, 5) + "; " +
                   std::to_string(static_cast<double>(ws.steps) / static_cast<double>(ws.samples)).substr(0, 4) +
                   " tets/sample; timed on " + std::to_string(band) + " rows, scaled"});
          break;
        }
      }
    }
    rows.push_back({n, "peak RSS so far (MiB)", 0, 0, static_cast<double>(peak_rss_kb()) / 1024.0, "MiB", ""});
  }
  std::printf("%-10s %-32s %7s %10s %14s  %s\n", "particles", "step", "threads", "seconds", "rate", "notes");
  for (const Row& r : rows)
    std::printf("%-10zu %-32s %7d %10.3f %11.3g %s  %s\n", r.n, r.what.c_str(), r.threads, r.seconds, r.rate,
                r.unit.c_str(), r.note.c_str());
  if (!json.empty()) {
    std::ofstream out(json);
    out << "[\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      out << "  {\"particles\": " << r.n << ", \"step\": \"" << r.what << "\", \"threads\": " << r.threads
          << ", \"seconds\": " << r.seconds << ", \"rate\": " << r.rate << ", \"unit\": \"" << r.unit
          << "\", \"note\": \"" << r.note << "\"}" << (i + 1 < rows.size() ? ",\n" : "\n");
    }
    out << "]\n";
  }
  return 0;
}
