#include <phew/mpi/slab.hpp>

#include <phew/core/error.hpp>

#include <algorithm>

namespace phew::mpi {

SlabDecomposition::SlabDecomposition(std::int64_t nx, int nranks) : nx_(nx) {
  if (nx < 1 || nranks < 1) throw core::Error::internal("slab decomposition of {} planes over {} ranks", nx, nranks);
  const std::int64_t base = nx / nranks, extra = nx % nranks;
  std::int64_t b = 0;
  for (int r = 0; r < nranks; ++r) {
    begin_.push_back(b);
    b += base + (r < extra ? 1 : 0);
  }
}

SlabDecomposition::SlabDecomposition(std::int64_t nx, std::vector<std::int64_t> begins)
    : nx_(nx), begin_(std::move(begins)) {
  if (begin_.empty() || begin_.front() != 0 || !std::is_sorted(begin_.begin(), begin_.end()) || begin_.back() > nx)
    throw core::Error::internal("invalid explicit slab decomposition");
}

std::int64_t SlabDecomposition::end(int rank) const {
  return rank + 1 < ranks() ? begin_[static_cast<std::size_t>(rank) + 1] : nx_;
}

int SlabDecomposition::owner(std::int64_t plane) const {
  // The last rank whose slab begins at or before the plane and is not empty there.
  auto it = std::upper_bound(begin_.begin(), begin_.end(), plane);
  return static_cast<int>(it - begin_.begin()) - 1;
}

}  // namespace phew::mpi
