// A distributed sort (sample sort): afterwards each rank holds a sorted run and the runs in rank order
// are the whole sorted sequence, so writing them with File::write_distributed gives a sorted table
// whatever the number of ranks.
#pragma once

#include <phew/mpi/comm.hpp>

#include <algorithm>
#include <vector>

namespace phew::mpi {

// Sorts `items` across ranks by `less` (a strict weak order; equal items may land on either side of a
// rank boundary only if they are identical). Collective.
template <typename T, typename Less>
std::vector<T> sort(const Comm& comm, std::vector<T> items, Less less) {
  // Items often arrive sorted already (a rank's leaves in key order): one pass says so.
  if (!std::is_sorted(items.begin(), items.end(), less)) std::sort(items.begin(), items.end(), less);
  if (comm.size() == 1) return items;
  const auto n = static_cast<std::size_t>(comm.size());
  // Regular samples of every rank's sorted run; splitters from the merged samples.
  std::vector<T> samples;
  for (std::size_t k = 1; k < n && !items.empty(); ++k) samples.push_back(items[k * items.size() / n]);
  std::vector<T> all = comm.all_gatherv<T>(samples);
  std::sort(all.begin(), all.end(), less);
  std::vector<T> splitters;
  for (std::size_t k = 1; k < n && !all.empty(); ++k) splitters.push_back(all[k * all.size() / n]);
  std::vector<std::uint64_t> counts(n, 0);
  std::size_t r = 0;
  for (const T& x : items) {
    while (r < splitters.size() && !less(x, splitters[r])) ++r;  // x goes after splitter r
    ++counts[r];
  }
  std::vector<T> got = comm.all_to_all<T>(items, counts);
  if (!std::is_sorted(got.begin(), got.end(), less)) std::sort(got.begin(), got.end(), less);
  return got;
}

}  // namespace phew::mpi
