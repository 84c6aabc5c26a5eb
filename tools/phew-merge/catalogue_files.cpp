#include "catalogue_files.hpp"

#include <phew/core/error.hpp>
#include <phew/io/amr_grid_file.hpp>
#include <phew/io/cells_file.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/io/patches_file.hpp>
#include <phew/tool/cells_input.hpp>

#include <algorithm>

namespace phew::tools {

model::PatchesHeader CatalogueFiles::header() const { return io::read_patches_header(patches_); }

std::vector<model::PatchPeak> CatalogueFiles::peaks(std::uint64_t begin, std::uint64_t count) const {
  return io::read_patch_peaks(patches_, begin, count);
}

std::vector<model::SaddleRow> CatalogueFiles::saddles(std::uint64_t begin, std::uint64_t count) const {
  return io::read_saddles(patches_, begin, count);
}

std::vector<std::int64_t> CatalogueFiles::cell_cuts(int ranks) const {
  return tool::patch_cell_cuts(patches_, grid_, header_, ranks);
}

grid::CellLabels CatalogueFiles::cells(std::int64_t begin, std::int64_t end) const {
  return io::read_patch_cells(patches_, begin, end);
}

std::vector<double> CatalogueFiles::densities(std::span<const std::int64_t> cells) const {
  if (!header_.refinement) return io::read_grid_cells(grid_, header_.grid.geometry, cells);
  std::vector<double> out;
  out.reserve(cells.size());
  // The leaves from one test leaf to another 65,536 test leaves on, one read at a time (memory goes
  // with the test cells, not with the rank's leaves), then a search per test leaf.
  constexpr std::size_t kBatch = 1 << 16;
  for (std::size_t b = 0; b < cells.size(); b += kBatch) {
    const auto batch = cells.subspan(b, std::min(kBatch, cells.size() - b));
    const auto leaves = io::read_amr_leaves(grid_, static_cast<std::uint64_t>(batch.front()),
                                            static_cast<std::uint64_t>(batch.back()) + 1);
    for (const std::int64_t c : batch) {
      const auto it = std::lower_bound(leaves.key.begin(), leaves.key.end(), static_cast<std::uint64_t>(c));
      if (it == leaves.key.end() || *it != static_cast<std::uint64_t>(c))
        throw core::Error::input("{}: no leaf {} of the patches' test cells (not the grid they were made from?)",
                                 grid_.path(), c);
      out.push_back(leaves.density[static_cast<std::size_t>(it - leaves.key.begin())]);
    }
  }
  return out;
}

}  // namespace phew::tools
