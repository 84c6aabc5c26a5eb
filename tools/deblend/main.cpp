#include "deblend.hpp"

int main(int argc, char** argv) {
  const phew::tool::ToolSpec spec{"deblend", "Split peak patches that overlap in space but not in velocity",
                                  "deblend clumps.h5 snap_010.hdf5 -o peaks.h5 --bin-fraction 0.25", "peaks"};
  phew::tools::DeblendOptions opt;
  return phew::tool::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::tools::declare_deblend_options(app, opt); },
      [&](phew::tool::Context& ctx) { phew::tools::run_deblend(opt, ctx); });
}
