// DTFE distribution and load balancing: the particle index and the ghost zones, the workload model
// fits, the communication list and bin packing of Rangel et al. Sec. IV C-E, and the schedule
// simulator.
#include <phew/dtfe/decomposition.hpp>
#include <phew/dtfe/field_points.hpp>
#include <phew/dtfe/load_model.hpp>
#include <phew/grid/particle_index.hpp>
#include <phew/dtfe/schedule.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>

namespace phew::dtfe {
namespace {

TEST(DtfeModel, TriangulationFitRecoversTheConstant) {
  std::vector<double> n{1e3, 1e4, 5e4, 2e5}, t;
  for (double x : n) t.push_back(3e-7 * x * std::log2(x));
  EXPECT_NEAR(fit_triangulation(n, t).c, 3e-7, 1e-15);
  EXPECT_EQ(fit_triangulation({}, {}).c, 0.0);
}

TEST(DtfeModel, PowerLawFitRecoversAlphaAndBetaFromNoisyTimes) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(0.0, 0.05);
  std::vector<double> n, t;
  for (int i = 0; i < 40; ++i) {
    const double x = std::pow(10.0, 3 + 3.0 * i / 39);
    n.push_back(x);
    t.push_back(2e-3 * std::pow(x, 0.4) * (1 + noise(rng)));
  }
  const PowerLawModel m = fit_power_law(n, t);
  EXPECT_NEAR(m.beta, 0.4, 0.02);
  EXPECT_NEAR(m.alpha / 2e-3, 1.0, 0.15);
  // One distinct n: the default exponent, alpha through the mean.
  const PowerLawModel one = fit_power_law(std::vector<double>{1000, 1000}, std::vector<double>{1.0, 3.0}, 0.5);
  EXPECT_EQ(one.beta, 0.5);
  EXPECT_NEAR(one.predict(1000), 2.0, 1e-12);
}

TEST(DtfeSchedule, CommunicationListLevelsThePredictedTotals) {
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 50; ++trial) {
    const int ranks = 2 + static_cast<int>(rng() % 30);
    std::vector<double> t(static_cast<std::size_t>(ranks));
    for (double& x : t) x = std::pow(u(rng), 4) * 100;  // a few heavy ranks, many light ones
    const double mean = std::accumulate(t.begin(), t.end(), 0.0) / ranks;
    const auto list = communication_list(t);
    std::vector<double> after(t);
    std::set<int> senders, receivers;
    for (const Transfer& x : list) {
      EXPECT_GT(x.amount, 0);
      EXPECT_GT(t[static_cast<std::size_t>(x.sender)], mean);
      EXPECT_LT(t[static_cast<std::size_t>(x.receiver)], mean);
      EXPECT_NEAR(x.at, after[static_cast<std::size_t>(x.receiver)], 1e-9);  // sent when the receiver is free
      after[static_cast<std::size_t>(x.sender)] -= x.amount;
      after[static_cast<std::size_t>(x.receiver)] += x.amount;
      senders.insert(x.sender);
      receivers.insert(x.receiver);
    }
    for (double x : after) EXPECT_NEAR(x, mean, 1e-9 * (1 + mean));
    for (int s : senders) EXPECT_EQ(receivers.count(s), 0u);
    EXPECT_EQ(list.size(), communication_list(t).size());  // deterministic
  }
}

TEST(DtfeSchedule, PackPlacesEveryItemOnceAndRespectsTheBins) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> cost(60);
  for (double& c : cost) c = u(rng);
  const std::vector<Transfer> sends{{0, 3, 5.0, 4.0}, {0, 1, 9.0, 3.0}, {0, 2, 12.0, 2.5}};
  const SenderPlan plan = pack(cost, sends);
  ASSERT_EQ(plan.shipped.size(), 3u);
  EXPECT_EQ(plan.receiver, (std::vector<int>{3, 1, 2}));  // by send time
  std::vector<int> seen(cost.size(), 0);
  for (const auto& v : plan.local)
    for (std::size_t i : v) ++seen[i];
  for (std::size_t k = 0; k < plan.shipped.size(); ++k) {
    double load = 0;
    for (std::size_t i : plan.shipped[k]) ++seen[i], load += cost[i];
    EXPECT_LE(load, sends[k].amount + 1e-12);
    EXPECT_GT(load, 0.8 * sends[k].amount);  // small items fill the bins well
  }
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(DtfeSchedule, SimulatedSchedulesBeatNoBalancingOnSkewedWork) {
  // 4000 fields, most of the cost on a few ranks (dense regions), 64 ranks.
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const int ranks = 64;
  std::vector<double> cost, predicted;
  std::vector<int> owner;
  for (int i = 0; i < 4000; ++i) {
    const int r = u(rng) < 0.5 ? static_cast<int>(rng() % 4) : static_cast<int>(rng() % ranks);
    owner.push_back(r);
    cost.push_back(0.01 + std::pow(u(rng), 3));
    predicted.push_back(cost.back() * (1 + 0.1 * (u(rng) - 0.5)));
  }
  const auto none = simulate_none(cost, owner, ranks);
  const auto model = simulate_model(cost, predicted, owner, ranks, 1e-4);
  const auto dynamic = simulate_dynamic(cost, predicted, owner, ranks, 1e-4);
  const double ideal = none.busy / ranks;
  EXPECT_NEAR(model.busy, none.busy, 1e-9);
  EXPECT_GT(none.makespan, 5 * ideal);
  EXPECT_LT(model.makespan, 0.5 * none.makespan);
  EXPECT_LT(dynamic.makespan, 1.3 * ideal + 1.0);
  EXPECT_GE(model.makespan, ideal * 0.999);
  EXPECT_GE(dynamic.makespan, ideal * 0.999);
}

TEST(DtfeDistribution, TheIndexFindsTheSameFieldPointsAsAPlainScan) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.0, 10.0);
  std::vector<double> pos, mass;
  for (int i = 0; i < 20000; ++i) {
    pos.insert(pos.end(), {u(rng), u(rng), u(rng)});
    mass.push_back(1 + (i % 7));
  }
  const grid::Box box{{0, 0, 0}, {10, 10, 10}, true};
  const grid::ParticleIndex index(pos, mass, box, 0.7);
  for (const auto& c : std::vector<std::array<double, 3>>{{0.1, 9.9, 5}, {5, 5, 5}, {9.95, 0.02, 0.01}}) {
    for (int axis : {0, 1, 2}) {
      FieldGeometry g;
      g.center = c;
      g.size = 3;
      g.depth = axis == 1 ? 10 : 4;  // the whole box along y
      g.margin = 0.4;
      g.resolution = 8;
      g.axis = axis;
      const FieldPoints a = field_points(index, g), b = select_field(pos, mass, g, {10, 10, 10});
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(a.n_selected, b.n_selected);
      EXPECT_EQ(std::memcmp(a.q.data(), b.q.data(), a.q.size() * sizeof(std::int32_t)), 0);
      EXPECT_EQ(std::memcmp(a.mass.data(), b.mass.data(), a.mass.size() * sizeof(double)), 0);
    }
  }
  // A window wider than the box holds images.
  FieldGeometry wide;
  wide.center = {5, 5, 5};
  wide.size = 15;
  wide.depth = 10;
  wide.resolution = 4;
  EXPECT_EQ(field_points(index, wide).n_selected, select_field(pos, mass, wide, {10, 10, 10}).n_selected);
}

TEST(DtfeDistribution, GhostZonesHoldEveryWindowOfTheBlock) {
  std::mt19937_64 rng(6);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const grid::Box box{{0, 0, 0}, {1, 1, 1}, true};
  const std::array<double, 3> half{0.08, 0.08, 0.2};
  for (int ranks : {1, 2, 3, 4, 6, 8, 12}) {
    const VolumeDecomposition blocks(box, half, ranks);
    const auto& d = blocks.dims();
    EXPECT_EQ(d[0] * d[1] * d[2], ranks);
    std::vector<int> need;
    for (int trial = 0; trial < 2000; ++trial) {
      const std::array<double, 3> c{u(rng), u(rng), u(rng)};
      const int owner = blocks.owner(c);
      // A point inside c's window (possibly across the periodic boundary) must reach the owner.
      double x[3];
      for (std::size_t k = 0; k < 3; ++k) {
        x[k] = c[k] + (2 * u(rng) - 1) * half[k] * 0.999;
        x[k] -= std::floor(x[k]);
      }
      blocks.needing(x, need);
      EXPECT_NE(std::find(need.begin(), need.end(), owner), need.end()) << ranks << " ranks";
    }
  }
}

TEST(DtfeDistribution, EveryRankWhoseGhostedBlockHoldsAParticleGetsIt) {
  // The reference: block by block, whether the particle or one of its images lies in the block
  // widened by its ghosts (the same floor arithmetic per axis), against needing()'s folded runs.
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (bool periodic : {true, false})
    for (const double g : {0.01, 0.2, 0.45, 1.3})
      for (int ranks : {1, 2, 3, 5, 6, 8, 12, 27}) {
        const grid::Box box{{-1, 2, 0.5}, {2, 1, 3}, periodic};
        const std::array<double, 3> ghost{g * 2, g, g * 3};
        const VolumeDecomposition blocks(box, ghost, ranks);
        const auto& dims = blocks.dims();
        std::vector<int> need;
        for (int trial = 0; trial < 300; ++trial) {
          double x[3];
          for (std::size_t d = 0; d < 3; ++d)
            x[d] = box.origin[d] + box.extent[d] * (periodic ? u(rng) : 1.2 * u(rng) - 0.1);
          std::set<int> want;
          for (int r = 0; r < ranks; ++r) {
            const int b[3] = {r / (dims[1] * dims[2]), (r / dims[2]) % dims[1], r % dims[2]};
            bool in = true;
            for (std::size_t d = 0; d < 3 && in; ++d) {
              const int p = dims[d];
              if (p == 1) continue;
              const double w = box.extent[d] / p, v = x[d] - box.origin[d];
              const auto lo = static_cast<long>(std::floor((v - ghost[d]) / w)),
                         hi = static_cast<long>(std::floor((v + ghost[d]) / w));
              bool hit = false;
              for (long i = lo; i <= hi && !hit; ++i) hit = periodic ? ((i % p) + p) % p == b[d] : i == b[d];
              if (!periodic && std::max(lo, 0L) > std::min(hi, static_cast<long>(p) - 1))  // outside: the edge block
                hit = std::clamp(static_cast<long>(std::floor(v / w)), 0L, static_cast<long>(p) - 1) == b[d];
              in = hit;
            }
            if (in) want.insert(r);
          }
          blocks.needing(x, need);
          const std::set<int> got(need.begin(), need.end());
          EXPECT_EQ(got.size(), need.size()) << "a rank twice";
          EXPECT_EQ(got, want) << ranks << " ranks, ghost " << g << (periodic ? ", periodic" : ", open");
        }
      }
}

}  // namespace
}  // namespace phew::dtfe
