// SphericalProfile of a set spread over ranks: what a halo too big for one rank needs for unbind's
// profile potential. The members are sorted by (radius, key) across the ranks (mpi::sort), and the
// profile's running sums (the mass inside, the m / s(r) outside, U) are carried from rank to rank in
// that order (Comm::relay), each added in the one order the serial profile adds it in. So the
// potentials, U and Phi(r) are SphericalProfile's bits for any number of ranks, given keys that order
// ties as its indices do (a set held in ID order, its IDs as keys: unbind's).
#pragma once

#include <phew/grid/radial_run.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace phew::gravity {

class DistributedSphericalProfile {
 public:
  // This rank's share of the set: position [n][3], mass [n] and key [n] (unique over every rank), of
  // which `members` (ascending indices) are the set. Collective.
  DistributedSphericalProfile(const mpi::Comm& comm, std::span<const double> position, std::span<const double> mass,
                              std::span<const std::uint64_t> key, std::span<const std::size_t> members,
                              const std::array<double, 3>& centre, double G, double softening);

  std::uint64_t size() const { return total_; }  // members on every rank
  double total_mass() const { return total_mass_; }
  // Phi at each of this rank's members due to every other member, into phi[member index] (other
  // entries untouched): SphericalProfile::potentials. Collective.
  void potentials(std::vector<double>& phi) const;
  // U = -G sum_k m_k M(<r_k) / s(r_k), the same on every rank: SphericalProfile::potential_energy.
  double potential_energy() const { return potential_energy_; }
  // Phi at distance r from the centre due to every member, the same on every rank:
  // SphericalProfile::at_radius. Collective.
  double at_radius(double r) const;
  // This rank's run of the sorted order (radius, mass), for the scans of lib/grid/radial_run.hpp, and
  // the keys of its members.
  grid::RadialRun run() const {
    return {comm_, radius_, mass_, first_[static_cast<std::size_t>(comm_.rank())], total_};
  }
  const std::vector<std::uint64_t>& run_keys() const { return key_; }
  // `width` values per member of this rank (values[k * width ...] for the k-th of `members`) brought
  // into this rank's run, [run][width]: what the scans read of each particle beside its radius and
  // mass. Collective.
  std::vector<double> carry(std::span<const double> values, std::size_t width) const;
  // The same one column at a time, without the [member][width] and [run][width] arrays:
  // value(c, k) is column c of the k-th of `members`, store(c, j, v) receives column c of the run's
  // j-th. The requests are routed once and one column's buffers reused, so a big run holds 8 bytes a
  // member in flight, not `width` doubles. Collective.
  template <typename Value, typename Store>
  void carry_columns(std::size_t width, Value value, Store store) const;

 private:
  // Where a member of the run came from: the rank and its place in that rank's `members`.
  struct Origin {
    std::int32_t rank;
    std::uint32_t position;
  };
  // Who asks what of whom when the run's members fetch values from the ranks they came from.
  struct Routes {
    std::vector<std::uint64_t> asked_counts;   // per rank: how many of this run came from it
    std::vector<std::uint64_t> answer_counts;  // per rank: how many it asked of this one
    std::vector<std::uint32_t> asked_of_me;    // positions in this rank's `members`, as asked
    std::vector<std::size_t> slot;             // per answer received: the run member it is for
  };
  Routes routes() const;

  const mpi::Comm& comm_;
  double G_, eps2_;
  std::uint64_t total_ = 0;
  double total_mass_ = 0, potential_energy_ = 0;
  std::vector<double> radius_;        // this rank's run of the sorted radii
  std::vector<double> mass_;          // and masses
  std::vector<std::uint64_t> key_;    // and keys
  std::vector<Origin> origin_;        // and origins
  std::vector<double> before_;        // [run + 1]: the mass of every member before each of the run, and after it
  std::vector<double> outside_;       // [run + 1]: the sum of m / s(r) from each member of the run on, and after it
  std::vector<std::uint64_t> first_;  // [rank + 1]: where each rank's run starts in the sorted order
  std::vector<std::size_t> members_;  // this rank's members, in the order given
};

template <typename Value, typename Store>
void DistributedSphericalProfile::carry_columns(std::size_t width, Value value, Store store) const {
  const Routes r = routes();
  std::vector<double> answer(r.asked_of_me.size()), answered;
  for (std::size_t c = 0; c < width; ++c) {
    for (std::size_t j = 0; j < answer.size(); ++j) answer[j] = value(c, r.asked_of_me[j]);
    comm_.all_to_all<double>(answer, r.answer_counts, answered);
    for (std::size_t j = 0; j < answered.size(); ++j) store(c, r.slot[j], answered[j]);
  }
}

}  // namespace phew::gravity
