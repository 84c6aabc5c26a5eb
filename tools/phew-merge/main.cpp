#include "phew_merge.hpp"

int main(int argc, char** argv) {
  const phew::ToolSpec spec{"phew-merge", "Noise removal, saddle hierarchy, clumps and haloes from peak patches",
                            "phew-merge patches.h5 -o clumps.h5 --relevance 2 --saddle-threshold 200mean", "clumps"};
  phew::MergeOptions opt;
  return phew::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::declare_merge_options(app, opt); },
      [&](phew::Context& ctx) { phew::run_phew_merge(opt, ctx); });
}
