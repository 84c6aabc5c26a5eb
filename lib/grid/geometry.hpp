// A uniform grid: C-ordered [nx][ny][nz], linear index (i*ny + j)*nz + k, cell (i,j,k) centred at
// origin + (i+0.5, j+0.5, k+0.5) * cell_size (docs/formats.md, "Cells and arrays").
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

namespace phew::grid {

// A region of space: an open box, or a periodic one (positions wrap, separations take the nearest image).
struct Box {
  std::array<double, 3> origin{0, 0, 0};
  std::array<double, 3> extent{0, 0, 0};
  bool periodic = false;
};

// A cell of a grid by its three indices.
struct CellIndex {
  std::int64_t i = 0, j = 0, k = 0;
  std::int64_t operator[](std::size_t axis) const { return axis == 0 ? i : axis == 1 ? j : k; }
  bool operator==(const CellIndex&) const = default;
};

struct GridGeometry {
  std::array<std::int64_t, 3> shape{0, 0, 0};
  std::array<double, 3> origin{0, 0, 0};
  std::array<double, 3> extent{0, 0, 0};  // box size covered by the grid
  bool periodic = true;

  std::array<double, 3> cell_size() const {
    return {extent[0] / static_cast<double>(shape[0]), extent[1] / static_cast<double>(shape[1]),
            extent[2] / static_cast<double>(shape[2])};
  }
  double cell_volume() const {
    const auto c = cell_size();
    return c[0] * c[1] * c[2];
  }
  std::uint64_t cells() const {
    return static_cast<std::uint64_t>(shape[0]) * static_cast<std::uint64_t>(shape[1]) *
           static_cast<std::uint64_t>(shape[2]);
  }
  std::uint64_t plane_cells() const {
    return static_cast<std::uint64_t>(shape[1]) * static_cast<std::uint64_t>(shape[2]);
  }
  Box box() const { return {origin, extent, periodic}; }

  // The linear index (i*ny + j)*nz + k of a cell, and back.
  std::int64_t linear(const CellIndex& c) const;
  CellIndex cell_at(std::int64_t linear) const {
    const std::int64_t plane = shape[1] * shape[2];
    return {linear / plane, (linear % plane) / shape[2], linear % shape[2]};
  }
  std::array<double, 3> centre(const CellIndex& c) const {
    const auto h = cell_size();
    return {origin[0] + (static_cast<double>(c.i) + 0.5) * h[0], origin[1] + (static_cast<double>(c.j) + 0.5) * h[1],
            origin[2] + (static_cast<double>(c.k) + 0.5) * h[2]};
  }
};

// Everything a grid file records besides the values (docs/formats.md, "grid.h5 (cic-project)").
struct GridMeta {
  GridGeometry geometry;
  std::string assignment;   // "CIC", "NGP", "TSC"
  double total_mass = 0;    // deposited
  double mean_density = 0;  // total_mass / grid volume
  std::uint64_t n_particles = 0;
  std::string density_units;  // "(1e10 Msun/h)/(kpc/h)^3"
  std::string length_units;   // "kpc/h"
  std::string mass_units;
  double particle_mass = 0;  // mass of one particle when all are equal, else 0
  double time = 0, redshift = 0;
  bool comoving = false;
  std::optional<double> omega_m, omega_lambda, hubble_param;
  std::optional<double> critical_density;  // comoving, grid units, at the snapshot's time
};

// The separation d along an axis of a periodic box folded into [-box/2, box/2]; d itself otherwise:
// d - box * round(d / box). Where d / box lies within (-1.5, 1.5) (a separation inside the box: nearly
// every call) the nearest whole number is told by compares, with the same bits (for |d / box| < 0.5,
// round gives a zero of its sign): std::round is a library call on x86-64 without SSE4.1, and this
// runs per cell and per particle of several tools. Within a quarter box (a clump's cell from its peak,
// a particle from its halo's centre) no division either: d / box then rounds to below 0.5, so the
// result is d - box * (a zero of d's sign), which is d + 0.0 (d, and +0 for -0), bit for bit.
inline double minimum_image(double d, double box, bool periodic) {
  if (!periodic) return d;
  if (std::fabs(d) < 0.25 * box) return d + 0.0;
  const double r = d / box;
  if (!(std::fabs(r) < 1.5)) return d - box * std::round(r);
  const double k = r >= 0.5 ? 1.0 : r <= -0.5 ? -1.0 : std::copysign(0.0, r);
  return d - box * k;
}

// Whether wrap_position(x, box) is x itself, told without its arithmetic: inside a finite box the
// formula gives x back (x / box rounds to at most the double below 1, so the floor is +0). Zeros (-0
// becomes +0), negatives, NaN, x >= box and an infinite box (NaN) are not. Nearly every particle a
// snapshot holds is inside, so saying so skips a division and a floor.
inline bool kept_by_wrap(double x, double box) { return x > 0 && x < box && box < INFINITY; }

// A position wrapped into [0, box); x itself when there is no box (box <= 0).
inline double wrap_position(double x, double box) {
  if (kept_by_wrap(x, box)) return x;
  if (!(box > 0)) return x;
  const double w = x - box * std::floor(x / box);
  return w >= box ? 0.0 : w;  // x slightly below 0 can round up to exactly box
}

// An index along an axis of n cells: wrapped into [0, n) when periodic, clamped to it otherwise.
inline std::int64_t fold_index(std::int64_t i, std::int64_t n, bool periodic) {
  return periodic ? ((i % n) + n) % n : std::clamp<std::int64_t>(i, 0, n - 1);
}

// The row-major (C order) position of element (i, j, k) of a 3-D array whose last two extents are n1 and
// n2: (i * n1 + j) * n2 + k. Every 3-D array of the project (grids, meshes, FFT buffers with padded rows,
// octree levels, block layouts) is indexed through this one fold.
template <typename I>
constexpr I linear_index(I i, I j, I k, I n1, I n2) {
  return (i * n1 + j) * n2 + k;
}

inline std::int64_t GridGeometry::linear(const CellIndex& c) const {
  return linear_index(c.i, c.j, c.k, shape[1], shape[2]);
}

// The cell holding position x: folded into the grid when it is periodic; nullopt outside an open grid.
inline std::optional<CellIndex> cell_of(const GridGeometry& g, const double x[3]) {
  std::int64_t c[3];
  for (std::size_t d = 0; d < 3; ++d) {
    c[d] =
        static_cast<std::int64_t>(std::floor((x[d] - g.origin[d]) / (g.extent[d] / static_cast<double>(g.shape[d]))));
    if (g.periodic)
      c[d] = fold_index(c[d], g.shape[d], true);
    else if (c[d] < 0 || c[d] >= g.shape[d])
      return std::nullopt;
  }
  return CellIndex{c[0], c[1], c[2]};
}

// The same, but a position outside an open grid counts as the nearest edge cell.
inline CellIndex cell_of_clamped(const GridGeometry& g, const double x[3]) {
  std::int64_t c[3];
  for (std::size_t d = 0; d < 3; ++d)
    c[d] = fold_index(
        static_cast<std::int64_t>(std::floor((x[d] - g.origin[d]) / (g.extent[d] / static_cast<double>(g.shape[d])))),
        g.shape[d], g.periodic);
  return CellIndex{c[0], c[1], c[2]};
}

// A catalogue position (a centre of mass found from offsets) folded into a periodic box along an axis;
// x itself when the box is open.
inline double wrap_into(const Box& b, double x, std::size_t axis) {
  if (!b.periodic) return x;
  const double L = b.extent[axis];
  return b.origin[axis] + std::fmod(std::fmod(x - b.origin[axis], L) + L, L);
}

// "256" or "128,128,256" -> shape. Throws Error(usage).
std::array<std::int64_t, 3> parse_grid_shape(const std::string& text);

// The grid rule (docs/thresholds.md, "The grid"): the finest grid of cubic cells on which no single
// particle rises above the density threshold on its own. A cell holds δ N / cells particle masses at a
// threshold δ times the mean density of N particles; a lone particle at a cell centre puts its whole
// mass in the cell, so with at least one particle mass per threshold cell every test cell needs two or
// more particles. Finer grids turn lone particles into peaks (Poisson noise); coarser ones smooth small
// haloes below the threshold: at the rule's grid a halo of M particles is about 2 (M / 4π)^(1/3) cells
// across (3 cells for 50); on a grid whose threshold cell holds k particles, a halo of k M is.
inline constexpr double kParticlesPerThresholdCell = 1;

// Particle masses in a cell at the threshold δ times the mean density of `particles` spread over `cells`.
inline double particles_per_threshold_cell(double threshold_over_mean, double particles, double cells) {
  return cells > 0 ? threshold_over_mean * particles / cells : 0.0;
}

// The grid rule's shape for `particles` in a region of size `extent`: cubic cells of side
// (V / (δ N))^(1/3), each axis rounded down to a multiple of 8 (at least 8), so that a threshold cell
// holds at least kParticlesPerThresholdCell particle masses. It is the one place that chooses a grid:
// once the adaptive mesh exists, this is where `--grid auto` should choose a coarse grid plus refinement
// levels (each refined while its cells hold more than the rule's particles) instead of one fine grid.
std::array<std::int64_t, 3> grid_rule_shape(const std::array<double, 3>& extent, double particles,
                                            double threshold_over_mean);

// The coarse grid of an adaptive mesh (cic-project --refine --grid auto): cubic cells holding about one
// particle each on average, as RAMSES' levelmin has 2^levelmin cells per axis for as many particles,
// rounded down to a multiple of 8 (at least 8). The octree refines it where particles gather.
std::array<std::int64_t, 3> coarse_grid_shape(const std::array<double, 3>& extent, double particles);

// "x0,y0,z0,x1,y1,z1" -> an open box (a sub-region of a snapshot). Throws Error(usage).
Box parse_region(const std::string& text);

}  // namespace phew::grid
