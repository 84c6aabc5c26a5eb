// The files synth-particles writes: a Gadget-style HDF5 snapshot (the layout Gadget-2/4 write, so that
// phew's snapshot readers are exercised as on real simulations) and its truth file.
#pragma once

#include "io/h5.hpp"
#include "synth/realize.hpp"
#include "synth/sequence.hpp"

#include <string>
#include <vector>

namespace phew {

// Output names: one snapshot OUT (OUT.truth.h5 beside it, the .hdf5/.h5 suffix replaced), or for a
// sequence STEM_000.hdf5, STEM_001.hdf5, ... with STEM_000.truth.h5, ... (STEM = OUT without its suffix;
// at least three digits).
struct OutputNames {
  std::vector<std::string> snapshots, truths;
};
OutputNames output_names(const std::string& output, int snapshots);

// What every rank knows about one snapshot (the particles themselves are rank 0's).
struct SnapshotMeta {
  int index = 0;
  std::uint64_t n = 0;
  double time = 0;  // Gadget's Time: the scale factor (cosmological) or time in kpc/(km/s)
  double time_myr = 0;
  const synth::Scene* scene = nullptr;
  const std::vector<synth::ComponentTruth>* truth = nullptr;
  const synth::CentreTrack* track = nullptr;
  std::string scene_json;
  std::string snapshot_name;  // file name of the snapshot, recorded in the truth file
};

// Writes /Header and /PartType1 (Coordinates, Velocities, ParticleIDs, Masses when the particle masses
// differ, Potential and Acceleration when asked for). Rank 0's data is written; the other ranks pass
// empty arrays. Collective.
void write_gadget_snapshot(io::File& file, const SnapshotMeta& meta, const synth::Particles& p,
                           const std::vector<double>& potential, const std::vector<double>& acceleration);

// Writes the truth: per particle its ID, component and whether it is bound to its own halo; per
// component its model parameters, centre and bulk velocity at this time; the centre track of the whole
// sequence. Collective; rank 0's particle data is written.
void write_truth(io::File& file, const SnapshotMeta& meta, const synth::Particles& p, const std::vector<std::int8_t>& bound);

}  // namespace phew
