// Unbinding of one object (a halo or a sub-object) and the properties of what stays bound, as RAMSES'
// pm/unbinding.f90 does it (Ivkovic & Teyssier 2022, "ACACIA"): the energy of each particle in the
// potential of the currently bound particles and the frame of their mean velocity, removal of the
// particles whose energy is not below the threshold (0, or the potential at the key saddle), again
// until nothing changes. docs/unbind-method.md gives every definition and formula.
//
// Pure and serial: spans in, a result out, no files, no collective calls. The result does not depend
// on the order of the particles given (everything is done in particle-ID order, ties broken by ID),
// and it is bit-reproducible (every sum is taken in a fixed order).
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/grid/shrinking_sphere.hpp>
#include <phew/grid/spherical_overdensity.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace phew::unbind {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// How a snapshot's coordinates map to the physical ones, and its gravity. Positions are comoving
// (snapshot length units L), velocities peculiar (velocity units V), masses in M; G is in L V^2 / M.
// A physical separation is a * (comoving separation, through the nearest image in a periodic box),
// a physical velocity relative to a point x_c is v_pec + H a (x - x_c) (the Hubble flow). A plain
// Newtonian snapshot has a = 1 and H = 0.
struct Frame {
  grid::Box box;            // comoving; periodic: separations through the nearest image
  double scale_factor = 1;  // a
  double hubble = 0;        // H(a), in V per physical L; 0: no Hubble flow
  double G = 1;
  double softening = 0;  // Plummer-equivalent softening length, comoving L (physical a * softening)
  // Spherical-overdensity masses: the critical density at a, COMOVING (rho_crit(a) a^3 in M / L^3, as
  // Cosmology::critical_density gives it), and the z = 0 density parameters of a flat universe. No SO
  // masses (NaN) when critical_density is 0.
  double critical_density = 0;
  double omega_m = 0, omega_lambda = 0;
};

enum class PotentialMode {
  profile,  // spherical potential of the bound particles' cumulative mass profile around the centre (RAMSES)
  tree,     // the pairwise potential of the bound particles: Barnes-Hut (lib/gravity), direct below a size
};
enum class CentreKind {
  peak,               // the density peak given with the object (RAMSES' default)
  most_bound,         // the bound particle of lowest energy (of the previous pass)
  potential_minimum,  // the bound particle of lowest potential (of the previous pass)
  shrinking_sphere,   // shrinking spheres over the bound particles (Power et al. 2003; lib/grid)
  centre_of_mass,     // of the bound particles (RAMSES with -DUNBINDINGCOM)
};
std::string to_string(PotentialMode m);
std::string to_string(CentreKind c);
PotentialMode parse_potential_mode(const std::string& text);  // "profile", "tree"; throws Error(usage)
CentreKind parse_centre_kind(const std::string& text);        // "peak", "most-bound", ...; throws Error(usage)

struct Params {
  PotentialMode potential = PotentialMode::profile;
  CentreKind centre = CentreKind::peak;
  // Whose potential: false, the currently bound particles' (recomputed every pass); true, every
  // particle given, bound or not (RAMSES' default: its mass profile is of all the clump's particles and
  // only the frame is iterated). With a saddle threshold use true: with the bound particles' potential,
  // each removal makes the well shallower against Phi(r_saddle) and the removals can cascade.
  bool potential_of_all = false;
  bool saddle = false;                  // E < Phi(r_saddle) for objects given a saddle radius (RAMSES' saddle_pot)
  int max_iterations = 100;             // passes of the unbinding loop (RAMSES' repeat_max)
  std::size_t direct_below = 2000;      // tree mode: direct summation for fewer particles than this
  double theta = 0.5;                   // tree mode: Barnes-Hut opening angle
  std::size_t min_bound = 10;           // fewer own bound particles: the object is dissolved into its parent
  std::size_t n_most_bound = 20;        // IDs of this many most-bound own particles
  std::size_t vmax_min_particles = 50;  // the circular-velocity curve is trusted from this many particles out
  double vmax_window = 0.05;            // Vmax, Rmax: parabola in ln r over v_c^2 >= (1 - window) max
  int fit_bins = 20;                    // NFW profile fit: log-spaced radial bins inside Rvir ...
  std::size_t fit_inner = 50;           // ... from the radius of this many particles ...
  std::size_t fit_min_per_bin = 10;     // ... using the bins holding at least this many
  int shape_max_iterations = 100;       // reduced inertia tensor: iterations, and the relative change in
  double shape_tolerance = 1e-3;        // b/a and c/a below which they have converged
  grid::ShrinkingSphere shrinking;      // CentreKind::shrinking_sphere
  // Per-type properties (TypeProperties, lib/unbind/type_properties.hpp): the particle types measured,
  // a column each in this order (empty: none are measured), and the apertures' radii (physical L).
  std::vector<int> types;
  std::vector<double> apertures;
};

// One object as the hierarchy knows it.
struct ObjectSpec {
  std::int64_t parent = -1;             // index of the parent object; -1 for a halo
  std::array<double, 3> peak{0, 0, 0};  // density peak, comoving
  double saddle_radius = 0;             // comoving distance from the peak to its key saddle; <= 0: none
};

// The particles of one object: every span of one length N (position and velocity [N][3]), and the
// object's particles all N of them or the entries `subset` names.
struct ObjectParticles {
  std::span<const std::uint64_t> id;
  std::span<const double> position;  // comoving
  std::span<const double> velocity;  // peculiar
  std::span<const double> mass;
  // Optional [n]: 1 for a particle bound to a sub-object of this one. It counts in the potential, the
  // frame and the (inclusive) properties, but is never tested nor removed here. Empty: none.
  std::span<const std::uint8_t> fixed;
  // Optional [n]: each particle's type (ParticleSet::type), for the per-type properties. Empty: all of
  // the first type of Params::types.
  std::span<const std::uint8_t> type = {};
  // Optional: the object's particles are these entries of the spans above, in this order (the spans
  // then hold a whole halo's particles: unbind_hierarchy, whose objects so need no copies of their
  // own). Empty: every entry.
  std::span<const std::size_t> subset = {};
  // Optional: called once the object's particles are copied into its own frame, after which the spans
  // above are not read again (unbind_hierarchy lets a halo's arrays go before its last object's
  // passes: a big halo's peak is there).
  std::function<void()> copied = {};
};

// One particle type's share of an object's bound particles (docs/unbind-method.md, "Per type"), as
// SUBFIND's SubhaloMassType, SubhaloHalfmassRadType and SubhaloVelDisp and SOAP's apertures give it.
struct TypeProperties {
  std::int64_t n_bound = 0;
  double mass = 0;
  double half_mass_radius = kNaN;     // comoving L: where M(<r) about the centre, linear between particles, is half
  double velocity_dispersion = kNaN;  // 1-D, physical V: sqrt(sum m |u - u_type|^2 / (3 M_type))
  std::vector<double> aperture_mass;  // [aperture]: the type's bound mass within each physical radius
};

// What is measured on the bound particles (docs/unbind-method.md). Lengths are COMOVING (L), like the
// positions; velocities, energies and angular momenta physical (V, V^2, M L V with L physical). NaN
// where a property cannot be measured.
struct Properties {
  std::int64_t n_bound = 0;            // own bound particles (exclusive)
  std::int64_t n_bound_inclusive = 0;  // with those of the sub-objects (the fixed ones)
  double mass = 0, mass_inclusive = 0;
  std::array<double, 3> centre{kNaN, kNaN, kNaN};          // the chosen centre, wrapped into the box
  std::array<double, 3> centre_of_mass{kNaN, kNaN, kNaN};  // of the bound (inclusive) particles, wrapped
  // The other centres of the bound particles, wrapped: the most-bound particle, the potential minimum
  // and the shrinking-sphere centre (one of them, or the peak, is `centre`).
  std::array<double, 3> most_bound_position{kNaN, kNaN, kNaN};
  std::array<double, 3> potential_minimum_position{kNaN, kNaN, kNaN};
  std::array<double, 3> shrinking_sphere_centre{kNaN, kNaN, kNaN};
  std::array<double, 3> bulk_velocity{kNaN, kNaN, kNaN};     // mass-weighted mean peculiar velocity
  double vrms = kNaN;                                        // sqrt(sum m |u - V|^2 / M), 3-D, in the object's frame
  double vmax = kNaN, rmax = kNaN;                           // peak of sqrt(G M(<r) / r)
  std::array<double, 3> angular_momentum{kNaN, kNaN, kNaN};  // about the centre, in the object's frame
  double kinetic = kNaN, potential = kNaN;                   // T and U = 1/2 sum m Phi (no self-energy)
  double virial_ratio = kNaN;                                // T / |U|
  double spin_peebles = kNaN;                                // J |E|^1/2 / (G M^5/2), whole bound object
  double spin_bullock = kNaN;                                // J(<Rvir) / (sqrt 2 Mvir Vvir Rvir)
  double delta_vir = kNaN;                                   // Bryan & Norman, times the critical density
  grid::Overdensity vir, c200, m200, c500;               // bound particles only (ROCKSTAR's default); radii comoving
  double rs_klypin = kNaN, concentration_klypin = kNaN;  // from Vmax / Vvir (Klypin et al. 2011); c = Rvir / r_s
  double rs_fit = kNaN, concentration_fit = kNaN;        // least squares in ln rho inside Rvir
  double b_to_a = kNaN, c_to_a = kNaN;  // reduced inertia tensor inside Rvir, iterated (Allgood et al. 2006)
  std::array<double, 3> major_axis{kNaN, kNaN, kNaN};  // unit vector
  double xoff = kNaN;                         // |centre - centre of mass of the particles inside Rvir|, comoving L
  std::vector<std::uint64_t> most_bound_ids;  // own bound particles, lowest energy first (ties by ID)
  // Per type of Params::types (empty when it is): of the own bound particles and of all (inclusive).
  std::vector<TypeProperties> by_type, by_type_inclusive;
};

// What unbinding one object found, without the per-particle arrays (what the hierarchy keeps).
struct ObjectSummary {
  std::int64_t n_particles = 0;  // given (own and fixed)
  std::int64_t n_fixed = 0;      // of sub-objects
  std::int64_t n_removed = 0;    // own particles found unbound
  std::int64_t n_received = 0;   // hierarchy: own particles that were passed up from sub-objects
  int iterations = 0;            // removal passes made
  bool converged = false;        // the last pass removed nothing (else max_iterations was reached)
  bool dissolved = false;        // fewer than min_bound own particles stayed bound: all are released
  double threshold = 0;          // the energy threshold of the last pass: 0 or Phi(r_saddle)
  Properties properties;         // of the bound particles (empty when dissolved)
};

struct ObjectResult {
  // Per particle of the object, in the order given (the order of `subset` when there is one):
  std::vector<std::uint8_t> bound;  // 1 bound (fixed particles always 1; own ones all 0 when dissolved)
  std::vector<double> energy;       // specific energy K + Phi (V^2) at the last evaluation that saw it
                                    // (bound when below `threshold`); NaN for fixed particles
  ObjectSummary summary;
};

// Unbinds one object whose particles are `particles` (IDs unique; Error(input) otherwise), with peak
// and saddle radius from `spec` (its parent is not used here). Not collective; tree mode calls
// lib/gravity's Forest on a one-rank communicator, so MPI must be initialised (it always is in a tool).
ObjectResult unbind_object(const ObjectParticles& particles, const ObjectSpec& spec, const Frame& frame,
                           const Params& params);

}  // namespace phew::unbind
