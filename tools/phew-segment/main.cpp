#include "phew_segment.hpp"

int main(int argc, char** argv) {
  const phew::ToolSpec spec{"phew-segment", "Watershed segmentation of a density grid into peak patches and saddles",
                            "phew-segment grid.h5 -o patches.h5 --threshold 80mean", "patches"};
  phew::SegmentOptions opt;
  return phew::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::declare_segment_options(app, opt); },
      [&](phew::Context& ctx) { phew::run_phew_segment(opt, ctx); });
}
