// clumps.h5 (phew-merge): peaks with their relevance and clump, the clump and halo catalogues, the
// merger hierarchy and the clump and halo of every test cell (docs/formats.md). Tables are written distributed:
// each rank passes its rows, which follow the rows of lower ranks.
#pragma once

#include <phew/grid/cell_labels.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/model/clumps.hpp>
#include <phew/mpi/slab.hpp>

#include <array>
#include <map>
#include <optional>

namespace phew::io {

// The columns of each table (the rows are lib/model/clumps.hpp's).
const Table<model::MergedPeak>& merged_peak_table();
const Table<model::Clump>& clump_table();
const Table<model::Halo>& halo_table();
const Table<model::HierarchyRow>& hierarchy_table();

// Collective.
void write_clumps(File& file, const model::Clumps& clumps, const mpi::Comm& comm);

// Refuses a file of another format version.
struct ClumpsHeader {
  grid::GridMeta grid;
  std::optional<model::AmrRefinement> refinement;  // made on an adaptive mesh: cells are leaf keys
  double density_threshold = 0;                    // of the segmentation
  std::uint64_t n_peaks = 0, n_clumps = 0, n_halos = 0;
};
ClumpsHeader read_clumps_header(const File& file);
// The whole peak table (/peaks: every peak of patches.h5 with its level-0 clump).
std::vector<model::MergedPeak> read_merged_peaks(const File& file);
// The whole clump table (small: one row per level-0 clump).
std::vector<model::Clump> read_clumps(const File& file);
// The test cells with global indices (or, on an adaptive mesh, leaf keys) in [begin, end) with their
// level-0 clump (or halo); 0 = discarded as noise.
grid::CellLabels read_clump_cells(const File& file, std::int64_t begin, std::int64_t end);
grid::CellLabels read_halo_cells(const File& file, std::int64_t begin, std::int64_t end);
// The peak positions of the clumps among `ids` (sorted) that are in the catalogue, read in chunks so
// that no rank holds the whole catalogue (deblend).
std::map<std::int64_t, std::array<double, 3>> read_clump_peak_positions(const File& file,
                                                                        const std::vector<std::int64_t>& ids);

// The haloes of a clumps.h5, most massive first (ties: the lower ID first). Throws Error(input) naming
// the file when its halo table is missing or its columns differ in length. Not collective.
std::vector<model::HaloCentre> read_halo_centres(const File& file);

// The catalogues as text for people and spreadsheets: clumps and haloes in RAMSES' clump finder's
// layout (.txt: its header line and columns, then a "# units" line, then phew's extra columns: n_clumps of
// a halo, and n_particles and bulk_velocity_x/y/z when meta.with_particles; docs/formats.md lists the
// differences), and as CSV. `clumps` and `halos` are every row. Each entry: (suffix, text), e.g.
// (".clumps.txt", ...), written beside the output as OUTPUT.clumps.txt.
std::vector<std::pair<std::string, std::string>> catalogue_text(const std::vector<model::Clump>& clumps,
                                                                const std::vector<model::Halo>& halos,
                                                                const grid::GridMeta& grid,
                                                                const model::ClumpsMeta& meta);

}  // namespace phew::io
