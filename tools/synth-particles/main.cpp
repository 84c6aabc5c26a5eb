#include "synth_particles.hpp"

int main(int argc, char** argv) {
  const phew::tool::ToolSpec spec{
      "synth-particles",
      "Make seeded synthetic snapshots with known answers (halos, backgrounds, sequences) and their truth files",
      "synth-particles nfw -o halo.hdf5 --particles 100000 --mass 1 --concentration 10 --seed 7", "snapshot"};
  phew::tools::SynthOptions opt;
  return phew::tool::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::tools::declare_synth_options(app, opt); },
      [&](phew::tool::Context& ctx) { phew::tools::run_synth_particles(opt, ctx); });
}
