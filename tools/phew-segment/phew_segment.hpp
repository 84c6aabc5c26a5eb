// phew-segment: watershed segmentation and saddle search (docs/tools/phew-segment.md).
#pragma once

#include "tool/tool.hpp"

#include <string>

namespace phew {

struct SegmentOptions {
  std::string grid;
  std::string threshold;
  bool refine_positions = false;
};

void declare_segment_options(CLI::App& app, SegmentOptions& opt);
void run_phew_segment(const SegmentOptions& opt, Context& ctx);

}  // namespace phew
