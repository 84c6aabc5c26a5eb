// The properties of an object from its bound particles (docs/unbind-method.md, "Properties").
#pragma once

#include <phew/grid/radial_run.hpp>
#include <phew/unbind/unbind.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace phew::unbind {

// An object's particles in its own physical frame, in particle-ID order: positions relative to its
// peak (a * comoving separation), velocities u = v_pec + H a dx (physical, relative to the peak's
// Hubble flow) and the peculiar ones v, all [n][3].
struct LocalParticles {
  std::span<const std::uint64_t> id;
  std::span<const double> x, u, v;
  std::span<const double> mass;
  std::span<const std::uint8_t> fixed;  // [n]: 1 for sub-objects' particles
  std::span<const std::uint8_t> type;   // [n], or empty (ObjectParticles::type)
};

// What the last evaluation of the unbinding left: the bound particles (ascending indices, own and fixed),
// the potential and energy at each of them, and the chosen centre (local, physical).
struct BoundState {
  std::span<const std::size_t> members;
  std::span<const double> phi, energy;
  std::array<double, 3> centre{};
  double potential_energy = 0;  // U = 1/2 sum m Phi over the members
  // Every centre of the final bound set (local, physical), written beside the chosen one.
  std::array<double, 3> most_bound{}, potential_minimum{}, shrinking_sphere{};
};

// The bound members in radius order about the centre (no softening), as the properties read them: this
// rank's run of that order (lib/grid/radial_run.hpp) and, for each of its particles, its ID, position,
// velocity u, type and fixed flag: read through `index` from the object's arrays on one rank (the
// order of a gravity::SphericalProfile), or, spread over ranks, carried into the run's order (`index`
// empty: gravity::DistributedSphericalProfile::carry).
struct RadialMembers {
  grid::RadialRun run;
  std::span<const std::size_t> index;  // [run]: into the arrays below; empty: they are [run]
  std::span<const std::uint64_t> id;
  std::span<const double> x, u;               // [][3]
  std::span<const std::uint8_t> type, fixed;  // empty: every particle of the first type / none fixed
  std::size_t at(std::size_t k) const { return index.empty() ? k : index[k]; }
};

// Every property of Properties from the bound particles. `peak` is the object's peak (comoving), the
// origin of the local positions. Pure.
Properties measure_properties(const LocalParticles& particles, const BoundState& state,
                              const std::array<double, 3>& peak, const Frame& frame, const Params& params);
// The same for an object spread over the ranks of `comm` (each rank's LocalParticles in ID order, the
// ranks' in rank order making the object's; `state` this rank's members), with the members' radius
// order about state.centre: the one-rank bits on every rank. Collective.
Properties measure_properties(const mpi::Comm& comm, const LocalParticles& particles, const BoundState& state,
                              const RadialMembers& radial, const std::array<double, 3>& peak, const Frame& frame,
                              const Params& params);

// Vmax and the radius where it is reached, from particles sorted by radius (`radius` ascending with
// `mass`): v_c^2 = G M(<=r_k) / r_k at each particle k from the `min_particles`-th on (and at radii of
// at least `min_radius`), its largest value, then a least-squares parabola in ln r through the
// contiguous points around it with v_c^2 >= (1 - window) max, whose vertex gives Vmax and Rmax when it
// lies inside those points (else the largest value itself). NaN when there is no point.
struct CircularVelocityPeak {
  double vmax, rmax;
};
CircularVelocityPeak circular_velocity_peak(std::span<const double> radius, std::span<const double> mass, double G,
                                            std::size_t min_particles, double min_radius, double window);
// The same over a radial order whole or spread over ranks (the same result on every rank). Collective.
CircularVelocityPeak circular_velocity_peak(const grid::RadialRun& run, double G, std::size_t min_particles,
                                            double min_radius, double window);

}  // namespace phew::unbind
