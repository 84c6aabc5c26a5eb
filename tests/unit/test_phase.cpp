// Velocity deblending of one patch: two velocity clouds split, one does not, bins stay bounded.
#include "phase/velocity_split.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace phew {
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
}  // namespace phew

// ---------------------------------------------------------------------------------------------
// Potentials and voters

#include "phase/tree_potential.hpp"
#include "phase/voters.hpp"

namespace phew {
namespace {

// A Plummer sphere (scale 1, mass 1) of n equal particles, positions only.
std::vector<double> plummer_positions(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> pos;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = 1.0 / std::sqrt(std::pow(u(rng) * 0.99, -2.0 / 3.0) - 1.0);
    double d[3] = {g(rng), g(rng), g(rng)};
    const double norm = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    for (double x : d) pos.push_back(r * x / norm);
  }
  return pos;
}

TEST(TreePotential, AgreesWithDirectSummation) {
  const auto pos = plummer_positions(3000, 11);
  const std::vector<double> mass(3000, 1.0 / 3000);
  TreeParams p;
  p.theta = 0.5;
  p.softening = 0.01;
  const auto tree = tree_potential(pos, mass, pos, p);
  const auto direct = direct_potential(pos, mass, pos, p);
  double worst_phi = 0, rms_acc = 0, rms_ref = 0;
  for (std::size_t i = 0; i < 3000; ++i) {
    worst_phi = std::max(worst_phi, std::abs(tree.potential[i] / direct.potential[i] - 1));
    for (std::size_t d = 0; d < 3; ++d) {
      const double e = tree.acceleration[3 * i + d] - direct.acceleration[3 * i + d];
      rms_acc += e * e;
      rms_ref += direct.acceleration[3 * i + d] * direct.acceleration[3 * i + d];
    }
  }
  EXPECT_LT(worst_phi, 0.01);
  EXPECT_LT(std::sqrt(rms_acc / rms_ref), 0.01);
}

TEST(TreePotential, MatchesThePlummerPotential) {
  const auto pos = plummer_positions(20000, 12);
  const std::vector<double> mass(20000, 1.0 / 20000);
  TreeParams p;
  p.softening = 0.02;
  const std::vector<double> targets{0, 0, 0, 2, 0, 0, 0, 5, 0};
  const auto got = tree_potential(pos, mass, targets, p);
  for (std::size_t t = 0; t < 3; ++t) {
    const double r = t == 0 ? 0 : t == 1 ? 2 : 5;
    const double analytic = -0.99 / std::sqrt(r * r + 1);  // 1% of the mass was cut at large radius
    EXPECT_NEAR(got.potential[t] / analytic, 1.0, 0.03) << "r = " << r;
  }
}

std::vector<Candidate> halo_candidates(const PotentialAt& pa, const std::vector<double>& pos, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 0.3);
  std::vector<Candidate> c;
  for (std::size_t i = 0; i < pa.potential.size(); ++i)
    c.push_back({i + 1, {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]}, {g(rng), g(rng), g(rng)}, pa.potential[i],
                 {pa.acceleration[3 * i], pa.acceleration[3 * i + 1], pa.acceleration[3 * i + 2]}});
  return c;
}

TEST(Voters, TreeAndBruteForcePotentialsPickTheSameVoters) {
  const auto pos = plummer_positions(2000, 13);
  const std::vector<double> mass(2000, 1.0 / 2000);
  TreeParams p;
  p.softening = 0.02;
  const auto a = choose_voters(halo_candidates(tree_potential(pos, mass, pos, p), pos, 1), {0, 0, 0}, 20);
  const auto b = choose_voters(halo_candidates(direct_potential(pos, mass, pos, p), pos, 1), {0, 0, 0}, 20);
  std::size_t same = 0;
  for (auto id : a.id) same += std::count(b.id.begin(), b.id.end(), id);
  EXPECT_GE(same, 18u);
  // Most bound first.
  EXPECT_TRUE(std::is_sorted(a.energy.begin(), a.energy.end()));
}

TEST(Voters, BoostCancelsAUniformExternalField) {
  const auto pos = plummer_positions(2000, 14);
  const std::vector<double> mass(2000, 1.0 / 2000);
  TreeParams p;
  p.softening = 0.02;
  const auto base = halo_candidates(tree_potential(pos, mass, pos, p), pos, 2);
  auto pushed = base;
  const double g[3] = {3.0, -1.0, 0.5};  // a strong uniform field: Phi -= g.x, a += g
  for (Candidate& c : pushed)
    for (std::size_t d = 0; d < 3; ++d) {
      c.potential -= g[d] * c.dx[d];
      c.acceleration[d] += g[d];
    }
  const auto isolated = choose_voters(base, {0, 0, 0}, 20);
  const auto boosted = choose_voters(pushed, {0, 0, 0}, 20);
  const auto plain = choose_voters(pushed, {0, 0, 0}, 20, false);
  std::size_t same_boost = 0, same_plain = 0;
  for (auto id : isolated.id) {
    same_boost += std::count(boosted.id.begin(), boosted.id.end(), id);
    same_plain += std::count(plain.id.begin(), plain.id.end(), id);
  }
  EXPECT_GE(same_boost, 19u);  // equal up to rounding
  EXPECT_LT(same_plain, 10u);  // without the boost the voters slide down the external gradient
}

}  // namespace
}  // namespace phew
