// phew-segment: watershed segmentation and saddle search (docs/tools/phew-segment.md).
#pragma once

#include <phew/core/quantity.hpp>
#include <phew/tool/tool.hpp>

#include <string>

namespace phew::tools {

struct SegmentOptions {
  std::string grid;
  std::string threshold;
  bool refine_positions = false;
  std::string mean_from;  // GRID: "mean" thresholds use its mean density (a series of an open box)
  std::string threads = "auto";
};

// The options in checked form. The stage's watershed::SegmentParams is made from it once the grid is
// read (the threshold resolved against the grid's mean or critical density).
struct PhewSegmentParams {
  core::DensityThreshold threshold;
  bool refine_positions = false;
  int threads = 0;  // 0: auto
};

void declare_segment_options(CLI::App& app, SegmentOptions& opt);
PhewSegmentParams check_segment_options(const SegmentOptions& opt);  // throws Error(usage); pure
void run_phew_segment(const SegmentOptions& opt, tool::Context& ctx);

}  // namespace phew::tools
