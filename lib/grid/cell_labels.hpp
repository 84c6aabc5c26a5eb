// Labels of a few cells of a block (the test cells: those above a density threshold): their global cell
// indices in ascending order and one label each. Every other cell has label 0. This is how patches.h5
// and clumps.h5 store their labels (docs/formats.md) and how the tools hold them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace phew::grid {

struct CellLabels {
  std::vector<std::int64_t> cell;   // global cell index (i*ny + j)*nz + k, ascending
  std::vector<std::int64_t> label;  // one per cell

  std::size_t size() const { return cell.size(); }
  // The position of a global cell index in `cell`, or size() when it is not listed.
  std::size_t find(std::int64_t global) const {
    const auto it = std::lower_bound(cell.begin(), cell.end(), global);
    return it != cell.end() && *it == global ? static_cast<std::size_t>(it - cell.begin()) : cell.size();
  }
  // The label of a cell; 0 when it is not listed.
  std::int64_t at(std::int64_t global) const {
    const std::size_t k = find(global);
    return k < size() ? label[k] : 0;
  }
};

}  // namespace phew::grid
