#include "voters.hpp"

int main(int argc, char** argv) {
  const phew::tool::ToolSpec spec{"voters", "The most-bound particles of each peak, in the boosted potential",
                                  "voters peaks.h5 snap_010.hdf5 -o voters.h5 --n-voters 20 --search-radius 20",
                                  "voters"};
  phew::tools::VotersOptions opt;
  return phew::tool::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::tools::declare_voters_options(app, opt); },
      [&](phew::tool::Context& ctx) { phew::tools::run_voters(opt, ctx); });
}
