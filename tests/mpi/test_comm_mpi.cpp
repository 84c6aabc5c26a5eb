// Communicator helpers, routing, ordered sums, sorting and agreement on errors, at any rank count.
#include <phew/mpi/agree.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/lookup.hpp>
#include <phew/mpi/exact_sums.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/slab.hpp>
#include <phew/mpi/sort.hpp>
#include <phew/mpi/sorted_runs.hpp>
#include <phew/mpi/traffic.hpp>

#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <optional>
#include <random>

namespace phew::mpi {
namespace {

TEST(Comm, AllToAllKeepsSourceOrder) {
  const Comm comm;
  // Rank r sends to each rank d the values 1000*r + d*10 + {0, 1, ..., r}.
  std::vector<int> send;
  std::vector<std::uint64_t> counts;
  for (int d = 0; d < comm.size(); ++d) {
    for (int k = 0; k <= comm.rank(); ++k) send.push_back(1000 * comm.rank() + d * 10 + k);
    counts.push_back(static_cast<std::uint64_t>(comm.rank() + 1));
  }
  const auto got = comm.all_to_all<int>(send, counts);
  std::vector<int> want;
  for (int s = 0; s < comm.size(); ++s)
    for (int k = 0; k <= s; ++k) want.push_back(1000 * s + comm.rank() * 10 + k);
  EXPECT_EQ(got, want);
}

// Unsigned 64-bit minima and maxima above 2^63 (Open MPI 4.1.4 compares MPI_UNSIGNED_LONG as signed):
// the smallest ID and the "none" sentinel of check_unique_ids.
TEST(Comm, MinAndMaxOfUnsigned64BitValuesAboveTwoToThe63) {
  const Comm comm;
  constexpr std::uint64_t kTop = ~std::uint64_t{0};
  const std::uint64_t mine = comm.rank() == comm.size() - 1 ? 2001 : kTop - static_cast<std::uint64_t>(comm.rank());
  EXPECT_EQ(comm.min(mine), 2001u);
  EXPECT_EQ(comm.max(mine), comm.size() == 1 ? std::uint64_t{2001} : kTop);
  const unsigned long long same = mine;
  EXPECT_EQ(comm.min(same), 2001u);
}

// The counters of mpi/traffic.hpp: an all_to_all counts the bytes bound for the other ranks (not those a
// rank keeps) and the size exchange before them; a gather of n bytes counts n per other rank; on one
// rank nothing is counted, because no MPI call is made.
TEST(Traffic, CountsBytesToOtherRanksAndEachCall) {
  const Comm comm;
  const auto n = static_cast<std::uint64_t>(comm.size());
  std::vector<double> send;
  std::vector<std::uint64_t> counts;
  std::uint64_t to_others = 0;
  for (int d = 0; d < comm.size(); ++d) {
    const auto c = static_cast<std::uint64_t>(d + 2);
    counts.push_back(c);
    send.insert(send.end(), c, 1.0 * d);
    if (d != comm.rank()) to_others += c * sizeof(double);
  }
  const Traffic before = traffic();
  comm.all_to_all<double>(send, counts);
  const Traffic a2a = traffic() - before;
  const std::vector<std::int64_t> gathered = comm.all_gather(std::int64_t{comm.rank()});
  const Traffic gather = traffic() - before - a2a;
  EXPECT_EQ(gathered.size(), n);
  EXPECT_EQ(a2a.messages, 0u);
  if (n == 1) {
    EXPECT_EQ(a2a.bytes_sent, 0u);
    EXPECT_EQ(a2a.collectives, 0u);
    EXPECT_EQ(gather.bytes_sent, 0u);
    EXPECT_EQ(gather.collectives, 0u);
  } else {
    EXPECT_EQ(a2a.bytes_sent, to_others + sizeof(std::uint64_t) * (n - 1));
    EXPECT_EQ(a2a.collectives, 2u);  // the counts, then the items
    EXPECT_EQ(gather.bytes_sent, sizeof(std::int64_t) * (n - 1));
    EXPECT_EQ(gather.collectives, 1u);
  }
}

// How many items rank s sends to rank d in the uneven tests: zero for many pairs, rank 0 sends nothing
// and the last rank receives nothing (when there are at least 2 ranks).
std::uint64_t uneven_count(int s, int d, int size) {
  if (s == 0 || (size > 1 && d == size - 1)) return 0;
  return static_cast<std::uint64_t>((s * 7 + d * 3) % 5);
}

TEST(Comm, AllToAllUnevenCountsAndEmptyRanks) {
  const Comm comm;
  std::vector<std::int64_t> send;
  std::vector<std::uint64_t> counts;
  for (int d = 0; d < comm.size(); ++d) {
    counts.push_back(uneven_count(comm.rank(), d, comm.size()));
    for (std::uint64_t k = 0; k < counts.back(); ++k)
      send.push_back(1000000 * comm.rank() + 1000 * d + static_cast<std::int64_t>(k));
  }
  const auto got = comm.all_to_all<std::int64_t>(send, counts);
  std::vector<std::int64_t> want;
  for (int s = 0; s < comm.size(); ++s)
    for (std::uint64_t k = 0; k < uneven_count(s, comm.rank(), comm.size()); ++k)
      want.push_back(1000000 * s + 1000 * comm.rank() + static_cast<std::int64_t>(k));
  EXPECT_EQ(got, want);
}

TEST(Route, EveryItemReachesItsRankInSourceOrder) {
  const Comm comm;
  struct Item {
    std::int64_t source, index;
    int dest;
  };
  std::vector<Item> items;
  for (std::int64_t i = 0; i < 50 + 13 * comm.rank(); ++i)
    items.push_back({comm.rank(), i, static_cast<int>((i * i + comm.rank()) % comm.size())});
  const auto got = route(comm, items, [](const Item& x) { return x.dest; });
  std::vector<std::pair<std::int64_t, std::int64_t>> seen, want;
  for (const Item& x : got) {
    EXPECT_EQ(x.dest, comm.rank());
    seen.emplace_back(x.source, x.index);
  }
  for (int s = 0; s < comm.size(); ++s)
    for (std::int64_t i = 0; i < 50 + 13 * s; ++i)
      if ((i * i + s) % comm.size() == comm.rank()) want.emplace_back(s, i);
  EXPECT_EQ(seen, want);  // grouped by source in rank order, each in its source's order
}

TEST(Route, ScatterToSendsAnItemToEveryRankNamed) {
  const Comm comm;
  // Item i of rank r goes to ranks i % size and (i + 1) % size (once when they coincide).
  std::vector<std::int64_t> items;
  for (std::int64_t i = 0; i < 20; ++i) items.push_back(100 * comm.rank() + i);
  const auto got = scatter_to(comm, std::span<const std::int64_t>(items), [&](std::int64_t x, auto&& emit) {
    const auto i = static_cast<int>(x % 100);
    emit(i % comm.size());
    if ((i + 1) % comm.size() != i % comm.size()) emit((i + 1) % comm.size());
  });
  std::vector<std::int64_t> want;
  for (int s = 0; s < comm.size(); ++s)
    for (int i = 0; i < 20; ++i)
      if (i % comm.size() == comm.rank() || (i + 1) % comm.size() == comm.rank()) want.push_back(100 * s + i);
  EXPECT_EQ(got, want);
}

TEST(Route, ScatterToFromAMovedVectorSendsTheSameAndReleasesIt) {
  const Comm comm;
  std::vector<std::int64_t> items;
  for (std::int64_t i = 0; i < 20 + comm.rank(); ++i) items.push_back(100 * comm.rank() + i);
  auto dest = [&](std::int64_t x, auto&& emit) {
    for (int r = 0; r < comm.size(); ++r)
      if ((x + r) % 3 != 0) emit(r);
  };
  const auto want = scatter_to(comm, std::span<const std::int64_t>(items), dest);
  const auto got = scatter_to(comm, std::move(items), dest);
  EXPECT_EQ(got, want);
  EXPECT_EQ(items.capacity(), 0u);  // NOLINT(bugprone-use-after-move): released on purpose
}

TEST(Route, ScatterToFromAMovedVectorOnOneRankHandsItBackUncopied) {
  const Comm comm;
  std::vector<std::int64_t> items;
  for (std::int64_t i = 0; i < 1000; ++i) items.push_back(100 * comm.rank() + i);
  auto dest = [&](std::int64_t x, auto&& emit) { emit(static_cast<int>(x % comm.size())); };
  const auto want = scatter_to(comm, std::span<const std::int64_t>(items), dest);
  const std::int64_t* before = items.data();
  const auto got = scatter_to(comm, std::move(items), dest);
  EXPECT_EQ(got, want);
  if (comm.size() == 1) {
    EXPECT_EQ(got.data(), before);  // every item to rank 0 once: no copy
  }
}

TEST(Route, ScatterInRoundsSendsWhatScatterToSendsInAnyOrder) {
  const Comm comm;
  for (const std::size_t round : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    // Ranks hold different numbers of items (rank 2 none), so they need different numbers of rounds.
    std::vector<std::int64_t> items;
    const std::int64_t n = comm.rank() == 2 ? 0 : 50 + 13 * comm.rank();
    for (std::int64_t i = 0; i < n; ++i) items.push_back(1000 * comm.rank() + i);
    auto dest = [&](std::int64_t x, auto&& emit) { emit(static_cast<int>((x * 7 + 3) % comm.size())); };
    auto want = scatter_to(comm, std::span<const std::int64_t>(items), dest);
    auto got = scatter_in_rounds(comm, std::move(items), dest, round, want.size());
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << "round " << round;
    EXPECT_EQ(items.capacity(), 0u);  // NOLINT(bugprone-use-after-move): released on purpose
  }
}

TEST(Route, RowsOfARunTimeWidthReachTheirRanks) {
  const Comm comm;
  // Rank r has 3 + r rows of 5 values: (r, i, i*i, 7, -1); row i goes to rank (i + r) % size.
  const std::size_t width = 5, count = 3 + static_cast<std::size_t>(comm.rank());
  auto dest = [&](std::size_t i) {
    return static_cast<int>((i + static_cast<std::size_t>(comm.rank())) % static_cast<std::size_t>(comm.size()));
  };
  const auto got = route_rows<double>(comm, count, width, dest, [&](std::size_t i, double* out) {
    const double row[5] = {static_cast<double>(comm.rank()), static_cast<double>(i), static_cast<double>(i * i), 7, -1};
    std::copy(row, row + 5, out);
  });
  std::vector<double> want;
  for (int s = 0; s < comm.size(); ++s)
    for (std::size_t i = 0; i < 3 + static_cast<std::size_t>(s); ++i)
      if (static_cast<int>((i + static_cast<std::size_t>(s)) % static_cast<std::size_t>(comm.size())) == comm.rank())
        want.insert(want.end(), {static_cast<double>(s), static_cast<double>(i), static_cast<double>(i * i), 7, -1});
  EXPECT_EQ(got, want);  // grouped by source in rank order, each in its source's order
  // No rows anywhere: nothing received.
  EXPECT_TRUE((route_rows<double>(comm, 0, width, dest, [](std::size_t, double*) {})).empty());
}

TEST(Route, ExclusiveScanCountsLowerRanks) {
  const Comm comm;
  const RankSum s = exclusive_scan(comm, static_cast<std::uint64_t>(comm.rank() + 1));
  const auto r = static_cast<std::uint64_t>(comm.rank()), n = static_cast<std::uint64_t>(comm.size());
  EXPECT_EQ(s.before, r * (r + 1) / 2);
  EXPECT_EQ(s.total, n * (n + 1) / 2);
}

TEST(Lookup, AnswersInRequestOrderWithRepeats) {
  const Comm comm;
  // Keys 1..100 are owned by key % size and hold key * key; every rank asks for some, repeated, unordered.
  std::vector<std::int64_t> keys;
  for (std::int64_t i = 0; i < 40; ++i) keys.push_back(1 + (i * 37 + comm.rank() * 11) % 100);
  keys.push_back(keys.front());
  const auto got = lookup<std::int64_t, std::int64_t>(
      comm, keys, [&](std::int64_t k) { return static_cast<int>(k % comm.size()); },
      [&](std::int64_t k) {
        EXPECT_EQ(k % comm.size(), comm.rank()) << "asked the wrong owner";
        return k * k;
      });
  ASSERT_EQ(got.size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(got[i], keys[i] * keys[i]);
  // A rank that asks nothing still answers the others.
  const auto none = lookup<std::int64_t, std::int64_t>(
      comm, comm.rank() == 0 ? std::vector<std::int64_t>{} : keys,
      [&](std::int64_t k) { return static_cast<int>(k % comm.size()); }, [](std::int64_t k) { return -k; });
  EXPECT_EQ(none.size(), comm.rank() == 0 ? 0u : keys.size());
}

TEST(ExactSums, SameBitsOnAnyRanksAndThreadsWhateverTheOrder) {
  // Values whose floating-point sum depends on the order, cut among the ranks and among 3 accumulators
  // per rank (threads), each in its own order: the totals are the fixed-point sum of every term, the
  // same at the owners and everywhere, and close to the exact sum.
  const Comm comm;
  const std::int64_t terms = 300;
  auto value = [](std::int64_t key, std::int64_t i) {
    return (i % 2 ? 1e12 : 1.0) * std::sin(static_cast<double>(key * 131 + i * 17)) + 1e-3 * static_cast<double>(i);
  };
  const std::array<core::FixedScale, 2> scales{core::FixedScale::for_terms(2e12), core::FixedScale::for_terms(1.0)};
  std::vector<ExactSums<2>> parts(3, ExactSums<2>(scales));
  const SlabDecomposition share(terms, comm.size());
  for (std::int64_t i = share.end(comm.rank()) - 1; i >= share.begin(comm.rank()); --i)  // backwards, round robin
    for (std::int64_t key = 1; key <= 5; ++key)
      parts[static_cast<std::size_t>((i * 7 + key) % 3)].add(key, {value(key, i), 1.0});
  const auto mine = joined(parts);
  const auto everywhere = ExactSums<2>::everywhere(comm, mine, scales);
  const auto at_owner = ExactSums<2>::at_owners(comm, mine, scales,
                                                [&](std::int64_t key) { return static_cast<int>(key % comm.size()); });
  for (std::int64_t key = 1; key <= 5; ++key) {
    core::FixedInt fixed = 0;
    long double exact = 0;
    for (std::int64_t i = 0; i < terms; ++i) {
      fixed += scales[0].to_fixed(value(key, i));
      exact += value(key, i);
    }
    ASSERT_TRUE(everywhere.count(key));
    EXPECT_EQ(everywhere.at(key)[0], scales[0].to_double(fixed)) << "key " << key;
    EXPECT_NEAR(everywhere.at(key)[0], static_cast<double>(exact), 1e-3);
    EXPECT_EQ(everywhere.at(key)[1], static_cast<double>(terms));
    if (key % comm.size() == comm.rank()) {
      ASSERT_TRUE(at_owner.count(key));
      EXPECT_EQ(at_owner.at(key), everywhere.at(key));
    } else {
      EXPECT_FALSE(at_owner.count(key));
    }
  }
  // take() empties an accumulator for reuse.
  ExactSums<2> again(scales);
  again.add(3, {1.0, 1.0});
  EXPECT_EQ(again.take().size(), 1u);
  EXPECT_TRUE(again.take().empty());
}

TEST(Sort, RanksHoldConsecutiveRunsOfTheSortedWhole) {
  const Comm comm;
  std::mt19937_64 rng(static_cast<std::uint64_t>(comm.rank()) + 7);
  std::vector<std::int64_t> mine(static_cast<std::size_t>(comm.rank() == 1 ? 0 : 200 + 50 * comm.rank()));
  for (auto& x : mine) x = static_cast<std::int64_t>(rng() % 1000);
  const auto sorted = sort(comm, mine, std::less<>());
  const auto all_in = comm.all_gatherv<std::int64_t>(mine);
  const auto all_out = comm.all_gatherv<std::int64_t>(sorted);
  std::vector<std::int64_t> want(all_in);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(all_out, want);
}

TEST(Agree, TheLowestKeyAnywhereWins) {
  const Comm comm;
  // Every rank but 0 finds a problem; the one with the lowest key is on the last rank.
  std::optional<core::Error> mine;
  if (comm.rank() > 0)
    mine = core::Error::input("item {} is bad", comm.rank() == comm.size() - 1 ? 3 : 10 + comm.rank());
  const std::int64_t key = comm.rank() == comm.size() - 1 ? 3 : 10 + comm.rank();
  if (comm.size() == 1) {
    EXPECT_NO_THROW(agree_first(comm, 0, nullptr));
    return;
  }
  try {
    agree_first(comm, key, mine ? &*mine : nullptr);
    FAIL() << "no error";
  } catch (const core::Error& e) {
    EXPECT_TRUE(e.agreed());
    EXPECT_EQ(e.raised_on(), comm.size() - 1);
    EXPECT_EQ(std::string(e.what()), "item 3 is bad");
  }
}

TEST(Comm, LargeRecordsSurviveTheBlockSplit) {
  const Comm comm;
  struct Rec {
    double v[5];
  };  // 40 bytes: not a multiple of the 64-byte blocks
  std::vector<Rec> send(static_cast<std::size_t>(3 * comm.size()));
  for (std::size_t i = 0; i < send.size(); ++i) send[i].v[4] = comm.rank() * 100.0 + static_cast<double>(i);
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(comm.size()), 3);
  const auto got = comm.all_to_all<Rec>(send, counts);
  ASSERT_EQ(got.size(), send.size());
  for (int s = 0; s < comm.size(); ++s)
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(got[static_cast<std::size_t>(3 * s + k)].v[4], s * 100.0 + 3 * comm.rank() + k);
}

TEST(Comm, AllGathervConcatenatesInRankOrder) {
  const Comm comm;
  const std::vector<long> mine(static_cast<std::size_t>(comm.rank()), comm.rank());
  const auto all = comm.all_gatherv<long>(mine);
  std::vector<long> want;
  for (int r = 0; r < comm.size(); ++r) want.insert(want.end(), static_cast<std::size_t>(r), r);
  EXPECT_EQ(all, want);
}

TEST(Comm, GathervToRootConcatenatesInRankOrderOnRankZeroOnly) {
  const Comm comm;
  const std::vector<long> mine(static_cast<std::size_t>(comm.rank() + 1), comm.rank());
  const auto got = comm.gatherv_to_root<long>(mine);
  std::vector<long> want;
  if (comm.root())
    for (int r = 0; r < comm.size(); ++r) want.insert(want.end(), static_cast<std::size_t>(r + 1), r);
  EXPECT_EQ(got, want);
}

TEST(Agree, AnErrorOnOneRankStopsEveryRankWithItsMessage) {
  const Comm comm;
  const int failing = comm.size() - 1;
  try {
    agree(comm, [&] {
      if (comm.rank() == failing) throw core::Error::input("bad value on rank {}", failing);
    });
    FAIL() << "no error";
  } catch (const core::Error& e) {
    EXPECT_TRUE(e.agreed());
    EXPECT_EQ(e.raised_on(), failing);
    EXPECT_EQ(e.kind(), core::ErrorKind::input);
    EXPECT_EQ(std::string(e.what()), "bad value on rank " + std::to_string(failing));
  }
  EXPECT_NO_THROW(agree(comm, [] {}));
}

TEST(Slabs, OwnersCoverEveryPlaneOnce) {
  for (int ranks = 1; ranks <= 9; ++ranks) {
    const SlabDecomposition s(7, ranks);
    for (std::int64_t p = 0; p < 7; ++p) {
      const int o = s.owner(p);
      EXPECT_GE(p, s.begin(o));
      EXPECT_LT(p, s.end(o));
    }
  }
}

TEST(SortedRuns, EveryKeyFindsTheRankHoldingItsRow) {
  // Keys 10, 20, ... sorted over the ranks, rank 1 holding none (when there is one); every key, and
  // every value between two keys, belongs to the rank holding the run it falls in.
  const Comm comm;
  const int r = comm.rank(), n = comm.size();
  std::vector<std::uint64_t> mine;
  if (!(n > 1 && r == 1))
    for (int k = 0; k < 3; ++k) mine.push_back(static_cast<std::uint64_t>(10 * (3 * r + k) + 10));
  const SortedRuns runs(mine.empty(), mine.empty() ? 0 : mine.front(), comm);
  for (int q = 0; q < n; ++q) {
    if (n > 1 && q == 1) continue;
    for (int k = 0; k < 3; ++k) {
      const auto key = static_cast<std::uint64_t>(10 * (3 * q + k) + 10);
      EXPECT_EQ(runs.owner(key), q) << key;
      EXPECT_EQ(runs.owner(key + 5), q) << key + 5;
    }
  }
  EXPECT_EQ(runs.owner(1), 0);  // before every run: the first rank holding rows
}

}  // namespace
}  // namespace phew::mpi
