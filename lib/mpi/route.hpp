// Moving items to the ranks that need them: the one place that groups items by destination, counts
// them and calls all_to_all. Tools and modules say where an item goes; this file does the rest.
#pragma once

#include <phew/core/raw_vector.hpp>
#include <phew/mpi/comm.hpp>

#include <algorithm>
#include <numeric>
#include <span>
#include <vector>

namespace phew::mpi {

// Offsets of consecutive groups of the given sizes (an exclusive prefix sum), local to this rank.
inline std::vector<std::uint64_t> offsets_of(std::span<const std::uint64_t> counts) {
  std::vector<std::uint64_t> offset(counts.size());
  std::exclusive_scan(counts.begin(), counts.end(), offset.begin(), std::uint64_t{0});
  return offset;
}

// Sends every item to rank dest(item); `out` receives what this rank gets, grouped by source rank in
// rank order, each group in the order the items had on their source, so the result is deterministic.
// `send` is scratch. Both keep their capacity: a loop that routes a chunk at a time passes the same
// vectors each time and allocates nothing (fresh pages cost as much as the copy). Collective.
template <typename T, typename Dest>
void route_into(const Comm& comm, std::span<const T> items, Dest&& dest, std::vector<T>& out, std::vector<T>& send) {
  const auto n = static_cast<std::size_t>(comm.size());
  if (n == 1) {                              // one rank keeps everything, in its order: one copy
    for (const T& item : items) dest(item);  // the same checks as on more ranks, if dest makes any
    out.assign(items.begin(), items.end());
    return;
  }
  std::vector<int> to(items.size());
  std::vector<std::uint64_t> counts(n, 0);
  for (std::size_t i = 0; i < items.size(); ++i) {
    to[i] = dest(items[i]);
    ++counts[static_cast<std::size_t>(to[i])];
  }
  std::vector<std::uint64_t> at = offsets_of(counts);
  send.resize(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) send[at[static_cast<std::size_t>(to[i])]++] = items[i];
  comm.all_to_all<T>(std::span<const T>(send), counts, out);
}
// The same, returning what this rank receives.
template <typename T, typename Dest>
std::vector<T> route(const Comm& comm, std::span<const T> items, Dest&& dest) {
  std::vector<T> out, send;
  route_into(comm, items, std::forward<Dest>(dest), out, send);
  return out;
}
template <typename T, typename Dest>
std::vector<T> route(const Comm& comm, const std::vector<T>& items, Dest&& dest) {
  return route(comm, std::span<const T>(items), std::forward<Dest>(dest));
}

namespace detail {
// Items grouped by destination rank for all_to_all, and the counts per rank.
template <typename T, typename Destinations>
std::vector<T> pack_for_scatter(const Comm& comm, std::span<const T> items, Destinations& destinations,
                                std::vector<std::uint64_t>& counts) {
  counts.assign(static_cast<std::size_t>(comm.size()), 0);
  for (const T& item : items) destinations(item, [&](int r) { ++counts[static_cast<std::size_t>(r)]; });
  std::vector<std::uint64_t> at = offsets_of(counts);
  std::vector<T> send(static_cast<std::size_t>(std::accumulate(counts.begin(), counts.end(), std::uint64_t{0})));
  for (const T& item : items) destinations(item, [&](int r) { send[at[static_cast<std::size_t>(r)]++] = item; });
  return send;
}
}  // namespace detail
// The same for `count` rows of `width` values each, a width known only at run time (a map's pixels,
// say): row i goes to rank dest(i), written straight into the send buffer by fill(i, out), which
// fills out[0, width). Returns the rows received, grouped by source rank in rank order, each group in
// its source's order. Collective.
template <typename T, typename Dest, typename Fill>
std::vector<T> route_rows(const Comm& comm, std::size_t count, std::size_t width, Dest&& dest, Fill&& fill) {
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<int> to(count);
  std::vector<std::uint64_t> counts(n, 0);
  for (std::size_t i = 0; i < count; ++i) {
    to[i] = dest(i);
    counts[static_cast<std::size_t>(to[i])] += width;
  }
  std::vector<std::uint64_t> at = offsets_of(counts);
  std::vector<T> send(count * width);
  for (std::size_t i = 0; i < count; ++i) {
    auto& a = at[static_cast<std::size_t>(to[i])];
    fill(i, send.data() + a);
    a += width;
  }
  return comm.all_to_all<T>(send, counts);
}

// Sends every item to each rank that destinations(item, emit) names by calling emit(rank) (any number of
// times, each rank at most once per item). Received items are grouped by source rank in rank order, in
// their source's order. Collective.
template <typename T, typename Destinations>
std::vector<T> scatter_to(const Comm& comm, std::span<const T> items, Destinations&& destinations) {
  std::vector<std::uint64_t> counts;
  const std::vector<T> send = detail::pack_for_scatter(comm, items, destinations, counts);
  return comm.all_to_all<T>(send, counts);
}
// The same, releasing `items` once they are packed, so that they are never held together with the
// received items (large exchanges: the particles voters distributes). Collective.
// On one rank, where every item goes to rank 0 once, `items` themselves are the result (no copy).
template <typename T, typename Destinations>
std::vector<T> scatter_to(const Comm& comm, std::vector<T>&& items, Destinations&& destinations) {
  if (comm.size() == 1) {
    bool once_each = true;
    for (const T& item : items) {
      int emitted = 0;
      destinations(item, [&](int) { ++emitted; });
      once_each = once_each && emitted == 1;
    }
    if (once_each) return std::move(items);
  }
  std::vector<std::uint64_t> counts;
  const std::vector<T> send = detail::pack_for_scatter(comm, std::span<const T>(items), destinations, counts);
  std::vector<T>().swap(items);
  return comm.all_to_all<T>(send, counts);
}

// The same when the order received does not matter (the caller sorts what it gets) and each item goes
// to one rank: `items` are sent from their end in rounds of at most `round` items per rank, each round's
// pages given back as it goes (core::release_pages), into a result reserved for `expected` items (what
// this rank will receive, when the caller knows it; more is fine). A rank then holds its items and what
// it receives about once, plus one round's copies, where scatter_to holds the items twice. On one rank
// `items` themselves are the result. Collective.
template <typename T, typename Destinations>
std::vector<T> scatter_in_rounds(const Comm& comm, std::vector<T>&& items, Destinations&& destinations,
                                 std::size_t round, std::size_t expected) {
  if (comm.size() == 1) return scatter_to(comm, std::move(items), destinations);
  std::vector<T> out;
  out.reserve(expected);
  const std::uint64_t rounds = comm.max<std::uint64_t>((items.size() + round - 1) / round);
  for (std::uint64_t r = 0; r < rounds; ++r) {
    const std::size_t take = std::min(round, items.size());
    const std::vector<T> got =
        scatter_to(comm, std::span<const T>(items.data() + items.size() - take, take), destinations);
    items.resize(items.size() - take);
    core::release_pages(reinterpret_cast<char*>(items.data() + items.size()), items.data() + items.size() + take);
    out.insert(out.end(), got.begin(), got.end());
  }
  std::vector<T>().swap(items);
  return out;
}

// A value summed over ranks: what the lower ranks hold together, and the total over every rank.
struct RankSum {
  std::uint64_t before = 0;  // sum over ranks 0 .. rank-1
  std::uint64_t total = 0;   // sum over every rank
};
// Collective.
inline RankSum exclusive_scan(const Comm& comm, std::uint64_t mine) {
  const std::vector<std::uint64_t> all = comm.all_gather(mine);
  RankSum s;
  for (int r = 0; r < comm.size(); ++r) {
    if (r < comm.rank()) s.before += all[static_cast<std::size_t>(r)];
    s.total += all[static_cast<std::size_t>(r)];
  }
  return s;
}

}  // namespace phew::mpi
