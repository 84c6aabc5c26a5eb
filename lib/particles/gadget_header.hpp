// A Gadget-style snapshot as values: the header and this rank's particles that snapshot::write_gadget_hdf5
// writes (synth-particles makes them; the writer, a format, is in lib/snapshot).
#pragma once

#include <phew/particles/particle_set.hpp>

#include <cstdint>
#include <span>
#include <string>

namespace phew::particles {

// The header and the description of the datasets (one file).
struct GadgetHeader {
  int type = 1;              // the particles' PartType (0..5), unless GadgetParticles::type gives each one's
  double particle_mass = 0;  // MassTable entry of every type written: > 0 for one mass for all (no Masses dataset)
  double box_size = 0;       // BoxSize; 0: open boundaries
  double time = 0;           // Time: the scale factor, or the time in internal units
  double redshift = 0;
  double omega0 = 0, omega_lambda = 0, hubble_param = 1;
  Units units;                                   // UnitLength_in_cm, UnitMass_in_g, UnitVelocity_in_cm_per_s
  bool double_precision = false;                 // float64 datasets and Flag_DoublePrecision 1 (else float32)
  bool potential = false, acceleration = false;  // write Potential and Acceleration
  // The "units" attributes of the datasets.
  std::string length_units, velocity_units, mass_units, potential_units, acceleration_units;
};

// This rank's particles, after the lower ranks' in the file: [n][3] positions and velocities, n IDs,
// n masses (only when header.particle_mass is 0), potential [n] and acceleration [n][3] when the header
// asks for them.
struct GadgetParticles {
  std::span<const double> position, velocity;
  std::span<const std::uint64_t> id;
  std::span<const double> mass, potential, acceleration;
  std::span<const std::uint8_t> type;  // [n]: each particle's PartType (0..5); empty: all of header.type
};

}  // namespace phew::particles
