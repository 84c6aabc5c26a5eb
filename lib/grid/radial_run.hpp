// Particles sorted by distance from a centre, whole on one rank or cut over the ranks into runs in rank
// order (gravity::DistributedSphericalProfile's): this rank's run and where it lies in the whole. The
// scans over such an order (the enclosed mass, the spherical-overdensity radius, unbind's Vmax and NFW
// shells) are written once over it: a running sum continues from the runs before (Comm::relay), so it
// has the one scan's bits for any number of ranks, and what one rank finds is shared by small
// collectives (none on one rank).
#pragma once

#include <phew/mpi/comm.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace phew::grid {

struct RadialRun {
  mpi::Comm comm = mpi::Comm::self();
  std::span<const double> radius, mass;  // this rank's run, ascending in radius
  std::uint64_t first = 0;               // the whole order's index of radius[0]
  std::uint64_t total = 0;               // the whole order's length

  // The whole order on one rank.
  static RadialRun whole(std::span<const double> radius, std::span<const double> mass) {
    return {mpi::Comm::self(), radius, mass, 0, radius.size()};
  }
  // M(<= r_k) at each particle of the run: the running sum of the masses from the first of the whole
  // order. Collective.
  std::vector<double> enclosed() const {
    std::vector<double> e(mass.size());
    comm.relay(0.0, [&](double m) {
      for (std::size_t k = 0; k < mass.size(); ++k) e[k] = m += mass[k];
      return m;
    });
    return e;
  }
  // values[g - first] from the rank whose run holds the whole order's index g (T{} when none does).
  // Collective.
  template <typename T>
  T at(std::span<const T> values, std::uint64_t g) const {
    struct Held {
      int has;
      T value;
    };
    const bool mine = g >= first && g - first < values.size();
    for (const Held& h : comm.all_gather(Held{mine ? 1 : 0, mine ? values[g - first] : T{}}))
      if (h.has) return h.value;
    return T{};
  }
};

}  // namespace phew::grid
