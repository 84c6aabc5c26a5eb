// The uniform grid as a mesh for the watershed: this rank's block of cells (mpi::BlockDecomposition) and a shell
// of one ghost cell around it, with the 26 face/edge/corner neighbours of every cell (PHEW Appendix A).
// It is the uniform grid's implementation of the mesh interface of docs/architecture.md ("The mesh"),
// which watershed::WatershedMesh states in code; the octree's is OctreeMesh.
//
// Slots: the block's cells in C order first (local slots [0, local)), so that slot order among them is
// global index order; then the shell's cells (ghosts), in the C order of the block padded by one cell.
// A ghost is a copy of its owner's cell (wrapped when periodic; -inf outside an open grid), kept up to
// date by update_ghost_members with the up to 26 ranks around; a block that spans a periodic axis is its
// own neighbour there.
#pragma once

#include <phew/core/raw_vector.hpp>
#include <phew/grid/cell_set.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mpi/blocks.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace phew::mesh {

// Real: how the densities are held, float for a float32 grid (read as stored: half the memory, and
// density() gives the same double a float64 copy would) or double.
template <typename Real>
class BasicBlockMesh {
 public:
  // `block`: this rank's cells (blocks.box(comm.rank())) in C order. The ghosts are fetched from their
  // owners and appended: give `block` the capacity for them (shell_cells) and it is never copied.
  // Collective.
  BasicBlockMesh(const grid::GridGeometry& grid, const mpi::BlockDecomposition& blocks, core::RawVector<Real> block,
                 const mpi::Comm& comm);
  // The ghosts around a box: the shell of one cell.
  static std::size_t shell_cells(const mpi::BlockDecomposition::Box& box) {
    const auto n = box.size();
    if (box.cells() == 0) return 0;
    return static_cast<std::size_t>((n[0] + 2) * (n[1] + 2) * (n[2] + 2) - box.cells());
  }

  const grid::GridGeometry& grid() const { return grid_; }
  std::size_t slots() const { return density_.size(); }
  std::size_t first_local() const { return 0; }
  std::size_t end_local() const { return local_; }
  bool is_local(std::size_t s) const { return s < local_; }
  // Local cells on the block's faces: other ranks' ghosts (or its own, across a periodic axis).
  bool is_boundary(std::size_t s) const {
    if (s >= local_) return false;
    const auto c = local_cell(s);
    return c[0] == 0 || c[1] == 0 || c[2] == 0 || c[0] == n_[0] - 1 || c[1] == n_[1] - 1 || c[2] == n_[2] - 1;
  }
  double density(std::size_t s) const { return density_[s]; }
  // The cell's linear index on the grid (C order), -1 for a ghost outside an open grid.
  std::int64_t global_index(std::size_t s) const {
    if (s >= local_) return ghost_cell_[s - local_];
    if (whole_planes_) return first_cell_ + static_cast<std::int64_t>(s);
    const auto c = local_cell(s);
    return grid::linear_index(lo_[0] + c[0], lo_[1] + c[1], lo_[2] + c[2], shape_[1], shape_[2]);
  }
  std::array<std::int64_t, 3> cell(std::size_t s) const;  // global (i, j, k), wrapped

  // Calls f(neighbour slot) for each distinct neighbour of a local slot inside the grid.
  template <typename F>
  void for_each_neighbour(std::size_t s, F&& f) const {
    const auto c = local_cell(s);
    // Most cells are inside the block: their 26 neighbours are fixed slot offsets.
    if (c[0] > 0 && c[1] > 0 && c[2] > 0 && c[0] < n_[0] - 1 && c[1] < n_[1] - 1 && c[2] < n_[2] - 1) {
      for (const std::int64_t o : offsets_) f(static_cast<std::size_t>(static_cast<std::int64_t>(s) + o));
      return;
    }
    const std::int64_t self = global_index(s);
    for (std::int64_t di = -1; di <= 1; ++di)
      for (std::int64_t dj = -1; dj <= 1; ++dj)
        for (std::int64_t dk = -1; dk <= 1; ++dk) {
          if (di == 0 && dj == 0 && dk == 0) continue;
          const std::size_t n = slot_at({c[0] + di, c[1] + dj, c[2] + dk});
          // On grids of 1 or 2 cells in an axis a ghost can be the cell itself or repeat a neighbour;
          // repeats are harmless to the maxima the watershed takes, the cell itself is skipped.
          if (density_[n] == -std::numeric_limits<Real>::infinity() || (n >= local_ && ghost_cell_[n - local_] == self))
            continue;
          f(n);
        }
  }

  // The 3x3x3 densities around a local slot, index (dx+1)*9 + (dy+1)*3 + (dz+1); nullopt when part of
  // it lies outside a non-periodic grid.
  std::optional<std::array<double, 27>> neighbourhood(std::size_t s) const;

  // Ghost members of `members` get the values their owners hold for those cells; `values` has one per
  // member (ghosts too), in slot order. A ghost cell is a member on its owner too (the same density
  // decides), so only members' values travel. Collective.
  void update_ghost_members(const grid::CellSet& members, std::vector<std::int64_t>& values,
                            const mpi::Comm& comm) const;

 private:
  // Cell (i, j, k) of the block (0 <= i < n_[0], ...) of a local slot.
  std::array<std::int64_t, 3> local_cell(std::size_t s) const {
    const auto v = static_cast<std::int64_t>(s);
    const std::int64_t row = v / n_[2];
    return {row / n_[1], row % n_[1], v - row * n_[2]};
  }
  // The slot of a cell of the padded block (-1 <= i <= n_[0], ...).
  std::size_t slot_at(const std::array<std::int64_t, 3>& c) const;

  grid::GridGeometry grid_;
  mpi::Extent3 shape_, lo_, n_;  // the grid; the block's first cell and its size
  std::size_t local_;
  bool whole_planes_;                       // the block spans y and z: a local slot is its cell's offset from the first
  std::int64_t first_cell_;                 // the global index of local slot 0
  std::array<std::int64_t, 26> offsets_{};  // slot offsets of the 26 neighbours of an inner cell
  core::RawVector<Real> density_;           // local cells, then ghosts
  std::vector<std::int64_t> ghost_cell_;    // per ghost: its global index, -1 outside an open grid
  // The ghost exchange, grouped by rank (offsets per rank, and one past): the local slots each rank
  // holds as ghosts, in its ghost order; the ghost slots this rank holds of each owner, in ghost order.
  std::vector<std::size_t> send_slot_, send_at_, receive_slot_, receive_at_;
};

using BlockMesh = BasicBlockMesh<double>;
using BlockMesh32 = BasicBlockMesh<float>;
extern template class BasicBlockMesh<double>;
extern template class BasicBlockMesh<float>;

}  // namespace phew::mesh
