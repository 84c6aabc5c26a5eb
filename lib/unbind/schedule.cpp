#include <phew/unbind/schedule.hpp>

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <utility>

namespace phew::unbind {

HaloSchedule schedule_haloes(std::span<const std::int64_t> particles, int ranks, std::int64_t budget) {
  const std::size_t n = particles.size();
  std::vector<std::size_t> order(n);  // biggest first
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return particles[a] > particles[b]; });

  // Longest-first onto the least loaded rank: a halo of more than 1/ranks of the total is alone, since
  // the other ranks together hold less than (ranks - 1) times it, so one of them always holds less.
  HaloSchedule s;
  s.owner.assign(n, 0);
  s.batch.assign(n, 0);
  using Load = std::pair<std::int64_t, int>;  // (particles, rank): the smallest first, then the lower rank
  std::priority_queue<Load, std::vector<Load>, std::greater<>> least;
  for (int r = 0; r < std::max(1, ranks); ++r) least.push({0, r});
  for (const std::size_t h : order) {
    auto [load, rank] = least.top();
    least.pop();
    s.owner[h] = rank;
    least.push({load + particles[h], rank});
  }

  // Each rank's haloes in the same order, cut into batches of at most `budget` particles.
  struct Open {
    std::int64_t batch = 0, held = 0;
    bool empty = true;
  };
  std::vector<Open> open(static_cast<std::size_t>(std::max(1, ranks)));
  for (const std::size_t h : order) {
    Open& o = open[static_cast<std::size_t>(s.owner[h])];
    if (!o.empty && o.held + particles[h] > budget) {
      ++o.batch;
      o.held = 0;
    }
    o.held += particles[h];
    o.empty = false;
    s.batch[h] = o.batch;
  }
  for (const Open& o : open) s.batches = std::max(s.batches, o.empty ? 0 : o.batch + 1);
  return s;
}

}  // namespace phew::unbind
