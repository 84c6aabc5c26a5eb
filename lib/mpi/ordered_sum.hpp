// Sums that give the same bits on any number of ranks.
//
// Floating-point addition depends on order. Each rank adds its values per (key, chunk) in a fixed local
// order, where a chunk is a piece of the domain owned whole by one rank (a grid plane); the partial
// sums are then added per key in chunk order. As long as chunks never straddle ranks, the result does
// not depend on the decomposition.
#pragma once

#include <phew/core/error.hpp>
#include <phew/core/fixed_sum.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/route.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
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

// Per-key sums of N values, accumulated by chunk.
template <std::size_t N>
class OrderedSum {
 public:
  using Values = std::array<double, N>;

  // Adds v to the partial sum of (key, chunk). Within a rank, calls for one (key, chunk) must come in
  // a fixed order (e.g. cell order).
  void add(std::int64_t key, std::int64_t chunk, const Values& v) {
    Values& s = partial_[{key, chunk}];
    for (std::size_t i = 0; i < N; ++i) s[i] += v[i];
  }
  std::size_t size() const { return partial_.size(); }

  // The totals per key, on every rank, ordered by key. Collective.
  std::map<std::int64_t, Values> totals(const Comm& comm) const {
    return sum_in_chunk_order(comm.all_gatherv<Entry>(entries()));
  }

  // The totals of the keys owned by this rank (owner(key) names the rank), ordered by key: each rank
  // holds only its keys. Collective.
  template <typename Owner>
  std::map<std::int64_t, Values> totals_at_owners(const Comm& comm, Owner&& owner) const {
    return at_owners(comm, entries(), owner);
  }

  // A partial sum of one (key, chunk): for callers that accumulate chunks themselves.
  struct Entry {
    std::int64_t key, chunk;
    Values v;
  };
  // The totals at the keys' owners of partial sums given directly (each (key, chunk) at most once per
  // rank). Collective.
  template <typename Owner>
  static std::map<std::int64_t, Values> at_owners(const Comm& comm, std::vector<Entry> mine, Owner&& owner) {
    return sum_in_chunk_order(route(comm, mine, [&](const Entry& e) { return owner(e.key); }));
  }
  // The totals of partial sums given directly, on every rank. Collective.
  static std::map<std::int64_t, Values> everywhere(const Comm& comm, const std::vector<Entry>& mine) {
    return sum_in_chunk_order(comm.all_gatherv<Entry>(mine));
  }

  // The same partial sums as add() makes, without hashing, for adds that come a chunk at a time
  // (chunks in non-decreasing order: cells in index order) with keys in [0, max_key]: a dense index of
  // the keys met in the current chunk, forgotten when the chunk changes.
  class Chunked {
   public:
    explicit Chunked(std::int64_t max_key) : at_(static_cast<std::size_t>(std::max<std::int64_t>(max_key, 0)) + 1, -1) {}
    void add(std::int64_t key, std::int64_t chunk, const Values& v) {
      if (chunk != chunk_) {
        if (chunk < chunk_) throw core::Error::internal("OrderedSum::Chunked: chunk {} after chunk {}", chunk, chunk_);
        for (std::size_t e = first_; e < entries_.size(); ++e) at_[static_cast<std::size_t>(entries_[e].key)] = -1;
        first_ = entries_.size();
        chunk_ = chunk;
      }
      std::int64_t& k = at_[static_cast<std::size_t>(key)];
      if (k < 0) {
        k = static_cast<std::int64_t>(entries_.size());
        entries_.push_back({key, chunk, Values{}});
      }
      Values& s = entries_[static_cast<std::size_t>(k)].v;
      for (std::size_t i = 0; i < N; ++i) s[i] += v[i];
    }
    std::vector<Entry> take() { return std::move(entries_); }

   private:
    std::vector<std::int64_t> at_;  // per key: its entry in the current chunk, or -1
    std::vector<Entry> entries_;
    std::size_t first_ = 0;  // the current chunk's first entry
    std::int64_t chunk_ = std::numeric_limits<std::int64_t>::min();
  };

 private:
  std::vector<Entry> entries() const {
    std::vector<Entry> out;
    out.reserve(partial_.size());
    for (const auto& [kc, v] : partial_) out.push_back({kc.first, kc.second, v});
    return out;
  }
  static std::map<std::int64_t, Values> sum_in_chunk_order(std::vector<Entry> all) {
    std::sort(all.begin(), all.end(),
              [](const Entry& a, const Entry& b) { return a.key != b.key ? a.key < b.key : a.chunk < b.chunk; });
    std::map<std::int64_t, Values> out;
    for (const Entry& e : all) {
      Values& s = out[e.key];
      for (std::size_t i = 0; i < N; ++i) s[i] += e.v[i];
    }
    return out;
  }

  struct PairHash {
    std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const {
      return std::hash<std::int64_t>()(p.first * 0x9E3779B97F4A7C15LL ^ p.second);
    }
  };
  // Hashed: one add per cell must be cheap. Order does not matter here; the totals sort by chunk.
  std::unordered_map<std::pair<std::int64_t, std::int64_t>, Values, PairHash> partial_;
};

}  // namespace phew::mpi
