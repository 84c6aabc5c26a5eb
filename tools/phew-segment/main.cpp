#include "phew_segment.hpp"

int main(int argc, char** argv) {
  const phew::tool::ToolSpec spec{"phew-segment",
                                  "Watershed segmentation of a density grid into peak patches and saddles",
                                  "phew-segment grid.h5 -o patches.h5 --threshold 80mean", "patches"};
  phew::tools::SegmentOptions opt;
  return phew::tool::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::tools::declare_segment_options(app, opt); },
      [&](phew::tool::Context& ctx) { phew::tools::run_phew_segment(opt, ctx); });
}
