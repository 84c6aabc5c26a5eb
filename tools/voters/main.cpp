#include "voters.hpp"

int main(int argc, char** argv) {
  const phew::ToolSpec spec{"voters", "The most-bound particles of each peak, in the boosted potential",
                            "voters peaks.h5 snap_010.hdf5 -o voters.h5 --n-voters 20 --search-radius 20", "voters"};
  phew::VotersOptions opt;
  return phew::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::declare_voters_options(app, opt); },
      [&](phew::Context& ctx) { phew::run_voters(opt, ctx); });
}
