#include "synth_particles.hpp"

int main(int argc, char** argv) {
  const phew::ToolSpec spec{"synth-particles",
                            "Make seeded synthetic snapshots with known answers (halos, backgrounds, sequences) and their truth files",
                            "synth-particles nfw -o halo.hdf5 --particles 100000 --mass 1 --concentration 10 --seed 7",
                            "snapshot"};
  phew::SynthOptions opt;
  return phew::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::declare_synth_options(app, opt); },
      [&](phew::Context& ctx) { phew::run_synth_particles(opt, ctx); });
}
