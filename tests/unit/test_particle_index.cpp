// ParticleIndex: the one spatial binning of particles. within() against a plain scan (periodic and
// open boxes, radii from tiny to wider than the box, queries outside the box), count() against a plain
// count of periodic images, positions without masses.
#include <phew/core/error.hpp>
#include <phew/grid/particle_index.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace phew::grid {
namespace {

std::vector<std::size_t> plain_within(const std::vector<double>& pos, const Box& b, const std::array<double, 3>& x,
                                      double r) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < pos.size() / 3; ++i) {
    double r2 = 0;
    for (std::size_t d = 0; d < 3; ++d) {
      const double dx = minimum_image(pos[3 * i + d] - x[d], b.extent[d], b.periodic);
      r2 += dx * dx;
    }
    if (r2 <= r * r) out.push_back(i);
  }
  return out;
}

TEST(ParticleIndex, WithinMatchesAPlainScanInPeriodicAndOpenBoxes) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (bool periodic : {true, false}) {
    const Box b{{-3, 2, 10}, {8, 5, 6}, periodic};
    std::vector<double> pos, mass;
    for (int i = 0; i < 3000; ++i) {
      for (std::size_t d = 0; d < 3; ++d) {
        double x = b.origin[d] + b.extent[d] * u(rng);
        if (!periodic && i % 50 == 0) x += (u(rng) - 0.5) * 4;  // a few outside an open box
        pos.push_back(x);
      }
      mass.push_back(1.0 + i % 3);
    }
    for (double cell : {0.3, 1.0, 100.0}) {
      const ParticleIndex index(pos, mass, b, cell);
      EXPECT_EQ(index.size(), 3000u);
      for (int q = 0; q < 200; ++q) {
        std::array<double, 3> x{};
        for (std::size_t d = 0; d < 3; ++d) x[d] = b.origin[d] + b.extent[d] * (1.4 * u(rng) - 0.2);
        const double r = q % 10 == 0 ? 7.0 : 2.5 * u(rng) * u(rng);
        const auto got = index.within(x, r);
        EXPECT_EQ(got, plain_within(pos, b, x, r)) << "periodic " << periodic << " cell " << cell << " r " << r;
        EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
      }
      // A point on a particle, radius 0: that particle (and any exact duplicate).
      const std::array<double, 3> on{pos[30], pos[31], pos[32]};
      const auto got = index.within(on, 0.0);
      EXPECT_NE(std::find(got.begin(), got.end(), 10u), got.end());
    }
  }
}

TEST(ParticleIndex, PositionsOnlyAndDegenerateQueries) {
  const Box b{{0, 0, 0}, {1, 1, 1}, true};
  const std::vector<double> pos{0.05, 0.5, 0.5, 0.95, 0.5, 0.5, 0.5, 0.5, 0.5};
  const ParticleIndex index(pos, {}, b, 0.1);
  EXPECT_EQ(index.size(), 3u);
  // Through the periodic boundary: 0.05 and 0.95 are 0.1 apart.
  EXPECT_EQ(index.within({0.0, 0.5, 0.5}, 0.06), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(index.within({0.5, 0.5, 0.5}, 10.0), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_TRUE(index.within({0.5, 0.5, 0.5}, -1.0).empty());
  EXPECT_TRUE(index.within({NAN, 0.5, 0.5}, 1.0).empty());
  double mass_seen = -1;
  index.visit({0.5, 0.5, 0.5}, {0.01, 0.01, 0.01}, [&](double, double, double, double m) { mass_seen = m; });
  EXPECT_EQ(mass_seen, 0.0);
}

TEST(ParticleIndex, CountsEveryPeriodicImageInAWindow) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> u(0.0, 10.0);
  std::vector<double> pos, mass;
  for (int i = 0; i < 2000; ++i) {
    pos.insert(pos.end(), {u(rng), u(rng), u(rng)});
    mass.push_back(1);
  }
  const Box b{{0, 0, 0}, {10, 10, 10}, true};
  const ParticleIndex index(pos, mass, b, 0.8);
  for (const auto& [c, h] : std::vector<std::pair<std::array<double, 3>, std::array<double, 3>>>{
           {{5, 5, 5}, {1, 2, 3}}, {{0.1, 9.9, 5}, {1.5, 1.5, 1.5}}, {{5, 5, 5}, {7.5, 5, 5}}}) {
    std::uint64_t plain = 0;
    for (std::size_t i = 0; i < 2000; ++i) {
      std::uint64_t per_axis[3] = {0, 0, 0};
      for (std::size_t d = 0; d < 3; ++d)
        for (int s = -2; s <= 2; ++s) {
          const double y = (pos[3 * i + d] + s * 10.0) - c[d];
          if (y >= -h[d] && y < h[d]) ++per_axis[d];
        }
      plain += per_axis[0] * per_axis[1] * per_axis[2];
    }
    EXPECT_EQ(index.count(c, h), plain);
  }
}

// An index over the caller's points in place (voters' particles): the points rearranged by
// cell_order, strided as in a struct of four doubles, give within() the same particles as a copying
// index (mapped through the order) and count() the same counts, in periodic and open boxes; points
// out of cell order are refused.
TEST(ParticleIndex, InPlaceOverRearrangedPointsEqualsTheCopy) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (bool periodic : {true, false}) {
    const Box b{{-3, 2, 10}, {8, 5, 6}, periodic};
    std::vector<double> pos;
    for (int i = 0; i < 2000; ++i)
      for (std::size_t d = 0; d < 3; ++d)
        pos.push_back(b.origin[d] + b.extent[d] * u(rng) + (!periodic && i % 40 == 0 ? 3 * (u(rng) - 0.5) : 0.0));
    const std::size_t n = pos.size() / 3;
    for (double cell : {0.3, 1.0, 100.0}) {
      const ParticleIndex copy(pos, {}, b, cell);
      const std::vector<std::size_t> order = ParticleIndex::cell_order(ParticleIndex::points(pos), b, cell);
      ASSERT_EQ(order.size(), n);
      std::vector<double> held(4 * n, -1.0);  // x, y, z and one more double a point
      for (std::size_t k = 0; k < n; ++k)
        for (std::size_t d = 0; d < 3; ++d) held[4 * k + d] = pos[3 * order[k] + d];
      const ParticleIndex::Points strided{reinterpret_cast<const std::byte*>(held.data()), 4 * sizeof(double), n};
      // Stable: points already in cell order keep their order.
      const std::vector<std::size_t> again = ParticleIndex::cell_order(strided, b, cell);
      for (std::size_t k = 0; k < n; ++k) ASSERT_EQ(again[k], k) << "cell " << cell;
      const ParticleIndex kept = ParticleIndex::in_place(strided, b, cell);
      ParticleIndex copied = kept;  // copies and moves read the same points
      const ParticleIndex in_place = std::move(copied);
      EXPECT_EQ(in_place.size(), n);
      for (int q = 0; q < 100; ++q) {
        std::array<double, 3> x{};
        for (std::size_t d = 0; d < 3; ++d) x[d] = b.origin[d] + b.extent[d] * (1.4 * u(rng) - 0.2);
        const double r = q % 10 == 0 ? 7.0 : 2.5 * u(rng) * u(rng);
        std::vector<std::size_t> got = in_place.within(x, r);
        EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
        for (std::size_t& k : got) k = order[k];
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, copy.within(x, r)) << "periodic " << periodic << " cell " << cell << " r " << r;
        const std::array<double, 3> half{r, 0.5 * r, 2 * r};
        EXPECT_EQ(in_place.count(x, half), copy.count(x, half));
      }
      const ParticleIndex empty = ParticleIndex::in_place(ParticleIndex::Points{}, b, cell);
      EXPECT_EQ(empty.size(), 0u);
      EXPECT_TRUE(empty.within(b.origin, 100.0).empty());
      if (cell < 1) {  // many cells: the first point and the last lie in different cells
        std::vector<double> swapped = held;
        std::swap_ranges(swapped.begin(), swapped.begin() + 4, swapped.end() - 4);
        EXPECT_THROW(ParticleIndex::in_place(ParticleIndex::Points{reinterpret_cast<const std::byte*>(swapped.data()),
                                                                   4 * sizeof(double), n},
                                             b, cell),
                     core::Error);
      }
    }
  }
}

}  // namespace
}  // namespace phew::grid
