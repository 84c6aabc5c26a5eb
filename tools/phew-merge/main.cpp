#include "phew_merge.hpp"

int main(int argc, char** argv) {
  const phew::tool::ToolSpec spec{"phew-merge", "Noise removal, saddle hierarchy, clumps and haloes from peak patches",
                                  "phew-merge patches.h5 -o clumps.h5 --relevance 2 --saddle-threshold 200mean",
                                  "clumps"};
  phew::tools::MergeOptions opt;
  return phew::tool::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::tools::declare_merge_options(app, opt); },
      [&](phew::tool::Context& ctx) { phew::tools::run_phew_merge(opt, ctx); });
}
