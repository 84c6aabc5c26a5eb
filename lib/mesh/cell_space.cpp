#include <phew/mesh/cell_space.hpp>

#include <phew/mesh/cell_key.hpp>
#include <phew/mesh/octree.hpp>
#include <phew/mesh/octree_mesh.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace phew::mesh {

CellSpace::CellSpace(const grid::GridGeometry& grid, int levels)
    : grid_(grid), levels_(levels), finest_(grid, std::max(levels, 0)) {
  for (std::size_t l = 0; l < level_volume_.size(); ++l)
    level_volume_[l] = grid_.cell_volume() / static_cast<double>(std::int64_t{1} << (3 * l));
}

std::array<double, 3> CellSpace::centre(std::int64_t cell) const {
  if (!adaptive()) return grid_.centre(grid_.cell_at(cell));
  const Cell c = cell_of_key(static_cast<std::uint64_t>(cell), levels_);
  const auto h = grid_.cell_size();
  const double per = static_cast<double>(std::int64_t{1} << c.level);
  std::array<double, 3> x{};
  for (std::size_t d = 0; d < 3; ++d) x[d] = grid_.origin[d] + (static_cast<double>(c.index[d]) + 0.5) * (h[d] / per);
  return x;
}

std::int64_t CellSpace::chunk_begin(std::int64_t cell) const {
  if (!adaptive()) {
    const std::int64_t pencil = grid_.shape[2];
    return cell / pencil * pencil;
  }
  return static_cast<std::int64_t>(subtree_begin(static_cast<std::uint64_t>(cell), levels_));
}

std::int64_t CellSpace::chunk(std::int64_t cell) const {
  if (!adaptive()) return cell / grid_.shape[2];
  return chunk_begin(cell) >> (3 * levels_ + 4);  // the coarse cell's Morton code
}

std::vector<std::int64_t> CellSpace::rank_cuts(int ranks, std::uint64_t rows,
                                               const std::function<std::uint64_t(std::uint64_t)>& key_at) const {
  // Past every cell: the uniform grid's cell count, or past every key (keys are below 2^61).
  const std::int64_t end =
      adaptive() ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(grid_.cells());
  std::vector<std::int64_t> cut(static_cast<std::size_t>(ranks) + 1, 0);
  cut.back() = end;
  for (std::size_t r = 1; r + 1 < cut.size(); ++r) {
    const std::uint64_t row = rows * r / static_cast<std::uint64_t>(ranks);
    // The cut moves back to the start of the chunk that row's cell lies in: chunks are never split.
    const std::int64_t at = row < rows ? chunk_begin(static_cast<std::int64_t>(key_at(row))) : end;
    cut[r] = std::max(cut[r - 1], at);
  }
  return cut;
}

int CellSpace::owner(const std::vector<std::int64_t>& cuts, std::int64_t index) {
  return static_cast<int>(std::upper_bound(cuts.begin(), cuts.end(), index) - cuts.begin()) - 1;
}

std::int64_t CellSpace::point(const double x[3]) const {
  if (!adaptive()) {
    const auto c = grid::cell_of(grid_, x);
    return c ? grid_.linear(*c) : -1;
  }
  // The finest lattice cell of the point, as the deposit places particles.
  const auto u = finest_.position({x[0], x[1], x[2]});
  std::array<std::int64_t, 3> i{};
  for (std::size_t d = 0; d < 3; ++d) {
    i[d] = static_cast<std::int64_t>(std::floor(u[d]));
    if (i[d] < 0 || i[d] >= grid_.shape[d] << levels_) return -1;  // outside an open grid
  }
  return static_cast<std::int64_t>(point_key(i[0], i[1], i[2]));
}

std::size_t CellSpace::find(std::span<const std::int64_t> cells, std::int64_t point) const {
  if (point < 0) return cells.size();
  if (!adaptive()) {
    const auto it = std::lower_bound(cells.begin(), cells.end(), point);
    return it != cells.end() && *it == point ? static_cast<std::size_t>(it - cells.begin()) : cells.size();
  }
  // The last cell whose key is not after the point: the only one that can hold it (leaves do not overlap).
  const auto it = std::upper_bound(cells.begin(), cells.end(), point);
  if (it == cells.begin()) return cells.size();
  const auto at = static_cast<std::size_t>(it - cells.begin()) - 1;
  return key_contains(static_cast<std::uint64_t>(cells[at]), static_cast<std::uint64_t>(point), levels_) ? at
                                                                                                         : cells.size();
}

}  // namespace phew::mesh
