// The rows of a segmentation (phew-segment's result; patches.h5, lib/io/patches_file.hpp): the peaks of
// the density, the saddles between their patches and the label of every test cell.
#pragma once

#include <phew/grid/cell_labels.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/model/amr.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace phew::model {

// A density peak and its patch (/peaks).
struct PatchPeak {
  std::int64_t id = 0;
  std::int64_t cell = 0;  // global index of the peak cell
  std::array<double, 3> position{};
  double density = 0;
  std::int64_t n_cells = 0;
  double mass = 0;
};

// The saddle of two touching patches (/saddles): peak_a < peak_b, the densest point of their boundary.
struct SaddleRow {
  std::int64_t peak_a = 0, peak_b = 0;
  double density = 0;
  std::int64_t cell_a = 0, cell_b = 0;  // where it is reached: cell_a in patch peak_a, cell_b in peak_b
};

struct PatchesMeta {
  double threshold = 0;        // absolute, grid density units
  std::string threshold_text;  // as given: "80mean"
  std::uint64_t n_test_cells = 0;
  bool refined_positions = false;
};

// The whole product, as one rank holds it: the labels of the test cells in its planes and its rows of the
// tables (which follow the rows of lower ranks).
struct Patches {
  grid::GridMeta grid;
  PatchesMeta meta;
  std::optional<AmrRefinement> refinement;  // on an adaptive mesh: cells are leaf keys (lib/mesh/cell_key.hpp)
  grid::CellLabels cells;                   // this rank's test cells and the peak ID of each
  // The density of each of those cells, as the watershed saw it (as the grid stores it: float32 when
  // `density_float32`), so that the stages after need not read the grid for them.
  std::vector<double> cell_density;
  bool density_float32 = false;
  std::vector<PatchPeak> peaks;
  std::vector<SaddleRow> saddles;
};

// What a reader of the product knows before its rows: the grid, the segmentation and the table sizes.
struct PatchesHeader {
  grid::GridMeta grid;
  PatchesMeta meta;
  std::optional<AmrRefinement> refinement;  // on an adaptive mesh
  std::uint64_t n_peaks = 0, n_saddles = 0;
};

}  // namespace phew::model
