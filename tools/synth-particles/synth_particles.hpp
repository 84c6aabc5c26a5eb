// synth-particles: seeded synthetic snapshots with known answers (docs/tools/synth-particles.md).
#pragma once

#include "synth/scene.hpp"
#include "tool/tool.hpp"

#include <string>

namespace phew {

// The command line as given: strings, so that "not given" is distinguishable and every number is
// checked with a message naming its option.
struct SynthOptions {
  std::string model;  // a model name, a built-in scene or a scene file
  std::string particles, mass, concentration, scale_radius, truncation, decay, position, velocity;
  std::string box, cosmology, redshift, sigma8, spectrum, index, velocity_dispersion;
  std::string seed, precision;
  bool potential = false, acceleration = false;
  std::string mode, snapshots, interval, accuracy;
};

void declare_synth_options(CLI::App& app, SynthOptions& opt);

// The scene the options describe: one model with its options, a built-in scene or a scene file (whose
// path is returned in `scene_file`), with the global options applied. Throws Error(usage) for a bad
// option or scene, Error(io) for an unreadable scene file. Not collective.
synth::Scene scene_from_options(const SynthOptions& opt, std::string* scene_file = nullptr);

void run_synth_particles(const SynthOptions& opt, Context& ctx);

}  // namespace phew
