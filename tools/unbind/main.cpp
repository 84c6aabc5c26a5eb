#include "unbind.hpp"

int main(int argc, char** argv) {
  const phew::tool::ToolSpec spec{"unbind",
                                  "Unbind the clumps of a catalogue and measure their halo properties",
                                  "unbind clumps.h5 snap_010.hdf5 -o bound.h5 --export-yt halos.0.h5",
                                  "bound",
                                  {},
                                  {"--export-yt"}};
  phew::tools::UnbindOptions opt;
  return phew::tool::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::tools::declare_unbind_options(app, opt); },
      [&](phew::tool::Context& ctx) { phew::tools::run_unbind(opt, ctx); });
}
