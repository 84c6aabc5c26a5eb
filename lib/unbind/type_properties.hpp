// The per-type properties of an object (TypeProperties): each particle type's bound mass and count, its
// half-mass radius and velocity dispersion and its masses in spherical apertures about the centre, of
// the own bound particles and of all of them (with the sub-objects'). docs/unbind-method.md, "Per type".
#pragma once

#include <phew/unbind/potential.hpp>
#include <phew/unbind/properties.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <vector>

namespace phew::unbind {

struct TypeBreakdown {
  std::vector<TypeProperties> own, inclusive;  // [column of params.types]
};

// The breakdown of the bound particles `members` (ascending indices into `p`, own and fixed) about
// `centre`, with their radius order about it (`radial`: its distances and order are used, not computed
// again), a column per type of params.types (a particle of another type is counted in none), apertures
// of params.apertures. Every sum is taken in index order, carried over the ranks of `comm` when the
// object is spread over them: bit-reproducible, the one-rank bits on any number of ranks. Collective.
TypeBreakdown measure_by_type(const mpi::Comm& comm, const LocalParticles& p, std::span<const std::size_t> members,
                              const RadialMembers& radial, const std::array<double, 3>& centre, const Frame& frame,
                              const Params& params);

}  // namespace phew::unbind
