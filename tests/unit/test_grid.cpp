// Mass assignment: exact cases with known answers, and agreement with the naive reference.
#include <phew/core/error.hpp>
#include <phew/core/threads.hpp>
#include <phew/grid/cell_set.hpp>
#include <phew/grid/deposit.hpp>
#include <phew/grid/geometry.hpp>
#include "reference_deposit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <mutex>
#include <numeric>
#include <random>

namespace phew::grid {
namespace {

GridGeometry cube(long n, double box, bool periodic = true) {
  GridGeometry g;
  g.shape = {n, n, n};
  g.extent = {box, box, box};
  g.periodic = periodic;
  return g;
}

std::vector<double> run(const GridGeometry& g, Assignment a, const std::vector<double>& pos,
                        const std::vector<double>& mass) {
  const mpi::Comm self(MPI_COMM_SELF);
  const mpi::BlockDecomposition slabs(g.shape, 1);
  const core::RawVector<double> m = deposit(g, a, slabs, pos, mass, self).mass;
  return {m.begin(), m.end()};
}

std::size_t at(const GridGeometry& g, long i, long j, long k) {
  return static_cast<std::size_t>((i * g.shape[1] + j) * g.shape[2] + k);
}

// minimum_image's compares give the bits of d - box * round(d / box) for separations inside the box
// and at the halves where round's answer changes (either side by one ulp, signed zeros), at the quarters
// where the division starts, and beyond.
TEST(Geometry, MinimumImageIsTheRoundedFormulaBitForBit) {
  const auto formula = [](double d, double box) { return d - box * std::round(d / box); };
  std::mt19937_64 rng(11);
  std::vector<double> ds{0.0, -0.0, 1e-300, -1e-300};
  for (const double box : {1.0, 3.0, 0.1, 250.0, 1e5}) {
    std::uniform_real_distribution<double> in(-1.6 * box, 1.6 * box), far(-40 * box, 40 * box);
    std::vector<double> cases = ds;
    for (int i = 0; i < 20000; ++i) cases.push_back(in(rng));
    for (int i = 0; i < 2000; ++i) cases.push_back(far(rng));
    for (const double half : {0.25, 0.5, 1.5, 2.5})
      for (const double sign : {1.0, -1.0}) {
        const double at = sign * half * box;
        cases.insert(cases.end(), {at, std::nextafter(at, 0.0), std::nextafter(at, 2 * at)});
      }
    for (const double d : cases) {
      ASSERT_EQ(std::bit_cast<std::uint64_t>(grid::minimum_image(d, box, true)),
                std::bit_cast<std::uint64_t>(formula(d, box)))
          << "d " << d << " box " << box;
      ASSERT_EQ(std::bit_cast<std::uint64_t>(grid::minimum_image(d, box, false)), std::bit_cast<std::uint64_t>(d));
    }
  }
}

// wrap_position is its formula, x - box * floor(x / box) (with a result of box rounded to 0), bit for
// bit: inside the box (where it returns x at once), at its edges one ulp either side, signed zeros and
// far outside, for boxes at a power of two and between, tiny, subnormal, huge and infinite.
TEST(Geometry, WrapPositionIsItsFormulaBitForBit) {
  const auto formula = [](double x, double box) {
    const double w = x - box * std::floor(x / box);
    return w >= box ? 0.0 : w;
  };
  std::mt19937_64 rng(5);
  for (const double box : {1.0, 3.0, 0.1, 250.0, 1e5, 65536.0, 5e4, 1e-20, 1e-310, 1e300, double(INFINITY)}) {
    std::vector<double> cases{0.0, -0.0, 1e-300, -1e-300, 3.5, box, -box, 2 * box, 1e30, -1e30, NAN};
    for (const double edge : {0.0, box, 2 * box, -box})
      cases.insert(cases.end(), {std::nextafter(edge, -INFINITY), std::nextafter(edge, INFINITY)});
    if (box < 1e301) {
      std::uniform_real_distribution<double> in(0, box), near(-1.5 * box, 2.5 * box);
      for (int i = 0; i < 20000; ++i) cases.push_back(in(rng));
      for (int i = 0; i < 5000; ++i) cases.push_back(near(rng));
    }
    for (const double x : cases) {
      const double want = formula(x, box), got = grid::wrap_position(x, box);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << "x " << x << " box " << box;  // a NaN's payload is the hardware's
        continue;
      }
      ASSERT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(want)) << "x " << x << " box " << box;
    }
  }
  EXPECT_EQ(grid::wrap_position(-3.5, 0.0), -3.5);  // no box: x as it is
}

TEST(Assignment, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(parse_assignment("cic"), Assignment::cic);
  EXPECT_EQ(parse_assignment("TSC"), Assignment::tsc);
  EXPECT_THROW(parse_assignment("sph"), core::Error);
}

TEST(Deposit, ParticleAtCellCentreFillsOneCell) {
  const auto g = cube(8, 8.0);
  for (Assignment a : {Assignment::ngp, Assignment::cic}) {
    const auto m = run(g, a, {2.5, 3.5, 4.5}, {2.0});
    EXPECT_EQ(m[at(g, 2, 3, 4)], 2.0);
    EXPECT_EQ(std::accumulate(m.begin(), m.end(), 0.0), 2.0);
  }
}

TEST(Deposit, TscAtCellCentreGivesKnownWeights) {
  const auto g = cube(8, 8.0);
  const auto m = run(g, Assignment::tsc, {2.5, 3.5, 4.5}, {1.0});
  EXPECT_DOUBLE_EQ(m[at(g, 2, 3, 4)], 0.75 * 0.75 * 0.75);
  EXPECT_DOUBLE_EQ(m[at(g, 1, 3, 4)], 0.125 * 0.75 * 0.75);
  EXPECT_DOUBLE_EQ(m[at(g, 1, 2, 5)], 0.125 * 0.125 * 0.125);
}

TEST(Deposit, CicAtCellCornerSplitsInEight) {
  const auto g = cube(8, 8.0);
  const auto m = run(g, Assignment::cic, {3.0, 3.0, 3.0}, {8.0});
  for (long i : {2, 3})
    for (long j : {2, 3})
      for (long k : {2, 3}) EXPECT_EQ(m[at(g, i, j, k)], 1.0) << i << j << k;
}

TEST(Deposit, CicWrapsAcrossThePeriodicBoundary) {
  const auto g = cube(4, 4.0);
  const auto m = run(g, Assignment::cic, {0.0, 0.0, 0.0}, {8.0});  // corner of cells 0 and 3
  for (long i : {0, 3})
    for (long j : {0, 3})
      for (long k : {0, 3}) EXPECT_EQ(m[at(g, i, j, k)], 1.0);
}

TEST(Deposit, TscWrapsOnATinyGrid) {
  // Two planes: the kernel touches plane 0 through both neighbours.
  GridGeometry g = cube(2, 2.0);
  const auto m = run(g, Assignment::tsc, {0.5, 0.5, 0.5}, {1.0});
  EXPECT_NEAR(std::accumulate(m.begin(), m.end(), 0.0), 1.0, 1e-15);
  EXPECT_NEAR(m[at(g, 0, 0, 0)], 0.75 * 0.75 * 0.75, 1e-15);
}

TEST(Deposit, NonPeriodicGridDropsWeightOutsideAndIgnoresOutsideParticles) {
  GridGeometry g = cube(4, 4.0, false);
  const mpi::Comm self(MPI_COMM_SELF);
  const auto r = deposit(g, Assignment::cic, mpi::BlockDecomposition(g.shape, 1),
                         std::vector<double>{0.0, 2.5, 2.5, 9, 9, 9}, std::vector<double>{2.0, 5.0}, self);
  EXPECT_EQ(r.particles_outside, 1u);
  EXPECT_EQ(r.particles_in, 1u);
  EXPECT_DOUBLE_EQ(r.mass_total, 1.0);  // half the cloud lies below x = 0
  EXPECT_EQ(r.mass[at(g, 0, 2, 2)], 1.0);
}

// n particles uniformly in [0, 10)^3 with masses in [0.5, 2), [n][3] positions then masses.
std::pair<std::vector<double>, std::vector<double>> random_particles(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> x(0.0, 10.0), mu(0.5, 2.0);
  std::vector<double> pos(3 * n), mass(n);
  for (auto& v : pos) v = x(rng);
  for (auto& v : mass) v = mu(rng);
  return {std::move(pos), std::move(mass)};
}

class AgainstReference : public ::testing::TestWithParam<const char*> {};

TEST_P(AgainstReference, RandomParticlesAgreeAndConserveMass) {
  const std::string kernel = GetParam();
  const auto g = cube(16, 10.0);
  const auto [pos, mass] = random_particles(5000, 42);
  const auto got = run(g, parse_assignment(kernel), pos, mass);
  const auto want = test::reference_deposit({16, 16, 16}, {10, 10, 10}, pos, mass, kernel);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t c = 0; c < got.size(); ++c) ASSERT_NEAR(got[c], want[c], 1e-12 * (1 + want[c])) << "cell " << c;
  const double total = std::accumulate(mass.begin(), mass.end(), 0.0);
  EXPECT_NEAR(std::accumulate(got.begin(), got.end(), 0.0), total, 1e-12 * total);
}

INSTANTIATE_TEST_SUITE_P(Kernels, AgainstReference, ::testing::Values("ngp", "cic", "tsc"));

// The clouds' pages hold positions alone while the masses agree and whole clouds otherwise, switching
// as the masses go (deposit.cpp, CloudBuckets): runs of one mass longer and shorter than a page, a page
// of positions made whole part-filled and closed nearly full, alternating and all different masses,
// each against the reference, with about 1,250 clouds a plane (several pages of either kind).
TEST(Deposit, CloudsOfOneMassOrManyAgreeWithTheReference) {
  const auto g = cube(16, 10.0);
  const std::size_t n = 20000;
  auto [pos, random_mass] = random_particles(n, 7);
  std::vector<std::pair<std::string, std::vector<double>>> cases;
  cases.emplace_back("one mass", std::vector<double>(n, 1.25));
  std::vector<double> runs(n), alternating(n), tail(n);
  for (std::size_t i = 0; i < n; ++i) {
    runs[i] = (i / 10000 + i / 700 + (i % 3000 == 0)) % 3 == 0 ? 1.0 : 2.0 + static_cast<double>(i % 5 == 0);
    alternating[i] = i % 2 ? 0.5 : 1.5;
    tail[i] = i < n / 2 ? random_mass[i] : 3.0;  // many masses, then one
  }
  cases.emplace_back("runs", runs);
  cases.emplace_back("alternating", alternating);
  cases.emplace_back("many then one", tail);
  cases.emplace_back("all different", random_mass);
  for (const auto& [name, mass] : cases) {
    const auto got = run(g, parse_assignment("cic"), pos, mass);
    const auto want = test::reference_deposit({16, 16, 16}, {10, 10, 10}, pos, mass, "cic");
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t c = 0; c < got.size(); ++c)
      ASSERT_NEAR(got[c], want[c], 1e-12 * (1 + want[c])) << name << ", cell " << c;
    const double total = std::accumulate(mass.begin(), mass.end(), 0.0);
    EXPECT_NEAR(std::accumulate(got.begin(), got.end(), 0.0), total, 1e-12 * total) << name;
  }
}

// Chunks of at most `chunk` items on any number of threads, one thread too (the deposit sizes its scratch
// by them), each item exactly once.
TEST(ParallelFor, ChunksOfAtMostChunkOnAnyThreads) {
  for (const int threads : {1, 2, 3}) {
    std::vector<int> seen(10, 0);
    std::mutex m;
    core::parallel_for(threads, 10, 3, [&](std::size_t b, std::size_t e, int) {
      std::lock_guard<std::mutex> lock(m);
      EXPECT_LE(e - b, 3U);
      EXPECT_EQ(b % 3, 0U);
      for (std::size_t i = b; i < e; ++i) ++seen[i];
    });
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 10) << threads << " threads";
  }
}

// The block-by-block sink (cic-project's float32 grid) gives every plane exactly once, with the bits of
// the whole float64 grid, on any number of threads, particles given at once or in chunks; before_sums
// comes before the first block.
TEST_P(AgainstReference, SinkGivesTheWholeGridsBitsBlockByBlock) {
  const Assignment a = parse_assignment(GetParam());
  const auto g = cube(40, 10.0);
  const auto [pos, mass] = random_particles(20000, 7);
  const mpi::Comm self(MPI_COMM_SELF);
  const mpi::BlockDecomposition slabs(g.shape, 1);
  const DepositResult whole = deposit(g, a, slabs, pos, mass, self);
  const auto plane = static_cast<std::size_t>(g.shape[1] * g.shape[2]);
  for (const int threads : {1, 3}) {
    std::vector<double> got(whole.mass.size(), -1.0);
    std::vector<int> given(static_cast<std::size_t>(g.shape[0]), 0);
    bool released = false, released_first = true;
    DepositMemory memory;
    memory.before_sums = [&] { released = true; };
    memory.sink = [&](std::size_t p0, std::size_t p1, const double* m) {
      released_first = released_first && released;
      for (std::size_t p = p0; p < p1; ++p) ++given[p];  // blocks never overlap, so no two threads touch one
      std::copy(m, m + (p1 - p0) * plane, got.begin() + static_cast<std::ptrdiff_t>(p0 * plane));
    };
    Deposit chunked(g, a, slabs, self, threads);
    for (std::size_t b = 0; b < mass.size(); b += 777) {  // chunks of 777 particles, the last shorter
      const std::size_t e = std::min(mass.size(), b + 777);
      chunked.add(std::span<const double>(pos).subspan(3 * b, 3 * (e - b)),
                  std::span<const double>(mass).subspan(b, e - b));
    }
    const DepositResult blocks = chunked.finish(memory);
    EXPECT_TRUE(blocks.mass.empty());
    EXPECT_TRUE(released_first);
    EXPECT_EQ(std::count(given.begin(), given.end(), 1), g.shape[0]) << threads << " threads";
    EXPECT_TRUE(std::equal(got.begin(), got.end(), whole.mass.begin(), whole.mass.end())) << threads << " threads";
    EXPECT_EQ(blocks.mass_total, whole.mass_total);
  }
}

TEST(GridShape, Parses) {
  EXPECT_EQ(parse_grid_shape("64"), (std::array<std::int64_t, 3>{64, 64, 64}));
  EXPECT_EQ(parse_grid_shape("8,16,32"), (std::array<std::int64_t, 3>{8, 16, 32}));
  EXPECT_THROW(parse_grid_shape("0"), core::Error);
  EXPECT_THROW(parse_grid_shape("8,8"), core::Error);
  EXPECT_THROW(parse_grid_shape("x"), core::Error);
}

// The grid rule: the finest cubic cells holding at least one particle mass at the threshold, each axis
// down to a multiple of 8.
TEST(GridRule, OneParticleMassPerThresholdCell) {
  const std::array<double, 3> cube{50000, 50000, 50000};
  EXPECT_EQ(grid_rule_shape(cube, 32768, 80), (std::array<std::int64_t, 3>{136, 136, 136}));  // 137.9
  EXPECT_EQ(grid_rule_shape(cube, 32768, 8), (std::array<std::int64_t, 3>{64, 64, 64}));      // exactly 64
  EXPECT_EQ(grid_rule_shape(cube, 512.0 * 512 * 512, 80), (std::array<std::int64_t, 3>{2200, 2200, 2200}));
  EXPECT_EQ(grid_rule_shape(cube, 10, 1), (std::array<std::int64_t, 3>{8, 8, 8}));                      // at least 8
  EXPECT_EQ(grid_rule_shape({10, 20, 40}, 10 * 20 * 40, 1), (std::array<std::int64_t, 3>{8, 16, 40}));  // cell 1
  for (const double delta : {10.0, 80.0, 200.0, 1000.0}) {
    const auto s = grid_rule_shape(cube, 32768, delta);
    EXPECT_GE(particles_per_threshold_cell(delta, 32768, static_cast<double>(s[0] * s[1] * s[2])),
              kParticlesPerThresholdCell);
    const double finer = static_cast<double>((s[0] + 8) * (s[1] + 8) * (s[2] + 8));
    EXPECT_LT(particles_per_threshold_cell(delta, 32768, finer), kParticlesPerThresholdCell) << delta;
  }
}

// CellSet against a plain list: membership, rank and ranged iteration, across word boundaries and with
// sizes that are not a multiple of 64.
TEST(CellSet, MembershipRankAndRangesAgreeWithAPlainList) {
  std::mt19937 rng(5);
  for (const std::size_t slots :
       {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65}, std::size_t{1000}}) {
    for (const double fill : {0.0, 0.03, 0.5, 1.0}) {
      CellSet set(slots);
      std::vector<std::size_t> members;
      for (std::size_t s = 0; s < slots; ++s)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < fill) {
          set.insert(s);
          members.push_back(s);
        }
      set.finish();
      ASSERT_EQ(set.size(), members.size());
      for (std::size_t s = 0; s <= slots; ++s) {
        const auto below =
            static_cast<std::size_t>(std::lower_bound(members.begin(), members.end(), s) - members.begin());
        ASSERT_EQ(set.rank(s), below) << slots << " slots, slot " << s;
        if (s < slots) {
          ASSERT_EQ(set.contains(s), std::binary_search(members.begin(), members.end(), s));
        }
      }
      for (const auto& [b, e] :
           {std::pair<std::size_t, std::size_t>{0, slots}, {slots / 3, slots / 2}, {1, 1}, {63, 130}}) {
        std::vector<std::pair<std::size_t, std::size_t>> got, want;
        set.for_each(b, e, [&](std::size_t s, std::size_t k) { got.emplace_back(s, k); });
        for (std::size_t k = 0; k < members.size(); ++k)
          if (members[k] >= b && members[k] < e) want.emplace_back(members[k], k);
        ASSERT_EQ(got, want) << slots << " slots, range " << b << ".." << e;
      }
    }
  }
}

}  // namespace
}  // namespace phew::grid
