// Decomposition of a grid's x axis into contiguous slabs of planes, one per rank.
#pragma once

#include <cstdint>
#include <vector>

namespace phew::mpi {

class SlabDecomposition {
 public:
  // nx planes over nranks ranks, as even as possible (the first nx % nranks ranks get one more).
  // Ranks may own zero planes when nranks > nx.
  SlabDecomposition(std::int64_t nx, int nranks);
  // An explicit split: begins[r] is the first plane of rank r (non-decreasing, begins[0] == 0).
  SlabDecomposition(std::int64_t nx, std::vector<std::int64_t> begins);

  std::int64_t nx() const { return nx_; }
  int ranks() const { return static_cast<int>(begin_.size()); }
  std::int64_t begin(int rank) const { return begin_[static_cast<std::size_t>(rank)]; }
  std::int64_t end(int rank) const;
  std::int64_t planes(int rank) const { return end(rank) - begin(rank); }

  // The rank that owns plane i (0 <= i < nx).
  int owner(std::int64_t plane) const;

 private:
  std::int64_t nx_;
  std::vector<std::int64_t> begin_;
};

}  // namespace phew::mpi
