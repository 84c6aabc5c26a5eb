// voters: the most-bound particles of each peak with the boosted potential (docs/tools/voters.md).
#pragma once

#include "tool/tool.hpp"

#include <string>

namespace phew {

struct VotersOptions {
  std::string peaks;
  std::string snapshot;
  std::int64_t n_voters = 20;
  double search_radius = 0;  // 0: automatic
  double min_radius = 0;
  std::string potential = "auto";  // auto | snapshot | compute
  std::int64_t pm_mesh = 0;  // 0: automatic
  double theta = 0.5;
  double softening = -1;  // < 0: a tenth of a grid cell
  std::string types = "auto";
  bool no_boost = false;
};

void declare_voters_options(CLI::App& app, VotersOptions& opt);
void run_voters(const VotersOptions& opt, Context& ctx);

}  // namespace phew
