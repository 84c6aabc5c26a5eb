// clumps.h5 (phew-merge): peaks with their relevance and clump, the clump and halo catalogues, the
// merger hierarchy and the clump and halo of every test cell (docs/formats.md). Tables are written distributed:
// each rank passes its rows, which follow the rows of lower ranks.
#pragma once

#include <phew/grid/cell_labels.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/mpi/slab.hpp>

#include <array>
#include <map>
#include <optional>

namespace phew::io {

using Vec3 = std::array<double, 3>;

// A peak of patches.h5 after noise removal (/peaks).
struct MergedPeak {
  std::int64_t id = 0;
  double relevance = 0;      // peak density / key saddle (or / the density threshold when isolated)
  double key_saddle = 0;     // 0 when isolated
  std::int64_t key_neighbour = 0;
  std::int64_t clump = 0;    // level-0 clump after noise removal; 0 = discarded
};
const Table<MergedPeak>& merged_peak_table();

// A level-0 clump (/clumps). The particle columns are written with --particles only.
struct Clump {
  std::int64_t id = 0, level = 0, parent = 0, halo = 0, n_cells = 0;
  double mass = 0;
  Vec3 peak_position{};
  double peak_density = 0, saddle_density = 0, mean_density = 0, relevance = 0;
  Vec3 center_of_mass{};
  std::int64_t n_particles = 0;
  double particle_mass = 0;
  Vec3 bulk_velocity{};
};
const Table<Clump>& clump_table();

// A halo: a clump that never merged into another, with everything merged into it (/halos).
struct Halo {
  std::int64_t id = 0, n_cells = 0;
  double mass = 0;
  Vec3 peak_position{};
  double peak_density = 0;  // of its peak (RAMSES' rho+)
  std::int64_t n_clumps = 0;
  std::int64_t n_particles = 0;
  double particle_mass = 0;
  Vec3 bulk_velocity{};
};
const Table<Halo>& halo_table();

// A saddle-threshold merger of the hierarchy (/hierarchy).
struct HierarchyRow {
  std::int64_t clump = 0, into = 0, level = 0;
  double saddle_density = 0;
};
const Table<HierarchyRow>& hierarchy_table();

struct ClumpsMeta {
  double density_threshold = 0;  // from phew-segment
  double relevance = 0;
  std::optional<double> saddle_threshold;  // absolute
  std::string saddle_threshold_text;
  std::optional<double> second_relevance;
  std::optional<double> mass_threshold;  // absolute
  std::string mass_threshold_text;
  bool with_particles = false;
  std::string velocity_units;
};

// The product as one rank holds it: the test cells of its planes with their labels, and its rows of the
// tables.
struct Clumps {
  grid::GridMeta grid;
  ClumpsMeta meta;
  std::vector<std::int64_t> cells;                  // this rank's test cells: global indices, ascending
  std::vector<std::int64_t> cell_clump, cell_halo;  // one per test cell; 0 = discarded as noise
  std::vector<MergedPeak> peaks;
  std::vector<Clump> clumps;
  std::vector<Halo> halos;
  std::vector<HierarchyRow> hierarchy;
};

// Collective.
void write_clumps(File& file, const Clumps& clumps, const mpi::SlabDecomposition& slabs, const mpi::Comm& comm);

// Refuses a file of another format version.
struct ClumpsHeader {
  grid::GridMeta grid;
  double density_threshold = 0;  // of the segmentation
  std::uint64_t n_peaks = 0, n_clumps = 0, n_halos = 0;
};
ClumpsHeader read_clumps_header(const File& file);
// The whole clump table (small: one row per level-0 clump).
std::vector<Clump> read_clumps(const File& file);
// The test cells of planes [x0, x1) with their level-0 clump (or halo); 0 = discarded as noise.
grid::CellLabels read_clump_cells(const File& file, const grid::GridGeometry& grid, std::int64_t x0, std::int64_t x1);
grid::CellLabels read_halo_cells(const File& file, const grid::GridGeometry& grid, std::int64_t x0, std::int64_t x1);
// The peak positions of the clumps among `ids` (sorted) that are in the catalogue, read in chunks so
// that no rank holds the whole catalogue (deblend).
std::map<std::int64_t, std::array<double, 3>> read_clump_peak_positions(const File& file,
                                                                        const std::vector<std::int64_t>& ids);

// The haloes' centres (dtfe-surface maps around them).
struct HaloCentre {
  std::int64_t id = 0;
  double mass = 0;                   // snapshot mass units
  std::array<double, 3> position{};  // the halo's peak position, snapshot length units
};

// The haloes of a clumps.h5, most massive first (ties: the lower ID first). Throws Error(input) naming
// the file when its halo table is missing or its columns differ in length. Not collective.
std::vector<HaloCentre> read_halo_centres(const File& file);

// The catalogues as text for people and spreadsheets: clumps and haloes in RAMSES' clump finder's
// layout (.txt: its header line and columns, then a "# units" line, then phew's extra columns: n_clumps of
// a halo, and n_particles and bulk_velocity_x/y/z when meta.with_particles; docs/formats.md lists the
// differences), and as CSV. `clumps` and `halos` are every row. Each entry: (suffix, text), e.g.
// (".clumps.txt", ...), written beside the output as OUTPUT.clumps.txt.
std::vector<std::pair<std::string, std::string>> catalogue_text(const std::vector<Clump>& clumps,
                                                                const std::vector<Halo>& halos, const grid::GridMeta& grid,
                                                                const ClumpsMeta& meta);

}  // namespace phew::io
