// The uniform grid as a mesh for the watershed: this rank's slab of planes [x0, x1) plus one ghost
// plane on each side, with the 26 face/edge/corner neighbours of every cell (PHEW Appendix A). It is
// the first implementation of the mesh interface of docs/architecture.md ("The mesh"), which
// watershed::WatershedMesh states in code.
#pragma once

#include <phew/grid/cell_set.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/slab.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace phew::mesh {

// Real: how the densities are held, float for a float32 grid (read as stored: half the memory, and
// density() gives the same double a float64 copy would) or double.
template <typename Real>
class BasicSlabMesh {
 public:
  // `density` holds planes x0-1 .. x1 (wrapped when periodic; -inf outside a non-periodic grid),
  // ny*nz values each, C order.
  BasicSlabMesh(const grid::GridGeometry& grid, const mpi::SlabDecomposition& slabs, int rank, std::vector<Real> density);

  const grid::GridGeometry& grid() const { return grid_; }
  std::size_t slots() const { return density_.size(); }
  std::size_t first_local() const { return plane_; }
  std::size_t end_local() const { return density_.size() - plane_; }
  bool is_local(std::size_t s) const { return s >= first_local() && s < end_local(); }
  // Local slots in the first or last local plane: the ghosts of the neighbouring ranks.
  bool is_boundary(std::size_t s) const {
    return is_local(s) && (s < 2 * plane_ || s >= end_local() - plane_);
  }
  double density(std::size_t s) const { return density_[s]; }
  // The cell's linear index on the grid: its plane (the ghost planes wrap by one grid) and its place in
  // the plane. Asked per test cell and per saddle candidate, so one division, inline.
  std::int64_t global_index(std::size_t s) const {
    const auto q = static_cast<std::int64_t>(s / plane_);
    std::int64_t i = x0_ - 1 + q;
    if (i < 0) i += grid_.shape[0];
    else if (i >= grid_.shape[0]) i -= grid_.shape[0];
    const auto plane = static_cast<std::int64_t>(plane_);
    return i * plane + (static_cast<std::int64_t>(s) - q * plane);
  }
  // Decomposition-independent piece of the domain a local slot belongs to (its x-plane).
  std::int64_t chunk(std::size_t s) const { return x0_ + static_cast<std::int64_t>(s / plane_) - 1; }
  std::array<std::int64_t, 3> cell(std::size_t s) const;  // global (i, j, k), wrapped

  // Calls f(neighbour slot) for each distinct neighbour of a local slot inside the grid.
  template <typename F>
  void for_each_neighbour(std::size_t s, F&& f) const {
    const auto r = static_cast<std::int64_t>(s % plane_);
    const std::int64_t j = r / nz_, k = r % nz_;
    // Most cells are away from the y and z faces: their 26 neighbours are fixed slot offsets.
    if (!tiny_x_ && j > 0 && j < ny_ - 1 && k > 0 && k < nz_ - 1) {
      for (const std::int64_t o : offsets_) {
        const std::size_t n = static_cast<std::size_t>(static_cast<std::int64_t>(s) + o);
        if (density_[n] != -std::numeric_limits<Real>::infinity()) f(n);
      }
      return;
    }
    const auto p = static_cast<std::int64_t>(s / plane_);
    for (std::int64_t dp = -1; dp <= 1; ++dp)
      for (std::int64_t dj = -1; dj <= 1; ++dj) {
        std::int64_t jj = j + dj;
        if (jj < 0 || jj >= ny_) {
          if (!grid_.periodic) continue;
          jj = jj < 0 ? jj + ny_ : jj - ny_;
        }
        for (std::int64_t dk = -1; dk <= 1; ++dk) {
          if (dp == 0 && dj == 0 && dk == 0) continue;
          std::int64_t kk = k + dk;
          if (kk < 0 || kk >= nz_) {
            if (!grid_.periodic) continue;
            kk = kk < 0 ? kk + nz_ : kk - nz_;
          }
          const std::size_t n = static_cast<std::size_t>((p + dp) * static_cast<std::int64_t>(plane_) + jj * nz_ + kk);
          // On grids of 1 or 2 cells in an axis a neighbour can be the cell itself or repeat; repeats are
          // harmless to the maxima the watershed takes, the cell itself is skipped.
          if (n == s || density_[n] == -std::numeric_limits<Real>::infinity()) continue;
          if (tiny_x_ && global_index(n) == global_index(s)) continue;
          f(n);
        }
      }
  }

  // The 3x3x3 densities around a local slot, index (dx+1)*9 + (dy+1)*3 + (dz+1); nullopt when part of
  // it lies outside a non-periodic grid.
  std::optional<std::array<double, 27>> neighbourhood(std::size_t s) const;

  // Ghost members of `members` get the values their owners hold for those cells; `values` has one per
  // member (ghosts too), in slot order. A ghost cell is a member on its owner too (the same density
  // decides), so a plane travels as its members' values only. Collective.
  void update_ghost_members(const grid::CellSet& members, std::vector<std::int64_t>& values, const mpi::Comm& comm) const;

 private:
  grid::GridGeometry grid_;
  const mpi::SlabDecomposition& slabs_;
  std::int64_t x0_, x1_, ny_, nz_;
  std::size_t plane_;
  bool tiny_x_;  // nx <= 2: ghost planes may be local planes again
  std::array<std::int64_t, 26> offsets_{};  // slot offsets of the 26 neighbours of an interior cell
  std::vector<Real> density_;
};

using SlabMesh = BasicSlabMesh<double>;
using SlabMesh32 = BasicSlabMesh<float>;
extern template class BasicSlabMesh<double>;
extern template class BasicSlabMesh<float>;

}  // namespace phew::mesh
