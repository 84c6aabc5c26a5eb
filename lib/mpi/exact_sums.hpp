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
#include <unordered_map>
#include <vector>

namespace phew::mpi {

// The sum over the ranks of fixed-point sums (core::FixedScale), on every rank: exact, so in no order.
// Collective.
inline core::FixedInt exact_total(const Comm& comm, core::FixedInt mine) {
  core::FixedInt total = 0;
  for (const core::FixedInt v : comm.all_gather(mine)) total += v;
  return total;
}

// Per-key sums of N values: memory goes with the keys met, so one per thread costs what that thread
// touched (runs of adds to one key, as cells of one clump come, find their entry without a search).
// Partials of any number of them, from any ranks, combine exactly (at_owners, everywhere).
template <std::size_t N>
class ExactSums {
 public:
  using Values = std::array<double, N>;
  using Scales = std::array<core::FixedScale, N>;
  struct Entry {
    std::int64_t key;
    std::array<core::FixedInt, N> sum;
  };

  explicit ExactSums(const Scales& scales) : scales_(scales) {}

  void add(std::int64_t key, const Values& v) {
    Entry& e = entry(key);
    for (std::size_t i = 0; i < N; ++i) e.sum[i] += scales_[i].to_fixed(v[i]);
  }
  // Terms already in units of this accumulator's scales (scale i's to_fixed): for a hot loop that adds
  // one term to several accumulators of the same scale, or a term that is the same for many adds, and
  // converts it once.
  void add_fixed(std::int64_t key, const std::array<core::FixedInt, N>& v) {
    Entry& e = entry(key);
    for (std::size_t i = 0; i < N; ++i) e.sum[i] += v[i];
  }
  // The partial sums, and the accumulator emptied.
  std::vector<Entry> take() {
    at_.clear();
    last_ = 0;
    return std::move(entries_);
  }

  // The totals of the keys owned by this rank (owner(key) names the rank), ordered by key, from partial
  // sums of any threads and ranks. Collective.
  template <typename Owner>
  static std::map<std::int64_t, Values> at_owners(const Comm& comm, const std::vector<Entry>& mine,
                                                  const Scales& scales, Owner&& owner) {
    return totals(route(comm, mine, [&](const Entry& e) { return owner(e.key); }), scales);
  }
  // The totals on every rank. Collective.
  static std::map<std::int64_t, Values> everywhere(const Comm& comm, const std::vector<Entry>& mine,
                                                   const Scales& scales) {
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

  Entry& entry(std::int64_t key) {
    if (entries_.empty() || entries_[last_].key != key) {
      const auto [it, fresh] = at_.try_emplace(key, entries_.size());
      if (fresh) entries_.push_back({key, {}});
      last_ = it->second;
    }
    return entries_[last_];
  }

  Scales scales_;
  std::unordered_map<std::int64_t, std::size_t> at_;  // key -> its entry
  std::vector<Entry> entries_;
  std::size_t last_ = 0;  // the entry of the last add
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
