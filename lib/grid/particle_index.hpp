// The project's one spatial binning of particles: positions (and masses) sorted into the cells of a
// coarse grid over a Box, to count and visit the particles of many windows quickly (with periodic
// images when the box is periodic) and to find the particles within a radius of a point. The index
// holds a sorted copy of the positions, or reads the caller's points in place when the caller keeps
// them sorted by cell (cell_order, in_place).
#pragma once

#include <phew/grid/geometry.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace phew::grid {

class ParticleIndex {
 public:
  // Copies the particles ([n][3] positions, and n masses or none) sorted by cell; cells of about `cell`
  // length (at most ~n/4 cells, at most 1024 and at least one per axis). `box` is where the particles
  // live: a periodic box [origin, origin + extent) holding them wrapped, or, when open, any box holding
  // them (positions outside are clamped to the edge cells, never lost). Not collective.
  ParticleIndex(std::span<const double> position, std::span<const double> mass, const Box& box, double cell);

  // Points the caller holds: point i's coordinates are the doubles at base + i * stride + 0, 8, 16
  // bytes (read byte-wise, so a member of an array of structs is a well-defined view).
  struct Points {
    const std::byte* base = nullptr;
    std::size_t stride = 3 * sizeof(double);  // bytes from one point to the next
    std::size_t size = 0;
    double at(std::size_t i, std::size_t d) const {
      double v;
      std::memcpy(&v, base + i * stride + d * sizeof(double), sizeof(double));
      return v;
    }
  };
  // [n][3] doubles as Points.
  static Points points(std::span<const double> position) {
    return {reinterpret_cast<const std::byte*>(position.data()), 3 * sizeof(double), position.size() / 3};
  }
  // The order of `points` by the cells an index over them for (box, cell) would have (stable):
  // indices into `points`. A caller that rearranges its points so can index them in place (below).
  static std::vector<std::size_t> cell_order(const Points& points, const Box& box, double cell);
  // An index over the caller's points as they lie, no copy made: they must be sorted by cell, as
  // cell_order arranges them (Error(internal) otherwise), stay where they are while the index is used,
  // and have no masses.
  // within() then returns indices into them (visit and count work as for a copying index). For the
  // big arrays whose copy would double what a rank holds (voters' particles).
  static ParticleIndex in_place(const Points& points, const Box& box, double cell);

  std::size_t size() const { return size_; }
  const Box& box() const { return box_; }

  // Particles (and periodic images) with centre - half <= x < centre + half on every axis.
  std::uint64_t count(const std::array<double, 3>& centre, const std::array<double, 3>& half) const;

  // Calls f(x, y, z, mass) for every particle (or image) in the window, positions relative to the
  // centre (mass 0 when the index holds none). Not collective.
  template <typename F>
  void visit(const std::array<double, 3>& centre, const std::array<double, 3>& half, F&& f) const;

  // Indices (into the positions given to the constructor, or the points given to in_place) of the
  // particles within r of x, separations
  // taken through the nearest periodic image in a periodic box: sum over axes of minimum_image(x_i - x)^2
  // <= r^2. Each particle once, in ascending index order. Not collective.
  std::vector<std::size_t> within(const std::array<double, 3>& x, double r) const;

 private:
  ParticleIndex(const Box& box, std::size_t n, double cell);  // the cells, no particles yet
  std::size_t cell_of(const Points& points, std::size_t i) const;
  // Each point's cell, and start_ made from their counts.
  std::vector<std::uint32_t> file(const Points& points);
  // The particles' positions in cell order: the copy, or the caller's points in place.
  Points positions() const { return in_place_.base ? in_place_ : points(position_); }
  std::size_t input_index(std::uint64_t p) const { return index_.empty() ? p : index_[p]; }

  Box box_;
  std::array<std::int64_t, 3> cells_{1, 1, 1};
  std::array<double, 3> cell_size_{0, 0, 0};
  std::size_t size_ = 0;
  std::vector<std::uint64_t> start_;  // [cell + 1]
  std::vector<double> position_;      // sorted by cell, [n][3] (empty in place)
  std::vector<double> mass_;          // sorted by cell, [n] (empty: no masses)
  std::vector<std::uint64_t> index_;  // sorted by cell: each particle's index in the input (empty in place)
  Points in_place_;                   // the caller's points (base null: the copy above)
};

template <typename F>
void ParticleIndex::visit(const std::array<double, 3>& centre, const std::array<double, 3>& half, F&& f) const {
  // Unwrapped cell ranges per axis: k -> cell k mod n, shifted by floor(k / n) boxes (periodic), so a
  // window wider than the box sees each image once.
  std::array<std::int64_t, 3> k0{}, k1{};
  for (std::size_t d = 0; d < 3; ++d) {
    const double lo = (centre[d] - half[d] - box_.origin[d]) / cell_size_[d];
    const double hi = (centre[d] + half[d] - box_.origin[d]) / cell_size_[d];
    k0[d] = static_cast<std::int64_t>(std::floor(lo));
    k1[d] = static_cast<std::int64_t>(std::floor(hi));
    if (!box_.periodic) {
      k0[d] = std::max<std::int64_t>(k0[d], 0);
      k1[d] = std::min<std::int64_t>(k1[d], cells_[d] - 1);
    }
  }
  auto wrap = [&](std::int64_t k, std::size_t d, double& shift) {
    if (!box_.periodic) {
      shift = 0;
      return k;
    }
    const std::int64_t m = fold_index(k, cells_[d], true);
    shift = static_cast<double>((k - m) / cells_[d]) * box_.extent[d];
    return m;
  };
  const bool has_mass = !mass_.empty();
  const Points pos = positions();
  for (std::int64_t i = k0[0]; i <= k1[0]; ++i) {
    double sx = 0;
    const std::int64_t ci = wrap(i, 0, sx);
    for (std::int64_t j = k0[1]; j <= k1[1]; ++j) {
      double sy = 0;
      const std::int64_t cj = wrap(j, 1, sy);
      for (std::int64_t k = k0[2]; k <= k1[2]; ++k) {
        double sz = 0;
        const std::int64_t ck = wrap(k, 2, sz);
        const auto cell = static_cast<std::size_t>((ci * cells_[1] + cj) * cells_[2] + ck);
        for (std::uint64_t p = start_[cell]; p < start_[cell + 1]; ++p) {
          const double x = pos.at(p, 0) + sx - centre[0];
          const double y = pos.at(p, 1) + sy - centre[1];
          const double z = pos.at(p, 2) + sz - centre[2];
          if (x >= -half[0] && x < half[0] && y >= -half[1] && y < half[1] && z >= -half[2] && z < half[2])
            f(x, y, z, has_mass ? mass_[p] : 0.0);
        }
      }
    }
  }
}

}  // namespace phew::grid
