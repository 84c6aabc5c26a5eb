#include "catalogue_files.hpp"

#include <phew/io/grid_file.hpp>
#include <phew/io/patches_file.hpp>

namespace phew::tools {

model::PatchesHeader CatalogueFiles::header() const { return io::read_patches_header(patches_); }

std::vector<model::PatchPeak> CatalogueFiles::peaks(std::uint64_t begin, std::uint64_t count) const {
  return io::read_patch_peaks(patches_, begin, count);
}

std::vector<model::SaddleRow> CatalogueFiles::saddles(std::uint64_t begin, std::uint64_t count) const {
  return io::read_saddles(patches_, begin, count);
}

grid::CellLabels CatalogueFiles::cells(const grid::GridGeometry& grid, std::int64_t x0, std::int64_t x1) const {
  return io::read_patch_cells(patches_, grid, x0, x1);
}

std::vector<double> CatalogueFiles::densities(const grid::GridGeometry& grid, std::span<const std::int64_t> cells) const {
  return io::read_grid_cells(grid_, grid, cells);
}

}  // namespace phew::tools
