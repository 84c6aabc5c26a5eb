// The cells of a segmentation as the stages after the watershed see them (phew-merge's sums, its
// particles): every cell has one global index, the uniform grid's linear index or an octree leaf's key
// (cell_key.hpp), and from it a volume, a centre and a chunk (where the ranks' runs of cells may begin:
// a pencil of the uniform grid, the nz cells of one (i, j), or a coarse cell of the octree and its
// subtree). Both orders list a chunk's cells contiguously, so a rank's cells are one range of global
// indices. Chunks are small so that ranks may far outnumber the planes.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/mesh/cell_key.hpp>
#include <phew/mesh/level_lattice.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace phew::mesh {

class CellSpace {
 public:
  static CellSpace uniform(const grid::GridGeometry& grid) { return CellSpace(grid, -1); }
  static CellSpace octree(const grid::GridGeometry& coarse, int levels) { return CellSpace(coarse, levels); }

  bool adaptive() const { return levels_ >= 0; }
  int levels() const { return levels_; }
  const grid::GridGeometry& grid() const { return grid_; }  // the coarse grid of an octree

  // A cell's level: an octree leaf's (its key's low 4 bits), 0 on the uniform grid.
  int level(std::int64_t cell) const { return adaptive() ? static_cast<int>(cell & 0xF) : 0; }
  // The volume of a cell of a level (the coarse one over 8^level), and of a cell. Tabled: the per-cell
  // sums ask for every test cell's.
  double level_volume(int level) const { return level_volume_[static_cast<std::size_t>(level)]; }
  double volume(std::int64_t cell) const { return level_volume(level(cell)); }
  std::array<double, 3> centre(std::int64_t cell) const;
  std::int64_t chunk(std::int64_t cell) const;
  // The first global index of the chunk `cell` lies in (its pencil, or its coarse cell's subtree).
  std::int64_t chunk_begin(std::int64_t cell) const;

  // Where each rank's cells begin as global indices: cut[r] for rank r, cut[ranks] past the last. Whole
  // chunks, cut so that the ranks hold the same number of `rows` (test cells, or leaves: the work, as
  // RAMSES cuts its Hilbert curve) whose global indices `key_at(row)` gives in ascending order (a file
  // read). The same on every rank.
  std::vector<std::int64_t> rank_cuts(int ranks, std::uint64_t rows,
                                      const std::function<std::uint64_t(std::uint64_t)>& key_at) const;
  // The rank whose cells hold a global index or a point (cuts from rank_cuts).
  static int owner(const std::vector<std::int64_t>& cuts, std::int64_t index);

  // Where a position lies, as a global index that `find` looks up among cells: the uniform grid's cell,
  // or the octree's finest-lattice point (point_key). -1 outside an open grid.
  std::int64_t point(const double x[3]) const;
  // The position in `cells` (ascending global indices) of the cell holding `point`, or cells.size().
  std::size_t find(std::span<const std::int64_t> cells, std::int64_t point) const;

 private:
  CellSpace(const grid::GridGeometry& grid, int levels);
  grid::GridGeometry grid_;
  int levels_;           // -1: the uniform grid
  LevelLattice finest_;  // an octree's finest level (point)
  std::array<double, kMaxLevels + 1> level_volume_{};
};

}  // namespace phew::mesh
