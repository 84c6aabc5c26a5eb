#include "cic_project.hpp"

int main(int argc, char** argv) {
  const phew::tool::ToolSpec spec{"cic-project",
                                  "Deposit particles on a uniform grid (CIC, NGP or TSC) and write density",
                                  "cic-project snap_010.hdf5 -o grid.h5 --grid 256 --types 1", "grid"};
  phew::tools::CicOptions opt;
  return phew::tool::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::tools::declare_cic_options(app, opt); },
      [&](phew::tool::Context& ctx) { phew::tools::run_cic_project(opt, ctx); });
}
