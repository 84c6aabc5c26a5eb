// The bound gas of each object (docs/unbind-method.md, "Gas"): its mass-weighted temperature and its
// star-forming mass, from the fields the snapshot's gas has, joined to the unbinding's rows by particle
// ID after the unbinding (the members never carry them: a dark-matter run pays nothing).
#pragma once

#include <phew/model/bound.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/snapshot.hpp>

#include <span>
#include <vector>

namespace phew::unbind {

// A gas particle's temperature (K) from its specific internal energy u (velocity units squared, the
// velocity unit `velocity_cm_per_s`): T = (gamma - 1) mu m_p u / k_B, gamma = 5/3, mu = 4 / (1 + 3 X +
// 4 X n_e), X = 0.76, n_e the electrons per hydrogen atom (the snapshot's ElectronAbundance; without
// one, fully ionised primordial gas: n_e = 1 + (1 - X) / (2 X), mu = 0.588).
double gas_temperature(double u, double velocity_cm_per_s, double electron_abundance);
double fully_ionised_electron_abundance();

// Which gas columns add_gas_properties filled.
struct GasColumns {
  bool temperature = false, star_forming = false;
};

// Fills the gas columns of `objects` (this rank's rows, sorted by ID over the ranks): the gas (type 0)
// of `reader` is read a chunk at a time, each particle meets its row of `particles` (this rank's rows,
// sorted by particle ID over the ranks) and adds to the object it is bound to and to that object's
// ancestors (inclusive); every sum is taken in particle-ID order at the object's rank, so the columns do
// not depend on the ranks. Nothing when the gas has neither field. Collective.
GasColumns add_gas_properties(std::vector<model::BoundObject>& objects, std::span<const model::BoundParticle> particles,
                              const particles::SnapshotReader& reader, const mpi::Comm& comm);

}  // namespace phew::unbind
