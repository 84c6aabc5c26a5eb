// The rows of an unbinding (unbind's result; bound.h5, lib/io/bound_file.hpp): every object of the
// clump hierarchy with the properties of its bound particles, every particle of an object's cells with
// the object it ends bound to, and the most-bound particles of each object (what trees link by).
#pragma once

#include <phew/grid/geometry.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace phew::model {

// An object (/objects): a level-0 clump of clumps.h5 after unbinding, its sub-objects' bound particles
// counted inclusively. Lengths comoving, velocities physical (docs/unbind-method.md). A property that
// cannot be measured (too few particles, no cosmology for the SO masses) is 0, never NaN (every measured
// scalar is positive; a dissolved object's vectors are 0 too), and a file without NaN compares equal to itself by value in every tool (numpy too).
// Readers that keep NaN for "not measured" (mergertree's tree.h5) convert with kNaN.
struct BoundObject {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  static constexpr std::array<double, 3> kNaN3{kNaN, kNaN, kNaN};
  std::int64_t id = 0;                 // the clump's ID
  std::int64_t parent = 0;             // the object its unbound particles passed to; 0 for a halo (the top)
  std::int64_t halo = 0;               // its halo (the top of its hierarchy)
  std::int64_t depth = 0;              // number of ancestors: 0 for a halo
  std::int64_t n_particles = 0;        // given to it: own (its cells' and its sub-objects' released) and fixed
  std::int64_t n_received = 0;         // own particles passed up from its sub-objects
  std::int64_t n_bound = 0;            // own bound particles (exclusive)
  std::int64_t n_bound_inclusive = 0;  // with its sub-objects' bound particles
  double mass = 0, mass_inclusive = 0;
  std::array<double, 3> peak_position{};               // the density peak of clumps.h5
  std::array<double, 3> centre{};                      // the centre chosen with --centre
  std::array<double, 3> centre_of_mass{};              // of the bound (inclusive) particles
  std::array<double, 3> most_bound_position{};         // the bound particle of lowest energy
  std::array<double, 3> potential_minimum_position{};  // the bound particle of lowest potential
  std::array<double, 3> shrinking_sphere_centre{};     // shrinking spheres over the bound particles
  std::array<double, 3> bulk_velocity{};               // mass-weighted peculiar velocity
  std::array<double, 3> angular_momentum{};  // of the bound particles about the centre, in the object's frame; physical
  double vrms = 0, vmax = 0, rmax = 0;
  double virial_ratio = 0;  // T / |U|
  double spin_peebles = 0, spin_bullock = 0;
  double mvir = 0, rvir = 0, m200c = 0, r200c = 0, m200m = 0, r200m = 0, m500c = 0, r500c = 0;
  double rs_klypin = 0, concentration_klypin = 0, rs_fit = 0, concentration_fit = 0;
  double b_to_a = 0, c_to_a = 0, xoff = 0;
  // The bound gas (type 0), when the snapshot has its fields (BoundMeta::gas_temperature,
  // star_forming_gas): its mass-weighted temperature (K) and the mass of its star-forming particles
  // (star formation rate > 0), own and inclusive of the sub-objects' bound gas; 0 without gas.
  double gas_temperature = 0, gas_temperature_inclusive = 0;
  double star_forming_gas_mass = 0, star_forming_gas_mass_inclusive = 0;
  std::int64_t iterations = 0;
  bool converged = false;
  bool dissolved = false;  // fewer than the minimum bound particles stayed: all passed to its parent
};

// Apertures of the per-type masses at most (unbind --apertures).
inline constexpr std::size_t kMaxApertures = 8;

// One object's properties for one particle type (a row of /objects' [n][types] columns): of its own
// bound particles and of those with its sub-objects' (inclusive). 0 where nothing could be measured.
// Radii comoving; dispersions 1-D, physical; aperture masses of BoundMeta::apertures_kpc (the rest 0).
// Plain values, so the rows travel between ranks like the objects'.
struct BoundTypeRow {
  std::int64_t object = 0;  // the object's ID
  std::int64_t column = 0;  // the type's place in BoundMeta::types
  std::int64_t n_bound = 0, n_bound_inclusive = 0;
  double mass = 0, mass_inclusive = 0;
  double half_mass_radius = 0, half_mass_radius_inclusive = 0;
  double velocity_dispersion = 0, velocity_dispersion_inclusive = 0;
  std::array<double, kMaxApertures> aperture_mass{}, aperture_mass_inclusive{};
};

// A particle given to an object (/particles).
struct BoundParticle {
  std::uint64_t id = 0;
  std::int64_t member_of = 0;  // the object it was given to: the clump of its test cell, or its peak (peaks.h5)
  std::int64_t object = 0;     // the object it ends bound to (exclusively); 0: unbound
  double energy = 0;           // specific, in the last object that tested it (0: none did)
};

// One of an object's most-bound particles (/most_bound), lowest energy first.
struct MostBoundRow {
  std::int64_t object = 0;
  std::int64_t rank = 0;  // 0 for the most bound
  std::uint64_t id = 0;
};

struct BoundMeta {
  double time = 0, redshift = 0;        // of the snapshot
  double scale_factor = 1, hubble = 0;  // a and H(a) (velocity units per physical length unit) used
  double gravitational_constant = 0;    // in the snapshot's units
  double softening = 0;                 // comoving length
  std::string potential, centre;        // --potential, --centre
  std::int64_t n_most_bound = 0;        // --most-bound: rows of /most_bound per object at most
  std::string velocity_units;           // "km/s (peculiar)"
  std::string energy_units;             // specific energies: "(km/s)^2"
  // The snapshot's units in cgs (yt's catalogue is written in cgs) and the cosmology when known.
  double length_in_cm = 0, mass_in_g = 0, velocity_in_cm_per_s = 0;
  bool h_scaled = false, comoving = false;
  double hubble_param = 0, omega_m = 0, omega_lambda = 0;
  // The per-type columns: the snapshot types measured (their codes and names, particles::type_name) and
  // the apertures' radii in physical kpc. Empty: no per-type columns.
  std::vector<int> types;
  std::vector<std::string> type_names;
  std::vector<double> apertures_kpc;
  // Which gas columns the objects have (the snapshot's gas has an internal energy, a star formation rate).
  bool gas_temperature = false, star_forming_gas = false;
};

// The whole product, as one rank holds it: its rows of each table (which follow the lower ranks' rows).
struct Bound {
  grid::GridMeta grid;
  BoundMeta meta;
  std::vector<BoundObject> objects;      // sorted by ID over the ranks
  std::vector<BoundParticle> particles;  // sorted by particle ID over the ranks
  std::vector<MostBoundRow> most_bound;  // sorted by (object, rank) over the ranks
  // Per type: a row per object of `objects` and type of meta.types, on the rank of its object, sorted by
  // (object, column); empty when no types were measured.
  std::vector<BoundTypeRow> by_type;
};

}  // namespace phew::model
