// The gravitational potential of a set of particles at each of them (without its own self-energy), three
// ways: spherical (gravity::SphericalProfile, the cumulative mass profile around a centre, as RAMSES'
// unbinding), direct summation, and Barnes-Hut (lib/gravity's Forest). Positions are physical and local (an object's particles already
// unwrapped around a point); `members` lists the particles of the set, in ascending index order (the
// caller keeps particles in ID order, so index order is ID order and sums are taken in it).
#pragma once

#include <phew/gravity/forest.hpp>
#include <phew/gravity/spherical_profile.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace phew::unbind {

// Phi at each member due to every other member by direct summation over the members in index order,
// into phi[particle index]. O(n^2): the reference, and the tree mode's choice for small sets.
void direct_potential(std::span<const double> position, std::span<const double> mass,
                      std::span<const std::size_t> members, double G, double softening, std::vector<double>& phi);

// The same by Barnes-Hut: lib/gravity's Forest over the members (one cube in an open box, built in
// particle-ID order, so the result depends on the set only), opening angle theta, monopoles, with the
// self-term -G m / eps of a softened source removed. Calls the Forest's moment exchange on a one-rank
// communicator (MPI must be initialised).
void tree_potential(std::span<const double> position, std::span<const double> mass, std::span<const std::uint64_t> id,
                    std::span<const std::size_t> members, double G, double softening, double theta,
                    std::vector<double>& phi);

// The members' sources for a Forest (position, mass, ID), in the members' order.
std::vector<gravity::Source> sources_of(std::span<const double> position, std::span<const double> mass,
                                        std::span<const std::uint64_t> id, std::span<const std::size_t> members);

// unbind's pairwise potential (--potential tree) of a set of `sources` (in ID order) at the sources
// [first, last) only, into phi[k - first]: direct summation (direct_potential) below
// `direct_below` sources, Barnes-Hut (tree_potential's walk) otherwise. The value at a source depends
// on the set alone, not on the block asked for: so each rank of a set spread over ranks, holding the
// whole set gathered, computes its own block with the one-rank bits.
void block_potential(std::vector<gravity::Source> sources, std::size_t first, std::size_t last, double G,
                     double softening, double theta, std::size_t direct_below, std::vector<double>& phi);

}  // namespace phew::unbind
