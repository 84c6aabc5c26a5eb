// The truth of a synthetic snapshot (synth-particles' result beside each snapshot; lib/io/truth_file.hpp,
// docs/tools/synth-particles.md): what each particle is, what each component is and where it is at this
// snapshot, and where every component goes over the whole sequence.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace phew::model {

// A particle (/particles), in snapshot order.
struct TruthParticle {
  std::uint64_t id = 0;
  std::int32_t component = 0;  // row of /components
  std::int8_t bound = 0;       // 1: bound to its own halo's potential alone, in the halo's frame
};

// A component (/components) at this snapshot's time; 0 where a field does not apply.
struct TruthComponent {
  std::int64_t n_particles = 0;
  std::uint64_t first_id = 0;
  bool is_halo = false;
  std::int32_t parent = -1;  // the host's row, -1 for none
  double particle_mass = 0, mass = 0, m200 = 0;
  double r200 = 0, concentration = 0, scale_radius = 0, truncation_radius = 0, decay_radius = 0, half_mass_radius = 0;
  std::array<double, 3> center{}, velocity{};
};

// The attributes: the snapshot, the scene and its units, the components' names and models.
struct TruthMeta {
  std::string snapshot;  // the snapshot's file name
  std::int64_t snapshot_index = 0;
  double time = 0, time_myr = 0, redshift = 0;
  std::uint64_t seed = 0;
  std::string sequence;  // "none", "ballistic" or "restricted"
  std::string scene;     // the resolved scene as JSON
  std::string length_units, mass_units, velocity_units;
  std::vector<std::string> names, models;  // per component
  double overdensity = 0, critical_density = 0;
};

// Every component's centre and bulk velocity at every snapshot of the sequence (/track).
struct TruthTrack {
  std::vector<double> time;              // [s], internal units kpc/(km/s)
  std::vector<double> time_myr;          // [s]
  std::vector<double> center, velocity;  // [s][k][3]
};

// The whole file as one rank holds it: the rows of /particles and /components follow the lower ranks'
// (synth-particles: rank 0 holds them all); meta and track are the same on every rank.
struct Truth {
  TruthMeta meta;
  std::vector<TruthParticle> particles;
  std::vector<TruthComponent> components;
  TruthTrack track;
};

}  // namespace phew::model
