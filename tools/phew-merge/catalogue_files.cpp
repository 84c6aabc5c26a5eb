#include "catalogue_files.hpp"

#include <phew/core/error.hpp>

#include <phew/io/cells_file.hpp>
#include <phew/io/patches_file.hpp>
#include <phew/tool/cells_input.hpp>
#include <phew/tool/field_file.hpp>

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
  // The patches' own column (the rows `cells` read), or for older patches the grid's cells.
  if (!cells.empty())
    if (auto stored = io::read_patch_cell_densities(patches_, cells.front(), cells.back() + 1)) {
      if (stored->size() != cells.size())
        throw core::Error::input("{}: /cells/density holds {} rows for {} test cells", patches_.path(), stored->size(),
                                 cells.size());
      return std::move(*stored);
    }
  return tool::read_field_cells(grid_, header_.grid.geometry, header_.refinement, cells);
}

}  // namespace phew::tools
