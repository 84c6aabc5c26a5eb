// Unbinding of a hierarchy of objects, finest level first, as RAMSES passes a clump's unbound particles
// to its parent: each object is unbound with its own particles (those it was given and those its
// sub-objects released) while the bound particles of its sub-objects count as bound to it (inclusive);
// what a halo (no parent) does not bind stays unbound.
#pragma once

#include <phew/unbind/unbind.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace phew::unbind {

// Every particle of every object of the hierarchy (spans of one length n; position, velocity [n][3]).
struct HierarchyParticles {
  std::span<const std::uint64_t> id;  // unique within an object's inclusive set
  std::span<const double> position;   // comoving
  std::span<const double> velocity;   // peculiar
  std::span<const double> mass;
  std::span<const std::int64_t> object;     // the object each particle was assigned to; -1: none (left alone)
  std::span<const std::uint8_t> type = {};  // optional: each particle's type (ObjectParticles::type)
  // Optional: called once every object's particles are copied (before the last object's removal
  // passes), after which position, velocity, mass and type are not read again: the caller may let
  // them go (id and object are still read).
  std::function<void()> copied = {};
};

struct HierarchyResult {
  // Per particle, in the order given:
  std::vector<std::int64_t> bound_to;  // the object it ends bound to (exclusively), -1: unbound or none
  std::vector<double> energy;          // specific energy in the last object that tested it (NaN: none)
  std::vector<ObjectSummary> objects;  // per object, in the order given
  // Counts:
  std::int64_t n_particles = 0;  // given
  std::int64_t n_assigned = 0;   // with an object
  std::int64_t n_bound = 0;      // bound to some object at the end
  std::int64_t n_unbound = 0;    // assigned but bound to none (released by a halo)
  std::int64_t n_passed = 0;     // passes of a particle from an object to its parent (a particle
                                 // passed twice counts twice)
  std::int64_t n_dissolved = 0;  // objects with fewer than min_bound own bound particles
};

// `objects[o].parent` links each object to its parent (-1 for a halo). Objects are processed deepest
// first (depth = number of ancestors), equal depths by index, so every object is unbound after all its
// sub-objects. Error(input) when a parent index is out of range or the links form a cycle, or a particle
// names an object that does not exist. Not collective (tree mode: see unbind_object).
HierarchyResult unbind_hierarchy(const HierarchyParticles& particles, std::span<const ObjectSpec> objects,
                                 const Frame& frame, const Params& params);

}  // namespace phew::unbind
