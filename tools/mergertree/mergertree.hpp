// mergertree: batch and on-the-fly merger trees of density peaks (docs/tools/mergertree.md).
#pragma once

#include "mergertree/tree.hpp"
#include "tool/tool.hpp"

#include <string>
#include <vector>

namespace phew {

struct TreeOptions {
  std::vector<std::string> stages;  // PEAKS[:VOTERS], in time order
  std::string state;                // --state tree.h5: continue this tree (on-the-fly)
  std::vector<std::string> add;     // --add STAGE (with --state)
  std::int64_t min_votes = 15;
  std::int64_t graveyard_votes = 10;
  std::int64_t graveyard_max_age = 10;
  bool backwards = false;
  bool export_text = false;
};

void declare_tree_options(CLI::App& app, TreeOptions& opt);
// The tree's parameters (a continued tree keeps its own). Throws Error(usage); pure.
TreeParams check_tree_options(const TreeOptions& opt);
void run_mergertree(const TreeOptions& opt, Context& ctx);

}  // namespace phew
