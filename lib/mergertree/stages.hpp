// A merger tree over files: a stage from the rows of peaks.h5 and voters.h5, the checks between
// stages, and the tree with its state to and from the rows of tree.h5 (lib/io).
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/mergertree/tree.hpp>
#include <phew/model/peaks.hpp>
#include <phew/model/tree.hpp>
#include <phew/model/voters.hpp>

#include <array>
#include <string>
#include <vector>

namespace phew::mergertree {

// What identifies the simulation a stage comes from.
struct Simulation {
  std::array<double, 3> box{};
  std::uint64_t n_particles = 0;  // in the grid: all of them in a periodic box, only those inside a region
  std::string units;
  bool periodic = true;
};
Simulation simulation_of(const grid::GridMeta& grid);

// The simulation's units and cosmology (from a stage's snapshot header), which the exports convert with.
struct SimulationUnits {
  bool known = false;
  double length_cm = 0, mass_g = 0, velocity_cm_per_s = 0;  // one snapshot unit in cgs
  bool h_scaled = false;                                    // lengths and masses are in .../h
  bool comoving = false;                                    // cosmological: time is the scale factor
  double omega_m = 0, omega_lambda = 0, hubble_param = 0;   // 0 without a cosmology
};

// A tree and everything that is stored with it.
struct Tree {
  TreeState state;
  TreeParams params;
  Simulation sim;
  SimulationUnits units;
  std::vector<double> times;       // of the stages so far, in order; the next stage's index is times.size()
  std::vector<double> thresholds;  // their segmentation's density threshold (0 = unknown), for the statistics
  // The types of the peaks' per-type bound properties (BoundProperties::mass_type), the same for every
  // stage with per-type columns; empty: none.
  std::vector<std::string> bound_types;
  std::vector<double> bound_apertures_kpc;  // of the per-type aperture masses
};

// The stage of snapshot index `snap` at `time` from its peaks, membership (sorted by particle ID) and
// voters (by peak, most bound first).
Stage make_stage(std::int64_t snap, double time, const std::vector<model::PeakRow>& peaks,
                 const std::vector<model::PeakMember>& members, const std::vector<model::VoterRow>& voters);

// Links `stage` (of simulation `sim`) to the tree. A stage after the first must come from the same
// simulation (box and units; particle count in a periodic box) and after the previous one in time
// (before it when `backwards`), and its per-type bound properties of the tree's types: Error(input)
// naming `where` otherwise.
void append_stage(Tree& tree, Stage stage, const Simulation& sim, bool backwards, const std::string& where);

model::TreeRows to_tree_rows(const Tree& tree);
Tree from_tree_rows(const model::TreeRows& file);

struct TreeCounts {
  std::int64_t lineages = 0, mergers = 0, revived = 0, artefacts = 0;
};
TreeCounts count(const TreeState& state);

// The plain-text export (docs/formats.md): one line per peak with its links. The Consistent-Trees
// export is in ctrees.hpp.
std::string links_text(const TreeState& state);

}  // namespace phew::mergertree
