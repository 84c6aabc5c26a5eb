// unbind's schedule (lib/unbind/schedule.hpp): a halo bigger than a rank's share is alone on its rank,
// the rest spread over the others; batches never exceed the budget but for one bigger halo alone.
#include <phew/unbind/schedule.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

namespace phew::unbind::test {
namespace {

// Particles per (rank, batch).
std::map<std::pair<int, std::int64_t>, std::int64_t> held(const HaloSchedule& s, const std::vector<std::int64_t>& n) {
  std::map<std::pair<int, std::int64_t>, std::int64_t> out;
  for (std::size_t h = 0; h < n.size(); ++h) out[{s.owner[h], s.batch[h]}] += n[h];
  return out;
}

TEST(UnbindSchedule, AHaloBiggerThanTheShareIsAloneOnItsRank) {
  // A cluster in the middle of the ID order, as haloes in runs of IDs would have put others with it.
  std::vector<std::int64_t> n = {300, 200, 250, 100, 10'000, 400, 50, 0, 350, 150};
  for (int ranks : {2, 3, 4}) {
    const HaloSchedule s = schedule_haloes(n, ranks, 1'000'000);
    for (std::size_t h = 0; h < n.size(); ++h) {
      if (h == 4) continue;
      EXPECT_NE(s.owner[h], s.owner[4]) << "halo " << h << " at " << ranks << " ranks";
    }
    EXPECT_EQ(s.batches, 1);
  }
  // Two big haloes at three ranks: each alone, the rest on the third.
  n = {5000, 10, 20, 6000, 30};
  const HaloSchedule s = schedule_haloes(n, 3, 1'000'000);
  EXPECT_NE(s.owner[0], s.owner[3]);
  for (std::size_t h : {1, 2, 4}) {
    EXPECT_NE(s.owner[h], s.owner[0]);
    EXPECT_NE(s.owner[h], s.owner[3]);
  }
}

TEST(UnbindSchedule, BatchesKeepToTheBudgetButForOneBiggerHalo) {
  std::vector<std::int64_t> n;
  for (int h = 0; h < 200; ++h) n.push_back((h * 37) % 101);
  n[17] = 5000;
  for (int ranks : {1, 2, 3}) {
    const HaloSchedule s = schedule_haloes(n, ranks, 400);
    EXPECT_GT(s.batches, 1);
    for (const auto& [at, particles] : held(s, n)) {
      bool alone = true;
      for (std::size_t h = 0; h < n.size(); ++h)
        if (s.owner[h] == at.first && s.batch[h] == at.second && n[h] > 0 && n[h] != particles) alone = false;
      EXPECT_TRUE(particles <= 400 || (particles == 5000 && alone)) << particles << " at " << ranks << " ranks";
    }
    for (std::size_t h = 0; h < n.size(); ++h) EXPECT_LT(s.batch[h], s.batches);
  }
  // One rank, a budget above the total: everything in one batch.
  const HaloSchedule one = schedule_haloes(n, 1, 1'000'000);
  EXPECT_EQ(one.batches, 1);
  EXPECT_TRUE(std::all_of(one.owner.begin(), one.owner.end(), [](int r) { return r == 0; }));
}

TEST(UnbindSchedule, NoHaloes) {
  const HaloSchedule s = schedule_haloes({}, 3, 10);
  EXPECT_EQ(s.batches, 0);
  EXPECT_TRUE(s.owner.empty());
}

}  // namespace
}  // namespace phew::unbind::test
