// mergertree: batch and on-the-fly merger trees of density peaks (docs/tools/mergertree.md).
#pragma once

#include <phew/mergertree/tree.hpp>
#include <phew/tool/tool.hpp>

#include <string>
#include <vector>

namespace phew::tools {

struct TreeOptions {
  std::vector<std::string> stages;  // PEAKS[:VOTERS], in time order
  std::string state;                // --state tree.h5: continue this tree (on-the-fly)
  std::vector<std::string> add;     // --add STAGE (with --state)
  std::int64_t min_votes = 15;
  std::int64_t graveyard_votes = 10;
  std::int64_t graveyard_max_age = 10;
  bool backwards = false;
  bool export_text = false;
  std::string export_ctrees;  // DIR: DIR/tree_0_0_0.dat
  std::string export_arbor;   // DIR: DIR/arbor.h5 and DIR/arbor_0000.h5 (ytree's own format)
  std::string stats;          // FILE.json: tree-quality statistics
  double stats_min_mass = 0;
  bool particles = false;  // spherical-overdensity masses and radii from each stage's snapshot
  std::string units;       // --units of the stages' snapshots (tool/snapshot_input.hpp)
  std::string threads = "auto";
};

void declare_tree_options(CLI::App& app, TreeOptions& opt);
// The tree's parameters (a continued tree keeps its own). Throws Error(usage); pure.
mergertree::TreeParams check_tree_options(const TreeOptions& opt);
void run_mergertree(const TreeOptions& opt, tool::Context& ctx);

}  // namespace phew::tools
