// The rows of a clump catalogue (phew-merge's result; clumps.h5, lib/io/clumps_file.hpp): peaks with
// their relevance and clump, the clump and halo catalogues, the merger hierarchy and the clump and halo
// of every test cell.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/model/amr.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace phew::model {

// A peak of patches.h5 after noise removal (/peaks).
struct MergedPeak {
  std::int64_t id = 0;
  double relevance = 0;   // peak density / key saddle (or / the density threshold when isolated)
  double key_saddle = 0;  // 0 when isolated
  std::int64_t key_neighbour = 0;
  std::int64_t clump = 0;  // level-0 clump after noise removal; 0 = discarded
};

// A level-0 clump (/clumps). The particle columns are written with --particles only.
struct Clump {
  std::int64_t id = 0, level = 0, parent = 0, halo = 0, n_cells = 0;
  double mass = 0;
  std::array<double, 3> peak_position{};
  double peak_density = 0, saddle_density = 0, mean_density = 0, relevance = 0;
  std::array<double, 3> center_of_mass{};
  std::int64_t n_particles = 0;
  double particle_mass = 0;
  std::array<double, 3> bulk_velocity{};
};

// A halo: a clump that never merged into another, with everything merged into it (/halos).
struct Halo {
  std::int64_t id = 0, n_cells = 0;
  double mass = 0;
  std::array<double, 3> peak_position{};
  double peak_density = 0;  // of its peak (RAMSES' rho+)
  std::int64_t n_clumps = 0;
  std::int64_t n_particles = 0;
  double particle_mass = 0;
  std::array<double, 3> bulk_velocity{};
};

// A saddle-threshold merger of the hierarchy (/hierarchy).
struct HierarchyRow {
  std::int64_t clump = 0, into = 0, level = 0;
  double saddle_density = 0;
};

struct ClumpsMeta {
  double density_threshold = 0;  // from phew-segment
  double relevance = 0;
  std::optional<double> saddle_threshold;  // absolute
  std::string saddle_threshold_text;
  std::optional<double> second_relevance;
  std::optional<double> mass_threshold;  // absolute
  std::string mass_threshold_text;
  std::optional<double> noise_floor;  // absolute: peaks lighter than it were noise
  std::string noise_floor_text;
  bool with_particles = false;
  std::string velocity_units;
};

// The product as one rank holds it: the test cells of its planes with their labels, and its rows of the
// tables.
struct Clumps {
  grid::GridMeta grid;
  ClumpsMeta meta;
  std::optional<AmrRefinement> refinement;          // on an adaptive mesh: cells are leaf keys
  std::vector<std::int64_t> cells;                  // this rank's test cells: global indices, ascending
  std::vector<std::int64_t> cell_clump, cell_halo;  // one per test cell; 0 = discarded as noise
  std::vector<MergedPeak> peaks;
  std::vector<Clump> clumps;
  std::vector<Halo> halos;
  std::vector<HierarchyRow> hierarchy;
};

// A halo's centre (dtfe-surface maps around them).
struct HaloCentre {
  std::int64_t id = 0;
  double mass = 0;                   // snapshot mass units
  std::array<double, 3> position{};  // the halo's peak position, snapshot length units
};

}  // namespace phew::model
