// Sums that give the same bits on any number of ranks and threads, whatever the order of their terms.
//
// Floating-point addition depends on order, and a decomposition decides which rank and thread adds
// which terms. So every term is rounded once to a fixed-point integer (core::FixedScale, one scale per
// component from a bound every rank agrees on) and the integers are added exactly: the partial sums of
// any split of the terms add up to the same total.
#pragma once

#include <phew/core/fixed_sum.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/route.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <vector>

namespace phew::mpi {

// The sum over the ranks of fixed-point sums (core::FixedScale), on every rank: exact, so in no order.
// Collective.
inline core::FixedInt exact_total(const Comm& comm, core::FixedInt mine) {
  core::FixedInt total = 0;
  for (const core::FixedInt v : comm.all_gather(mine)) total += v;
  return total;
}

// Per-key sums of N values with keys in [0, max_key]: a dense index of the keys met (memory goes with
// the keys' range once, and with the keys met). One per thread; partials of any number of them, from
// any ranks, combine exactly (at_owners, everywhere).
template <std::size_t N>
class ExactSums {
 public:
  using Values = std::array<double, N>;
  using Scales = std::array<core::FixedScale, N>;
  struct Entry {
    std::int64_t key;
    std::array<core::FixedInt, N> sum;
  };

  ExactSums(const Scales& scales, std::int64_t max_key)
      : scales_(scales), at_(static_cast<std::size_t>(std::max<std::int64_t>(max_key, 0)) + 1, -1) {}

  void add(std::int64_t key, const Values& v) {
    std::int64_t& k = at_[static_cast<std::size_t>(key)];
    if (k < 0) {
      k = static_cast<std::int64_t>(entries_.size());
      entries_.push_back({key, {}});
    }
    Entry& e = entries_[static_cast<std::size_t>(k)];
    for (std::size_t i = 0; i < N; ++i) e.sum[i] += scales_[i].to_fixed(v[i]);
  }
  // The partial sums, and the accumulator emptied.
  std::vector<Entry> take() {
    for (const Entry& e : entries_) at_[static_cast<std::size_t>(e.key)] = -1;
    return std::move(entries_);
  }

  // The totals of the keys owned by this rank (owner(key) names the rank), ordered by key, from partial
  // sums of any threads and ranks. Collective.
  template <typename Owner>
  static std::map<std::int64_t, Values> at_owners(const Comm& comm, const std::vector<Entry>& mine, const Scales& scales,
                                                  Owner&& owner) {
    return totals(route(comm, mine, [&](const Entry& e) { return owner(e.key); }), scales);
  }
  // The totals on every rank. Collective.
  static std::map<std::int64_t, Values> everywhere(const Comm& comm, const std::vector<Entry>& mine, const Scales& scales) {
    return totals(comm.all_gatherv<Entry>(mine), scales);
  }

 private:
  static std::map<std::int64_t, Values> totals(const std::vector<Entry>& all, const Scales& scales) {
    std::map<std::int64_t, std::array<core::FixedInt, N>> sums;
    for (const Entry& e : all) {
      auto& s = sums[e.key];
      for (std::size_t i = 0; i < N; ++i) s[i] += e.sum[i];
    }
    std::map<std::int64_t, Values> out;
    for (const auto& [key, s] : sums) {
      Values& v = out[key];
      for (std::size_t i = 0; i < N; ++i) v[i] = scales[i].to_double(s[i]);
    }
    return out;
  }

  Scales scales_;
  std::vector<std::int64_t> at_;  // per key: its entry, or -1
  std::vector<Entry> entries_;
};

// Joins the partial sums of several accumulators (threads) into one list.
template <std::size_t N>
std::vector<typename ExactSums<N>::Entry> joined(std::vector<ExactSums<N>>& parts) {
  std::vector<typename ExactSums<N>::Entry> out;
  for (ExactSums<N>& p : parts) {
    auto e = p.take();
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

}  // namespace phew::mpi
