// Small in-memory scenes for the phasespace stages (deblend_patches, select_voters), shared by the unit
// tests and the MPI tests: particles, a clump label grid, peaks with a stored analytic potential.
#pragma once

#include <phew/grid/cell_labels.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/model/peaks.hpp>
#include <phew/phasespace/deblend.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/particles/particle_set.hpp>

#include <cmath>
#include <algorithm>
#include <map>
#include <random>
#include <vector>

namespace phew::scenes {

// Appends one particle.
inline void add(particles::ParticleSet& ps, std::uint64_t id, const std::array<double, 3>& x,
                const std::array<double, 3>& v, double m = 1.0) {
  ps.id.push_back(id);
  ps.position.insert(ps.position.end(), x.begin(), x.end());
  ps.velocity.insert(ps.velocity.end(), v.begin(), v.end());
  ps.mass.push_back(m);
}

// Rows [begin, end) of a scene's particles: a rank's share.
inline particles::ParticleSet share(const particles::ParticleSet& all, std::size_t begin, std::size_t end) {
  particles::ParticleSet s;
  for (std::size_t i = begin; i < end; ++i) {
    s.id.push_back(all.id[i]);
    s.mass.push_back(all.mass[i]);
    for (std::size_t d = 0; d < 3; ++d) {
      s.position.push_back(all.position[3 * i + d]);
      s.velocity.push_back(all.velocity[3 * i + d]);
    }
    if (!all.potential.empty()) {
      s.potential.push_back(all.potential[i]);
      for (std::size_t d = 0; d < 3; ++d) s.acceleration.push_back(all.acceleration[3 * i + d]);
    }
  }
  return s;
}

// Clump peak positions held in memory, as deblend_patches reads them; remembers what it was asked for.
class ClumpPeaks : public phasespace::ClumpPeakSource {
 public:
  explicit ClumpPeaks(std::map<std::int64_t, std::array<double, 3>> positions) : positions_(std::move(positions)) {}
  std::map<std::int64_t, std::array<double, 3>> peak_positions(const std::vector<std::int64_t>& ids) const override {
    asked.push_back(ids);
    std::map<std::int64_t, std::array<double, 3>> out;
    for (std::int64_t id : ids)
      if (positions_.count(id)) out[id] = positions_.at(id);
    return out;
  }
  mutable std::vector<std::vector<std::int64_t>> asked;

 private:
  std::map<std::int64_t, std::array<double, 3>> positions_;
};

// A periodic 8^3 grid of unit cells with three labelled clumps:
//   clump 1: cells [2,6)^3, 600 particles moving at +300 km/s and 400 at -300 km/s (in x), sigma 20;
//   clump 3: cells x in {7, 0} (across the periodic boundary), y, z in [1,3), 300 particles at rest;
//   clump 2: cells [5,7) x [6,8) x [6,8), 100 particles, but not in the catalogue;
// and 200 particles in unlabelled cells. Particle IDs are shuffled; `truth` maps ID -> 1 (clump 1,
// +300), 6 (clump 1, -300), 3, 2 or 0.
struct DeblendScene {
  grid::GridGeometry grid{{8, 8, 8}, {0, 0, 0}, {8, 8, 8}, true};
  std::vector<std::int64_t> labels;  // the whole grid
  particles::ParticleSet particles;
  std::map<std::uint64_t, std::int64_t> truth;
  std::map<std::int64_t, std::array<double, 3>> peak_positions{{1, {4, 4, 4}}, {3, {0, 2, 2}}};
  std::int64_t n_clump_peaks = 5;
  double G = 70;  // v_e of clump 1 about 200 km/s: bins of 50 km/s

  DeblendScene() {
    labels.assign(grid.cells(), 0);
    for (std::int64_t i = 0; i < 8; ++i)
      for (std::int64_t j = 0; j < 8; ++j)
        for (std::int64_t k = 0; k < 8; ++k) {
          std::int64_t l = 0;
          if (i >= 2 && i < 6 && j >= 2 && j < 6 && k >= 2 && k < 6) l = 1;
          if ((i == 7 || i == 0) && j >= 1 && j < 3 && k >= 1 && k < 3) l = 3;
          if (i >= 5 && i < 7 && j >= 6 && k >= 6) l = 2;
          labels[static_cast<std::size_t>(grid.linear({i, j, k}))] = l;
        }
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0, 1);
    std::normal_distribution<double> g(0, 20);
    std::vector<std::uint64_t> ids(1600);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = 1000 + 3 * i;
    std::shuffle(ids.begin(), ids.end(), rng);
    std::size_t next = 0;
    auto put = [&](std::int64_t truth_peak, std::array<double, 3> lo, std::array<double, 3> size, double vx) {
      const std::uint64_t id = ids[next++];
      std::array<double, 3> x{};
      for (std::size_t d = 0; d < 3; ++d) x[d] = grid::wrap_position(lo[d] + size[d] * u(rng), 8);
      add(particles, id, x, {vx + g(rng), g(rng), g(rng)});
      truth[id] = truth_peak;
    };
    for (int n = 0; n < 600; ++n) put(1, {2, 2, 2}, {4, 4, 4}, 300);
    for (int n = 0; n < 400; ++n) put(6, {2, 2, 2}, {4, 4, 4}, -300);
    for (int n = 0; n < 300; ++n) put(3, {7, 1, 1}, {2, 2, 2}, 0);
    for (int n = 0; n < 100; ++n) put(2, {5, 6, 6}, {2, 2, 2}, 0);
    for (int n = 0; n < 200; ++n) put(0, {0, 6, 0}, {2, 2, 2}, 0);  // cells x 0-1, y 6-7, z 0-1: unlabelled
  }

  // The labelled cells with global indices in [begin, end).
  grid::CellLabels cells(std::int64_t begin, std::int64_t end) const {
    grid::CellLabels out;
    for (std::int64_t c = begin; c < std::min(end, static_cast<std::int64_t>(labels.size())); ++c)
      if (labels[static_cast<std::size_t>(c)] != 0) {
        out.cell.push_back(c);
        out.label.push_back(labels[static_cast<std::size_t>(c)]);
      }
    return out;
  }
  // How the tools cut the labelled cells among `ranks` (balanced by count, whole pencils).
  std::vector<std::int64_t> cuts(const mesh::CellSpace& space, int ranks) const {
    const grid::CellLabels all = cells(0, static_cast<std::int64_t>(labels.size()));
    return space.rank_cuts(ranks, all.size(),
                           [&](std::uint64_t row) { return static_cast<std::uint64_t>(all.cell[row]); });
  }
};

// Two Plummer haloes (G = 1, masses 1 and 0.3 in particles of equal mass, scale radius 2) 40 apart in a
// periodic box of 100, the minor moving at (50, 0, 0), with the analytic potential and acceleration of
// both stored; IDs 1..n_major are the major's. Peaks 1 (major) and 2 (minor) at their centres.
struct VotersScene {
  grid::GridMeta grid;
  particles::ParticleSet particles;
  std::vector<model::PeakRow> peaks;
  std::uint64_t n_major = 3000, n_minor = 1000;

  VotersScene() {
    grid.geometry = grid::GridGeometry{{16, 16, 16}, {0, 0, 0}, {100, 100, 100}, true};
    const std::array<std::array<double, 3>, 2> centre{{{30, 50, 50}, {70, 50, 50}}};
    const std::array<double, 2> mass{1.0, 0.3};
    const std::array<std::array<double, 3>, 2> bulk{{{0, 0, 0}, {50, 0, 0}}};
    const double b = 2;
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(0, 1);
    std::normal_distribution<double> g(0, 0.05);
    std::uint64_t id = 1;
    for (std::size_t h = 0; h < 2; ++h) {
      const std::uint64_t n = h == 0 ? n_major : n_minor;
      for (std::uint64_t i = 0; i < n; ++i) {
        const double r = std::min(20.0, b / std::sqrt(std::pow(u(rng), -2.0 / 3.0) - 1));
        const double ct = 2 * u(rng) - 1, ph = 2 * M_PI * u(rng), st = std::sqrt(1 - ct * ct);
        const std::array<double, 3> x{centre[h][0] + r * st * std::cos(ph), centre[h][1] + r * st * std::sin(ph),
                                      centre[h][2] + r * ct};
        add(particles, id++, x, {bulk[h][0] + g(rng), bulk[h][1] + g(rng), bulk[h][2] + g(rng)},
            mass[h] / static_cast<double>(n));
        double phi = 0;
        std::array<double, 3> acc{0, 0, 0};
        for (std::size_t k = 0; k < 2; ++k) {
          double r2 = b * b;
          for (std::size_t d = 0; d < 3; ++d) r2 += (x[d] - centre[k][d]) * (x[d] - centre[k][d]);
          phi -= mass[k] / std::sqrt(r2);
          for (std::size_t d = 0; d < 3; ++d) acc[d] -= mass[k] * (x[d] - centre[k][d]) / (r2 * std::sqrt(r2));
        }
        particles.potential.push_back(phi);
        particles.acceleration.insert(particles.acceleration.end(), acc.begin(), acc.end());
      }
    }
    grid.total_mass = 1.3;
    grid.mean_density = 1.3 / 1e6;
    grid.length_units = "kpc";
    for (std::size_t h = 0; h < 2; ++h) {
      model::PeakRow p;
      p.id = static_cast<std::int64_t>(h + 1);
      p.parent_clump = p.id;
      p.position = centre[h];
      p.velocity = bulk[h];
      p.mass = mass[h];
      peaks.push_back(p);
    }
  }

  // The same scene moved by dx along x in the periodic box: particles, their stored potential and
  // acceleration and the peaks alike. dx = 70 puts the major halo on the periodic boundary, dx = 20 on
  // the plane that splits the grid between 2 ranks and the minor's search sphere across the boundary.
  VotersScene shifted(double dx) const {
    VotersScene s = *this;
    const double box = grid.geometry.extent[0];
    for (std::size_t i = 0; i < s.particles.size(); ++i)
      s.particles.position[3 * i] = grid::wrap_position(s.particles.position[3 * i] + dx, box);
    for (model::PeakRow& p : s.peaks) p.position[0] = grid::wrap_position(p.position[0] + dx, box);
    return s;
  }
};

}  // namespace phew::scenes
