// The rows of an unbinding (unbind's result; bound.h5, lib/io/bound_file.hpp): every object of the
// clump hierarchy with the properties of its bound particles, every particle of an object's cells with
// the object it ends bound to, and the most-bound particles of each object (what trees link by).
#pragma once

#include <phew/grid/geometry.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace phew::model {

// An object (/objects): a level-0 clump of clumps.h5 after unbinding, its sub-objects' bound particles
// counted inclusively. Lengths comoving, velocities physical (docs/unbind-method.md). A property that
// cannot be measured (too few particles, no cosmology for the SO masses, a dissolved object's centre and
// velocities) is NaN, as in every phew product (docs/formats.md, "Values that cannot be measured"); the
// masses and counts are always measured (0 for a dissolved object).
struct BoundObject {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  static constexpr std::array<double, 3> kNaN3{kNaN, kNaN, kNaN};
  std::int64_t id = 0;       // the clump's ID
  std::int64_t parent = 0;   // the object its unbound particles passed to; 0 for a halo (the top)
  std::int64_t halo = 0;     // its halo (the top of its hierarchy)
  std::int64_t depth = 0;    // number of ancestors: 0 for a halo
  std::int64_t n_particles = 0;        // given to it: own (its cells' and its sub-objects' released) and fixed
  std::int64_t n_received = 0;         // own particles passed up from its sub-objects
  std::int64_t n_bound = 0;            // own bound particles (exclusive)
  std::int64_t n_bound_inclusive = 0;  // with its sub-objects' bound particles
  double mass = 0, mass_inclusive = 0;
  std::array<double, 3> peak_position{};      // the density peak of clumps.h5
  std::array<double, 3> centre = kNaN3;          // the centre chosen with --centre
  std::array<double, 3> centre_of_mass = kNaN3;  // of the bound (inclusive) particles
  std::array<double, 3> most_bound_position = kNaN3;         // the bound particle of lowest energy
  std::array<double, 3> potential_minimum_position = kNaN3;  // the bound particle of lowest potential
  std::array<double, 3> shrinking_sphere_centre = kNaN3;     // shrinking spheres over the bound particles
  std::array<double, 3> bulk_velocity = kNaN3;   // mass-weighted peculiar velocity
  std::array<double, 3> angular_momentum = kNaN3;  // of the bound particles about the centre, in the object's frame; physical
  double vrms = kNaN, vmax = kNaN, rmax = kNaN;
  double virial_ratio = kNaN;  // T / |U|
  double spin_peebles = kNaN, spin_bullock = kNaN;
  double mvir = kNaN, rvir = kNaN, m200c = kNaN, r200c = kNaN, m200m = kNaN, r200m = kNaN, m500c = kNaN, r500c = kNaN;
  double rs_klypin = kNaN, concentration_klypin = kNaN, rs_fit = kNaN, concentration_fit = kNaN;
  double b_to_a = kNaN, c_to_a = kNaN, xoff = kNaN;
  std::int64_t iterations = 0;
  bool converged = false;
  bool dissolved = false;  // fewer than the minimum bound particles stayed: all passed to its parent
};

// A particle given to an object (/particles).
struct BoundParticle {
  std::uint64_t id = 0;
  std::int64_t member_of = 0;  // the object it was given to: the clump of its test cell, or its peak (peaks.h5)
  std::int64_t object = 0;  // the object it ends bound to (exclusively); 0: unbound
  double energy = BoundObject::kNaN;  // specific, in the last object that tested it (NaN: none did)
};

// One of an object's most-bound particles (/most_bound), lowest energy first.
struct MostBoundRow {
  std::int64_t object = 0;
  std::int64_t rank = 0;  // 0 for the most bound
  std::uint64_t id = 0;
};

struct BoundMeta {
  double time = 0, redshift = 0;       // of the snapshot
  double scale_factor = 1, hubble = 0; // a and H(a) (velocity units per physical length unit) used
  double gravitational_constant = 0;   // in the snapshot's units
  double softening = 0;                // comoving length
  std::string potential, centre;       // --potential, --centre
  std::int64_t n_most_bound = 0;       // --most-bound: rows of /most_bound per object at most
  std::string velocity_units;          // "km/s (peculiar)"
  std::string energy_units;            // specific energies: "(km/s)^2"
  // The snapshot's units in cgs (yt's catalogue is written in cgs) and the cosmology when known.
  double length_in_cm = 0, mass_in_g = 0, velocity_in_cm_per_s = 0;
  bool h_scaled = false, comoving = false;
  double hubble_param = 0, omega_m = 0, omega_lambda = 0;
};

// The whole product, as one rank holds it: its rows of each table (which follow the lower ranks' rows).
struct Bound {
  grid::GridMeta grid;
  BoundMeta meta;
  std::vector<BoundObject> objects;      // sorted by ID over the ranks
  std::vector<BoundParticle> particles;  // sorted by particle ID over the ranks
  std::vector<MostBoundRow> most_bound;  // sorted by (object, rank) over the ranks
};

}  // namespace phew::model
