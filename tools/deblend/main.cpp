#include "deblend.hpp"

int main(int argc, char** argv) {
  const phew::ToolSpec spec{"deblend", "Split peak patches that overlap in space but not in velocity",
                            "deblend clumps.h5 snap_010.hdf5 -o peaks.h5 --bin-fraction 0.25", "peaks"};
  phew::DeblendOptions opt;
  return phew::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::declare_deblend_options(app, opt); },
      [&](phew::Context& ctx) { phew::run_deblend(opt, ctx); });
}
