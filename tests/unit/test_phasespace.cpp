// Velocity deblending of one patch: two velocity clouds split, one does not, bins stay bounded.
#include <phew/phasespace/velocity_split.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace phew::phasespace {
namespace {

struct Cloud {
  std::vector<double> v, m;
  std::vector<int> truth;
};

// Isotropic Gaussian velocity clouds (dispersion sigma) around the given centres.
Cloud clouds(const std::vector<std::array<double, 3>>& centres, std::size_t n_each, double sigma, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, sigma);
  Cloud c;
  for (std::size_t k = 0; k < centres.size(); ++k)
    for (std::size_t i = 0; i < n_each; ++i) {
      for (std::size_t d = 0; d < 3; ++d) c.v.push_back(centres[k][d] + g(rng));
      c.m.push_back(1.0);
      c.truth.push_back(static_cast<int>(k));
    }
  return c;
}

TEST(VelocitySplit, TwoCloudsSeveralSigmaApartSplit) {
  const Cloud c = clouds({{300, 0, 0}, {-300, 0, 0}}, 4000, 50, 1);
  VelocitySplitParams p;
  p.bin = 25;
  const auto s = split_velocities(c.v, c.m, p);
  ASSERT_EQ(s.n_peaks, 2);
  std::size_t agree = 0;
  // peak 0 is the more massive; match labels up to a swap
  std::size_t same = 0;
  for (std::size_t i = 0; i < c.truth.size(); ++i) same += s.peak[i] == c.truth[i];
  agree = std::max(same, c.truth.size() - same);
  EXPECT_GT(static_cast<double>(agree) / static_cast<double>(c.truth.size()), 0.99);
}

TEST(VelocitySplit, OneCloudDoesNotSplit) {
  for (unsigned seed : {1u, 2u, 3u}) {
    const Cloud c = clouds({{10, 20, 30}}, 20000, 60, seed);
    VelocitySplitParams p;
    p.bin = 15;  // a quarter of the dispersion: noisy histogram, but relevance removes the noise
    EXPECT_EQ(split_velocities(c.v, c.m, p).n_peaks, 1) << seed;
  }
}

TEST(VelocitySplit, HistogramStaysBoundedForWideRanges) {
  const Cloud c = clouds({{0, 0, 0}, {1e5, 0, 0}}, 500, 10, 4);
  VelocitySplitParams p;
  p.bin = 1;  // would need 1e5 bins per axis
  p.max_bins = 64;
  const auto s = split_velocities(c.v, c.m, p);
  for (auto b : s.bins) EXPECT_LE(b, 64 + 1);
  EXPECT_GT(s.bin, 1.0);
  EXPECT_EQ(s.n_peaks, 2);
}

TEST(VelocitySplit, SmallPeaksJoinThePrimary) {
  const Cloud c = clouds({{0, 0, 0}, {500, 0, 0}}, 1000, 30, 5);
  Cloud small = clouds({{0, 0, 0}}, 1000, 30, 6);
  const Cloud extra = clouds({{500, 0, 0}}, 10, 5, 7);  // 10 particles far away: below min_particles
  small.v.insert(small.v.end(), extra.v.begin(), extra.v.end());
  small.m.insert(small.m.end(), extra.m.begin(), extra.m.end());
  VelocitySplitParams p;
  p.bin = 20;
  p.min_particles = 20;
  EXPECT_EQ(split_velocities(small.v, small.m, p).n_peaks, 1);
  EXPECT_EQ(split_velocities(c.v, c.m, p).n_peaks, 2);
}

}  // namespace
}  // namespace phew::phasespace
