// The centre of a group of particles by shrinking spheres (Power et al. 2003, MNRAS 338, 14):
// the centre of mass of the particles in a sphere, in a sphere 2.5% smaller around it, and so on until
// too few particles are left. It lands on the group's densest region, where the plain mean of an
// elongated group, of one with a subclump, or of one across a periodic boundary, does not. Used for the
// spherical-overdensity masses of mergertree --particles and for unbind --centre shrinking-sphere.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <span>

namespace phew::grid {

struct ShrinkingSphere {
  double shrink = 0.975;        // radius factor per step (Power et al.: 2.5%)
  double stop_fraction = 0.01;  // stop before the sphere holds fewer than this fraction of the group ...
  std::size_t stop_max = 1000;  // ... or than this many particles, whichever is smaller (Power et al.),
  std::size_t stop_min = 20;    // but never fewer than this many (a small group's centre is not one particle)
};

// The number of particles below which a group of n stops shrinking: clamp(⌊stop_fraction n⌋, stop_min,
// stop_max) (stop_min when stop_max < stop_min).
std::size_t shrinking_sphere_stop(std::size_t n, const ShrinkingSphere& params);

// `position` [n][3] and `mass` [n] of the group in `box`; `reference` any point near the group: in a
// periodic box each particle is taken through its image nearest to it (minimum_image), so the group
// must be smaller than half the box around it. The first sphere is centred on the mass-weighted mean and
// holds every particle; each step shrinks the radius by `shrink` and recentres on the mass-weighted mean
// of the group's particles inside (distance <= radius), until the next sphere would hold fewer than
// shrinking_sphere_stop(n) particles (a group that small gives its mean). Positions are taken as offsets
// from the reference, and each mean's sums are exact (core::FixedScale, 2^-62 of the group's largest mass
// and of its largest mass times offset): the centre does not depend on the order the particles come in.
// Returns the centre wrapped into a periodic box (wrap_into); the reference, wrapped, when there are no
// particles. Pure, not collective.
std::array<double, 3> shrinking_sphere_centre(std::span<const double> position, std::span<const double> mass,
                                              const Box& box, const std::array<double, 3>& reference,
                                              const ShrinkingSphere& params = {});

// The same for subsets of one group, as unbind wants on every removal pass (the bound particles left):
// the offsets from the reference and their fixed-point terms are made once, the scales from the whole
// group, so a subset's centre is what shrinking_sphere_centre gives for it but for the scales (its last
// bits). Not copyable; the spans given are read while it lives.
//
// `spread`: the group is spread over the ranks of that communicator, each giving its share (a member
// index is then into this rank's share, and every call is collective). The scales are the whole
// group's and each sphere's exact sums are added over the ranks, so every centre is the one of the
// group on one rank, bit for bit (unbind's halo too big for one rank). The communicator must outlive
// the group.
class ShrinkingSphereGroup {
 public:
  ShrinkingSphereGroup(std::span<const double> position, std::span<const double> mass, const Box& box,
                       const std::array<double, 3>& reference, const mpi::Comm* spread = nullptr);
  ~ShrinkingSphereGroup();
  ShrinkingSphereGroup(const ShrinkingSphereGroup&) = delete;
  ShrinkingSphereGroup& operator=(const ShrinkingSphereGroup&) = delete;

  std::array<double, 3> centre(const ShrinkingSphere& params = {}) const;  // of every particle
  // Of the particles `members` (indices into the group, each once, in any order).
  std::array<double, 3> centre(std::span<const std::size_t> members, const ShrinkingSphere& params = {}) const;

  // A centre and the radius of the last sphere whose mean it is (0 for a group too small to shrink).
  struct Found {
    std::array<double, 3> centre;
    double radius = 0;
  };
  // The shrinking spheres of `members` started from a sphere of radius `radius` about `start` (a centre
  // found for a superset, e.g. by the last removal pass) instead of from the whole group: the same
  // steps from there. From the whole group, as centre(members), when `radius` is not positive (`start`
  // is then not read) or that first sphere holds fewer than shrinking_sphere_stop(members) particles.
  Found centre_from(std::span<const std::size_t> members, const std::array<double, 3>& start, double radius,
                    const ShrinkingSphere& params = {}) const;

 private:
  struct Data;
  std::array<double, 3> centre_of(std::span<const std::size_t> members, bool all, const ShrinkingSphere& params) const;
  Found shrink(std::span<const std::size_t> members, bool all, const std::array<double, 3>* start, double radius,
               const ShrinkingSphere& params) const;
  std::unique_ptr<Data> data_;
};

}  // namespace phew::grid
