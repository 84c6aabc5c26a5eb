#include "dtfe_surface.hpp"

int main(int argc, char** argv) {
  const phew::tool::ToolSpec spec{
      "dtfe-surface", "DTFE surface-density maps around listed centres (Delaunay, exact ray marching)",
      "dtfe-surface snap_010.hdf5 -o maps.h5 --centers clumps.h5 --top 100 --size 2000 --resolution 512", "maps"};
  phew::tools::DtfeOptions opt;
  return phew::tool::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::tools::declare_dtfe_options(app, opt); },
      [&](phew::tool::Context& ctx) { phew::tools::run_dtfe_surface(opt, ctx); });
}
