// deblend: velocity deblending of the level-0 clumps of phew-merge (docs/tools/deblend.md).
#pragma once

#include <phew/phasespace/deblend.hpp>
#include <phew/tool/tool.hpp>

#include <string>

namespace phew::tools {

struct DeblendOptions {
  std::string clumps;
  std::string snapshot;
  std::string units;  // --units (tool/snapshot_input.hpp)
  double bin_fraction = 0.25;
  std::int64_t min_particles = 20;
  double velocity_relevance = 3;
  std::string types = "auto";
  bool allow_other_types = false;
  bool off = false;
  std::string threads = "auto";
};

void declare_deblend_options(CLI::App& app, DeblendOptions& opt);
// The options as the stage's parameters (G and the scale factor come from the snapshot). Throws
// Error(usage); pure.
phasespace::DeblendParams check_deblend_options(const DeblendOptions& opt);
void run_deblend(const DeblendOptions& opt, tool::Context& ctx);

}  // namespace phew::tools
