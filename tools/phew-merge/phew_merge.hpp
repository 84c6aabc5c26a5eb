// phew-merge: relevance noise removal, saddle-threshold merging, clump and halo catalogues
// (docs/tools/phew-merge.md).
#pragma once

#include <phew/core/quantity.hpp>
#include <phew/tool/tool.hpp>
#include <phew/watershed/catalogue.hpp>

#include <optional>
#include <string>

namespace phew::tools {

struct MergeOptions {
  std::string patches;
  std::string grid;  // default: the grid recorded in the patches manifest
  double relevance = watershed::kDefaultRelevance;
  std::string saddle_threshold;  // empty: kDefaultSaddleThreshold, unless --second-relevance; "none": no hierarchy
  double second_relevance = 0;
  std::string mass_threshold;
  std::string noise_floor;  // empty: kDefaultNoiseFloor; "none": no floor
  std::string particles;
  std::string units;  // --units (tool/snapshot_input.hpp)
  std::string types = "auto";
  bool allow_other_types = false;
  bool export_text = false;
  std::string threads = "auto";
};

// The options in checked form (thresholds still to be resolved against the grid).
struct MergeParams {
  double relevance = watershed::kDefaultRelevance;
  std::optional<core::DensityThreshold> saddle;
  std::optional<double> second_relevance;
  std::optional<core::MassThreshold> mass;
  std::optional<core::MassThreshold> noise_floor;
  int threads = 0;  // 0: auto
};

void declare_merge_options(CLI::App& app, MergeOptions& opt);
MergeParams check_merge_options(const MergeOptions& opt);  // throws Error(usage); pure
void run_phew_merge(const MergeOptions& opt, tool::Context& ctx);

}  // namespace phew::tools
