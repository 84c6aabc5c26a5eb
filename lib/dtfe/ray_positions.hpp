// The lattice positions of a map's rays along one axis, and the first of them at or above any lattice
// position in a few instructions: the projected tetrahedra (tet_projection.cpp) ask this for every row of
// every tetrahedron and for every crossing of a row with a projected edge.
//
// Buckets of 2^shift lattice units from the first position, none wider than the least gap between two
// positions, so a bucket holds at most one: the answer is the first index at or above the bucket's start,
// or the next. (A guess from the mean spacing and a step or two either way, conversions and then a branch
// taken half the time, was a fifth of the map's time.) Positions closer than two lattice units, or a
// table of over 16 entries a position, take a binary search instead.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace phew::dtfe {

// Positions non-decreasing, fewer than 2^31 of them.
class RayPositions {
 public:
  explicit RayPositions(std::vector<std::int64_t> a) : n_(static_cast<int>(a.size())), a_(std::move(a)) {
    std::int64_t gap = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 1; i < a_.size(); ++i) gap = std::min(gap, a_[i] - a_[i - 1]);
    a_.push_back(std::numeric_limits<std::int64_t>::max());  // the sentinel first() reads past the last
    if (n_ < 2 || gap < 2) return;
    shift_ = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(gap))) - 1;  // 2^shift <= gap
    const auto buckets = (static_cast<std::uint64_t>(a_[static_cast<std::size_t>(n_ - 1)] - a_[0]) >> shift_) + 1;
    if (buckets > 16 * static_cast<std::uint64_t>(n_)) return;
    bucket_.resize(buckets);
    int i = 0;
    for (std::uint64_t b = 0; b < buckets; ++b) {
      const std::int64_t start = a_[0] + static_cast<std::int64_t>(b << shift_);
      while (a_[static_cast<std::size_t>(i)] < start) ++i;
      bucket_[b] = i;
    }
  }

  int size() const { return n_; }
  bool bucketed() const { return !bucket_.empty(); }  // the table, not the binary search
  std::int64_t operator[](std::size_t i) const { return a_[i]; }

  // The first i with a[i] >= x, or size().
  int first(std::int64_t x) const {
    if (bucket_.empty()) return static_cast<int>(std::lower_bound(a_.begin(), a_.end() - 1, x) - a_.begin());
    if (x <= a_[0]) return 0;
    // x - a[0] > 0, in unsigned arithmetic: exact for any int64 x, where the signed difference could overflow.
    const std::uint64_t b = (static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(a_[0])) >> shift_;
    if (b >= bucket_.size()) return n_;  // beyond the last bucket, so above the last position
    const int i = bucket_[b];
    return i + static_cast<int>(a_[static_cast<std::size_t>(i)] < x);
  }

 private:
  int n_;
  std::vector<std::int64_t> a_;
  std::vector<std::int32_t> bucket_;  // empty: the binary search
  int shift_ = 0;
};

}  // namespace phew::dtfe
