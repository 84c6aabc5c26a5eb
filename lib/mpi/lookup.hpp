// Asking the owners of keys for their values: a distributed directory in one collective call.
#pragma once

#include <phew/mpi/comm.hpp>
#include <phew/mpi/route.hpp>

#include <algorithm>
#include <vector>

namespace phew::mpi {

// Each rank asks for the values of `keys` (any order, repeats allowed) and gets them back in the same
// order. owner(key) names the rank that holds a key; value(key) is called on that rank to answer. Keys
// this rank owns are answered in place; the others are asked once each, their owners answering in a
// single exchange. Collective.
template <typename K, typename V, typename Owner, typename Value>
std::vector<V> lookup(const Comm& comm, const std::vector<K>& keys, Owner&& owner, Value&& value) {
  static_assert(std::is_trivially_copyable_v<K> && std::is_trivially_copyable_v<V>);
  const auto n = static_cast<std::size_t>(comm.size());
  const int me = comm.rank();
  std::vector<V> out(keys.size());
  std::vector<char> remote(keys.size(), 0);
  std::vector<K> unique;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (owner(keys[i]) == me) {
      out[i] = value(keys[i]);
    } else {
      remote[i] = 1;
      unique.push_back(keys[i]);
    }
  }
  if (n == 1) return out;  // nothing to ask
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  // Group requests by owner (stable: keys stay sorted within each owner's group).
  std::vector<std::uint64_t> counts(n, 0);
  for (const K& k : unique) ++counts[static_cast<std::size_t>(owner(k))];
  std::vector<std::uint64_t> offset = offsets_of(counts);
  std::vector<K> requests(unique.size());
  std::vector<std::size_t> slot(unique.size());  // where each unique key's answer lands
  for (std::size_t i = 0; i < unique.size(); ++i) {
    const auto r = static_cast<std::size_t>(owner(unique[i]));
    slot[i] = offset[r];
    requests[offset[r]++] = unique[i];
  }
  const std::vector<K> asked = comm.all_to_all<K>(requests, counts);
  std::vector<std::uint64_t> asked_counts(n);
  count_collective(sizeof(std::uint64_t) * (n - 1));
  MPI_Alltoall(counts.data(), 1, MPI_UINT64_T, asked_counts.data(), 1, MPI_UINT64_T, comm.raw());
  std::vector<V> answers(asked.size());
  for (std::size_t i = 0; i < asked.size(); ++i) answers[i] = value(asked[i]);
  const std::vector<V> got = comm.all_to_all<V>(answers, asked_counts);  // back in request order

  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!remote[i]) continue;
    const auto u = static_cast<std::size_t>(std::lower_bound(unique.begin(), unique.end(), keys[i]) - unique.begin());
    out[i] = got[slot[u]];
  }
  return out;
}

}  // namespace phew::mpi
