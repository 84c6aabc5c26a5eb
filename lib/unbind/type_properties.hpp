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

// The breakdown of the bound particles `members` (ascending indices into `p`, own and fixed) about the
// centre of `profile` (their spherical profile: its distances and radius order are used, not computed
// again), a column per type of params.types (a particle of another type is counted in none), apertures
// of params.apertures. Every sum is taken in index order: bit-reproducible. Pure.
TypeBreakdown measure_by_type(const LocalParticles& p, std::span<const std::size_t> members,
                              const gravity::SphericalProfile& profile, const Frame& frame, const Params& params);

}  // namespace phew::unbind
