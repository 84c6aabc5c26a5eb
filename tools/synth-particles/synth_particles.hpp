// synth-particles: seeded synthetic snapshots with known answers (docs/tools/synth-particles.md).
#pragma once

#include <phew/synth/scene.hpp>
#include <phew/synth/scene_options.hpp>
#include <phew/tool/tool.hpp>

#include <string>
#include <vector>

namespace phew::tools {

// The command line as given: the scene's options as text (synth/scene_options.hpp).
struct SynthOptions : synth::SceneOptions {};

// The options in checked form: the resolved scene, and the scene file it came from (if any).
struct SynthParams {
  synth::Scene scene;
  std::string scene_file;
};

void declare_synth_options(CLI::App& app, SynthOptions& opt);
// Throws Error(usage) for a bad option or scene, Error(io) for an unreadable scene file (which it
// reads). Not collective.
SynthParams check_synth_options(const SynthOptions& opt);
void run_synth_particles(const SynthOptions& opt, tool::Context& ctx);

// Output names: one snapshot OUT (OUT.truth.h5 beside it, the .hdf5/.h5 suffix replaced), or for a
// sequence STEM_000.hdf5, STEM_001.hdf5, ... with STEM_000.truth.h5, ... (STEM = OUT without its suffix;
// at least three digits).
struct OutputNames {
  std::vector<std::string> snapshots, truths;
};
OutputNames output_names(const std::string& output, int snapshots);

}  // namespace phew::tools
