// Where the rows of a table sorted over the ranks live (mpi::sort's result, rank r's rows before rank
// r + 1's): each rank holds a run of keys, so the rank holding a key is the last whose run starts at or
// before it. What another table's row needs to be sent beside the row it belongs with.
#pragma once

#include <phew/mpi/comm.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace phew::mpi {

class SortedRuns {
 public:
  // `empty`: this rank holds no row; else `first` is its first key. Collective.
  SortedRuns(bool empty, std::uint64_t first, const Comm& comm) {
    using Start = std::array<std::uint64_t, 2>;  // {holds rows, first key}
    const std::vector<Start> all = comm.all_gather<Start>(empty ? Start{0, 0} : Start{1, first});
    for (std::size_t r = 0; r < all.size(); ++r)
      if (all[r][0]) starts_.push_back({all[r][1], r});
  }
  // The rank whose run holds `key` (the first rank holding rows for a key before every run; 0 when no
  // rank holds any).
  int owner(std::uint64_t key) const {
    const auto after =
        std::upper_bound(starts_.begin(), starts_.end(), key,
                         [](std::uint64_t k, const std::array<std::uint64_t, 2>& s) { return k < s[0]; });
    if (after == starts_.begin()) return starts_.empty() ? 0 : static_cast<int>(starts_.front()[1]);
    return static_cast<int>((after - 1)->at(1));
  }

 private:
  std::vector<std::array<std::uint64_t, 2>> starts_;  // {first key, rank} of the ranks holding rows
};

}  // namespace phew::mpi
