// A scene described on a command line (synth-particles' options): one model and its parameters as
// typed, a built-in scene or a scene file, plus the settings that apply to any scene. Values are kept
// as text, so that "not given" is distinguishable and every number is checked under its option's name.
#pragma once

#include <phew/synth/scene.hpp>

#include <string>

namespace phew::synth {

struct SceneOptions {
  std::string model;  // a model (nfw, plummer, hernquist, uniform, zeldovich), a built-in scene or a file
  std::string particles, mass, concentration, scale_radius, truncation, decay, position, velocity;
  std::string box, cosmology, redshift, sigma8, spectrum, index, velocity_dispersion;
  std::string seed, precision;
  bool potential = false, acceleration = false;
  std::string mode, snapshots, interval, accuracy;
};

// The scene the options describe: one model with its options (defaults that make `nfw -o x.hdf5`
// work), a built-in scene or a scene file (whose path goes to `scene_file`), with the global options
// applied. Per-model options with a scene are refused. Throws Error(usage) for a bad option or scene,
// Error(io) for an unreadable scene file. Not collective.
Scene scene_from_options(const SceneOptions& options, std::string* scene_file = nullptr);

}  // namespace phew::synth
