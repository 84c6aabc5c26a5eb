// Spherical-overdensity masses on hand-made particles whose answer is known: the
// outermost radius where the mean enclosed density is still Δ ρ_crit, not the first crossing outward
// (a dense particle near the centre with a gap behind it must not end the search); a uniform sphere's
// M200 and r200 exactly; a sphere across the periodic boundary; NaN, not 0, when fewer than the minimum
// count of particles reach Δ. And the shrinking-sphere centre (Power et al. 2003) of a group with a
// subclump, an elongated tail and across the periodic boundary.
#include <phew/core/fixed_sum.hpp>
#include <phew/grid/shrinking_sphere.hpp>
#include <phew/grid/spherical_overdensity.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <random>

namespace phew::grid {
namespace {

constexpr double kPi = std::numbers::pi;

// n particles uniform in the shell r_in <= r < r_out around c (no box wrapping: the caller wraps).
void add_shell(std::vector<double>& pos, std::size_t n, const std::array<double, 3>& c, double r_in, double r_out,
               std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double r = std::cbrt(r_in * r_in * r_in + u(rng) * (r_out * r_out * r_out - r_in * r_in * r_in));
    const double cz = 2 * u(rng) - 1, phi = 2 * kPi * u(rng), s = std::sqrt(1 - cz * cz);
    pos.insert(pos.end(), {c[0] + r * s * std::cos(phi), c[1] + r * s * std::sin(phi), c[2] + r * cz});
  }
}

void wrap(std::vector<double>& pos, const Box& b) {
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = wrap_into(b, pos[i], i % 3);
}

// The radius where a mass M has mean density `target`.
double radius_of(double mass, double target) { return std::cbrt(3 * mass / (4 * kPi * target)); }

struct Case {
  std::vector<double> pos, mass;
};

// A uniform sphere of radius 1 whose mean density is 800 ρ_crit (ρ_crit = 1), of n particles.
Case uniform_sphere(const std::array<double, 3>& c, std::size_t n, std::uint64_t seed) {
  Case k;
  std::mt19937_64 rng(seed);
  add_shell(k.pos, n, c, 0.0, 1.0, rng);
  k.mass.assign(n, 800.0 * 4.0 / 3.0 * kPi / static_cast<double>(n));
  return k;
}

TEST(SphericalOverdensity, UniformSphereHasItsKnownM200AndR200) {
  const Box box{{0, 0, 0}, {100, 100, 100}, true};
  const std::array<double, 3> c{40, 50, 60};
  const Case k = uniform_sphere(c, 20000, 1);
  const ParticleIndex index(k.pos, k.mass, box, 0.5);
  const std::array<double, 3> centres[] = {c};
  const double start[] = {0.1};
  const auto so = spherical_overdensity(index, centres, start, 50.0, 1.0, 100.0);
  ASSERT_EQ(so.size(), 1u);
  const double m = 800.0 * 4.0 / 3.0 * kPi;  // all of it: the mean density inside is 800 at every radius
  EXPECT_NEAR(so[0].c200.mass / m, 1.0, 1e-12);
  EXPECT_NEAR(so[0].c200.radius, std::cbrt(4.0), 1e-9);  // 800 / r^3 = 200 outside the sphere
  EXPECT_NEAR(so[0].vir.mass / m, 1.0, 1e-12);
  EXPECT_NEAR(so[0].vir.radius, 2.0, 1e-9);  // 800 / r^3 = 100
}

TEST(SphericalOverdensity, ADenseParticleWithAGapBehindItDoesNotEndTheSearch) {
  // One particle right at the centre, nothing out to 0.3, then a shell to radius 1 holding a mean
  // density of 800 ρ_crit: the density is already below 200 ρ_crit at r = 0.2 (the old first crossing
  // stopped there with one particle), but the whole object is far above it.
  const Box box{{0, 0, 0}, {100, 100, 100}, true};
  const std::array<double, 3> c{50, 50, 50};
  std::mt19937_64 rng(2);
  Case k;
  add_shell(k.pos, 5000, c, 0.3, 1.0, rng);
  k.mass.assign(5000, 800.0 * 4.0 / 3.0 * kPi / 5000.0);
  k.pos.insert(k.pos.end(), {50.001, 50.0, 50.0});
  k.mass.push_back(k.mass.front());
  const double total = k.mass.front() * 5001;
  const ParticleIndex index(k.pos, k.mass, box, 0.5);
  const std::array<double, 3> centres[] = {c};
  const double start[] = {1.0};  // the object's size, as mergertree gives it (its farthest member)
  const auto so = spherical_overdensity(index, centres, start, 50.0, 1.0, 100.0);
  EXPECT_NEAR(so[0].c200.mass / total, 1.0, 1e-12);
  EXPECT_NEAR(so[0].c200.radius / radius_of(total, 200.0), 1.0, 1e-12);
  EXPECT_NEAR(so[0].vir.mass / total, 1.0, 1e-12);
  EXPECT_NEAR(so[0].vir.radius / radius_of(total, 100.0), 1.0, 1e-12);
}

TEST(SphericalOverdensity, ASphereAcrossThePeriodicBoundary) {
  const Box box{{-5, 0, 0}, {20, 20, 20}, true};
  const std::array<double, 3> c{-4.6, 19.8, 10};  // near the lower x edge and the upper y edge
  Case k = uniform_sphere(c, 20000, 3);
  wrap(k.pos, box);
  const ParticleIndex index(k.pos, k.mass, box, 0.5);
  const std::array<double, 3> centres[] = {{15.4, -0.2, 10}};  // the same point through the boundary
  const double start[] = {0.1};
  const auto so = spherical_overdensity(index, centres, start, 10.0, 1.0, 100.0);
  const double m = 800.0 * 4.0 / 3.0 * kPi;
  EXPECT_NEAR(so[0].c200.mass / m, 1.0, 1e-12);
  EXPECT_NEAR(so[0].c200.radius, std::cbrt(4.0), 1e-9);
}

TEST(SphericalOverdensity, TooFewParticlesAboveDeltaIsNaNNotZero) {
  const Box box{{0, 0, 0}, {100, 100, 100}, true};
  // Five particles close together (far above 200 ρ_crit), then nothing: below the minimum count.
  Case k;
  for (int i = 0; i < 5; ++i) {
    k.pos.insert(k.pos.end(), {50.0 + 0.01 * i, 50.0, 50.0});
    k.mass.push_back(1.0);
  }
  // and a sphere elsewhere that is measured
  const Case s = uniform_sphere({20, 20, 20}, 2000, 4);
  k.pos.insert(k.pos.end(), s.pos.begin(), s.pos.end());
  k.mass.insert(k.mass.end(), s.mass.begin(), s.mass.end());
  const ParticleIndex index(k.pos, k.mass, box, 0.5);
  const std::array<double, 3> centres[] = {{50.02, 50, 50}, {20, 20, 20}, {80, 80, 80}};  // the last in the void
  const double start[] = {0.1, 1.0, 0.1};
  const auto so = spherical_overdensity(index, centres, start, 50.0, 1.0, 100.0);
  EXPECT_TRUE(std::isnan(so[0].c200.mass) && std::isnan(so[0].c200.radius)) << so[0].c200.mass;
  EXPECT_TRUE(std::isnan(so[0].vir.mass) && std::isnan(so[0].vir.radius)) << so[0].vir.mass;
  EXPECT_NEAR(so[1].c200.mass / (800.0 * 4.0 / 3.0 * kPi), 1.0, 1e-12);
  EXPECT_TRUE(std::isnan(so[2].c200.mass) && std::isnan(so[2].vir.mass)) << so[2].c200.mass;
  // With a minimum of 5 particles the little group is measured: all five, at its own radius.
  const auto five = spherical_overdensity(index, centres, start, 50.0, 1.0, 100.0, 5);
  EXPECT_DOUBLE_EQ(five[0].c200.mass, 5.0);
  EXPECT_NEAR(five[0].c200.radius, radius_of(5.0, 200.0), 1e-12);
}

TEST(SphericalOverdensity, OutermostRadiusOnSortedParticles) {
  // Unit masses at r = 0.1, 1.0, 1.05, 1.1, 5.0, and a target density that 4 particles keep out to
  // 1.15: above it at 0.1 (one particle), below at 1.0 and 1.05 (where the first crossing stops), above
  // again at 1.1, below at 5.0.
  const double r[] = {0.1, 1.0, 1.05, 1.1, 5.0};
  const double m[] = {1, 1, 1, 1, 1};
  const double target = 4.0 / (4.0 / 3.0 * kPi * 1.15 * 1.15 * 1.15);
  const Overdensity o = outermost_overdensity(r, m, target, 2);
  EXPECT_DOUBLE_EQ(o.mass, 4.0);
  EXPECT_NEAR(o.radius, 1.15, 1e-12);
  EXPECT_EQ(o.n_particles, 4);
  const Overdensity none = outermost_overdensity(r, m, target, 5);
  EXPECT_TRUE(std::isnan(none.mass) && std::isnan(none.radius));
  EXPECT_EQ(none.n_particles, 0);
  EXPECT_TRUE(std::isnan(outermost_overdensity({}, {}, target, 1).mass));
}

TEST(ShrinkingSphere, FindsTheDenseCoreNotTheMeanOfAGroupWithASubclumpAndATail) {
  const Box box{{0, 0, 0}, {100, 100, 100}, true};
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> pos, mass;
  auto blob = [&](const std::array<double, 3>& c, double sigma, int n, double m) {
    for (int i = 0; i < n; ++i) {
      for (std::size_t d = 0; d < 3; ++d) pos.push_back(c[d] + sigma * g(rng));
      mass.push_back(m);
    }
  };
  blob({30, 30, 30}, 0.05, 2000, 1.0);  // the core
  blob({31, 30, 30}, 0.3, 1500, 1.0);   // a looser subclump a unit away
  for (int i = 0; i < 1000; ++i) {      // a tail along y
    pos.insert(pos.end(), {30 + 0.1 * g(rng), 30 + 3 * u(rng), 30 + 0.1 * g(rng)});
    mass.push_back(1.0);
  }
  const auto c = shrinking_sphere_centre(pos, mass, box, {30.5, 30.5, 30});
  // within the core's width (σ = 0.05): the final spheres hold a few dozen particles, whose own
  // density maximum is where they stop
  for (std::size_t d = 0; d < 3; ++d) EXPECT_NEAR(c[d], 30.0, 0.03) << d;
  // the mean, for contrast, is far off
  double mx = 0;
  for (std::size_t i = 0; i < mass.size(); ++i) mx += pos[3 * i] / static_cast<double>(mass.size());
  EXPECT_GT(std::abs(mx - 30.0), 0.2);
}

TEST(ShrinkingSphere, AcrossThePeriodicBoundaryAndDegenerateGroups) {
  const Box box{{0, 0, 0}, {10, 10, 10}, true};
  std::mt19937_64 rng(6);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> pos, mass;
  for (int i = 0; i < 3000; ++i) {
    pos.insert(pos.end(), {0.02 + 0.1 * g(rng), 9.97 + 0.1 * g(rng), 5 + 0.1 * g(rng)});
    mass.push_back(1.0 + i % 2);
  }
  wrap(pos, box);
  for (const std::array<double, 3>& ref :
       {std::array<double, 3>{9.9, 0.1, 5.0}, std::array<double, 3>{0.0, 0.0, 5.0}}) {
    const auto c = shrinking_sphere_centre(pos, mass, box, ref);
    // the centre is inside the box, within half the group's width of (0.02, 9.97) through the boundary
    EXPECT_NEAR(minimum_image(c[0] - 0.02, 10, true), 0.0, 0.05);
    EXPECT_NEAR(minimum_image(c[1] - 9.97, 10, true), 0.0, 0.05);
    EXPECT_NEAR(c[2], 5.0, 0.05);
    for (std::size_t d = 0; d < 3; ++d) EXPECT_TRUE(c[d] >= 0 && c[d] < 10) << c[d];
  }
  // fewer particles than the stopping count: their mass-weighted mean (through the boundary)
  const std::vector<double> two{9.9, 1, 1, 0.3, 1, 1};
  const std::vector<double> m2{1, 3};
  const auto c2 = shrinking_sphere_centre(two, m2, box, {0, 1, 1});
  EXPECT_NEAR(c2[0], 0.2, 1e-12);
  // every particle on one point: that point, without looping forever
  const std::vector<double> same(3 * 100, 4.0);
  const std::vector<double> m100(100, 1.0);
  const auto c3 = shrinking_sphere_centre(same, m100, box, {4, 4, 4});
  EXPECT_DOUBLE_EQ(c3[0], 4.0);
  // no particles: the reference, wrapped
  const auto c4 = shrinking_sphere_centre({}, {}, box, {-1, 4, 4});
  EXPECT_DOUBLE_EQ(c4[0], 9.0);
}

// The rule as written (Power et al.): every step a pass over every particle, the group's offsets from
// the reference through the nearest image, the sphere's mass and mass-weighted offsets summed exactly
// (core::FixedScale: 2^-62 of the largest mass and of the largest mass times offset). The library scans
// only a shell of the particles sorted by distance from an anchor; the centres must be the same bits.
// With `start`, the spheres begin as ShrinkingSphereGroup::centre_from's: the mean of the particles within
// `radius` of it, when they are at least the stop's number (else from the whole group).
std::array<double, 3> shrinking_sphere_plain(const std::vector<double>& pos, const std::vector<double>& mass,
                                             const Box& box, const std::array<double, 3>& ref,
                                             const std::array<double, 3>* start = nullptr, double radius = 0) {
  const std::size_t n = mass.size();
  std::vector<double> x(3 * n);
  double largest_m = 0, largest_mx = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t d = 0; d < 3; ++d) {
      x[3 * i + d] = minimum_image(pos[3 * i + d] - ref[d], box.extent[d], box.periodic);
      largest_m = std::max(largest_m, std::fabs(mass[i]));
      largest_mx = std::max(largest_mx, std::fabs(mass[i] * x[3 * i + d]));
    }
  const auto ms = core::FixedScale::for_int64_terms(largest_m), mxs = core::FixedScale::for_int64_terms(largest_mx);
  auto mean_within = [&](const std::array<double, 3>& c, double r, std::array<double, 3>& out) {
    core::FixedInt m = 0, sx[3] = {0, 0, 0};
    std::size_t count = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double dx = x[3 * i] - c[0], dy = x[3 * i + 1] - c[1], dz = x[3 * i + 2] - c[2];
      if (r >= 0 && dx * dx + dy * dy + dz * dz > r * r) continue;
      ++count;
      m += ms.to_fixed(mass[i]);
      for (std::size_t d = 0; d < 3; ++d) sx[d] += mxs.to_fixed(mass[i] * x[3 * i + d]);
    }
    const double total = ms.to_double(m);
    if (count > 0 && total > 0)
      for (std::size_t d = 0; d < 3; ++d) out[d] = mxs.to_double(sx[d]) / total;
    return count;
  };
  const std::size_t stop = shrinking_sphere_stop(n, {});
  std::array<double, 3> c{0, 0, 0};
  double r = 0;
  bool warm = false;
  if (start != nullptr && radius > 0) {
    std::array<double, 3> s0{};
    for (std::size_t d = 0; d < 3; ++d) s0[d] = minimum_image((*start)[d] - ref[d], box.extent[d], box.periodic);
    c = s0;
    warm = mean_within(s0, radius, c) >= stop;
    if (warm)
      r = radius;
    else
      c = {0, 0, 0};
  }
  if (!warm) {
    mean_within(c, -1, c);
    for (std::size_t i = 0; i < n; ++i) {
      const double dx = x[3 * i] - c[0], dy = x[3 * i + 1] - c[1], dz = x[3 * i + 2] - c[2];
      r = std::max(r, std::sqrt(dx * dx + dy * dy + dz * dz));
    }
  }
  for (int step = 0; step < 3000 && r > 0; ++step) {
    r *= 0.975;
    std::array<double, 3> next = c;
    if (mean_within(c, r, next) < stop) break;
    c = next;
  }
  for (std::size_t d = 0; d < 3; ++d) c[d] = wrap_into(box, ref[d] + c[d], d);
  return c;
}

TEST(ShrinkingSphere, TheSameBitsAsAPassOverEveryParticlePerStep) {
  const Box box{{0, 0, 0}, {20, 20, 20}, true};
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0.0, 1.0);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<double> pos, mass;
    // Blobs of random widths and weights, some across the periodic boundary, an off-centre densest one
    // (the centre travels far as the sphere shrinks), and a uniform sprinkle.
    const int blobs = 1 + static_cast<int>(seed % 4);
    for (int b = 0; b < blobs; ++b) {
      const std::array<double, 3> c{20 * u(rng), 20 * u(rng), seed % 3 == 0 ? 19.9 : 20 * u(rng)};
      const double sigma = 0.05 + 0.5 * u(rng);
      // small groups (a few dozen: the sphere barely shrinks), the usual, and a large one
      const int n = seed % 5 == 0   ? 3 + static_cast<int>(40 * u(rng))
                    : seed % 7 == 0 ? 20000 + static_cast<int>(20000 * u(rng))
                                    : 200 + static_cast<int>(3000 * u(rng));
      for (int i = 0; i < n; ++i) {
        for (std::size_t d = 0; d < 3; ++d) pos.push_back(c[d] + sigma * g(rng) * (d == seed % 3 ? 3.0 : 1.0));
        mass.push_back(seed % 4 == 1 ? (i % 3 == 0 ? 0.2 : 1.0) : 0.5 + u(rng));  // two species, or any
      }
    }
    for (int i = 0; i < 300; ++i) {
      for (std::size_t d = 0; d < 3; ++d) pos.push_back(20 * u(rng));
      mass.push_back(1.0);
    }
    wrap(pos, box);
    const std::array<double, 3> ref{pos[0], pos[1], pos[2]};
    const auto want = shrinking_sphere_plain(pos, mass, box, ref);
    const auto got = shrinking_sphere_centre(pos, mass, box, ref);
    for (std::size_t d = 0; d < 3; ++d) EXPECT_EQ(got[d], want[d]) << "seed " << seed << " axis " << d;
    // Started near that centre (unbind's later passes), from a sphere wide enough and from one too
    // small to hold the stop's number (then from the whole group), and across the periodic boundary:
    // every particle as the members, so the fixed-point scales are the plain reference's.
    const ShrinkingSphereGroup group(pos, mass, box, ref);
    std::vector<std::size_t> all(mass.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    const ShrinkingSphereGroup::Found cold = group.centre_from(all, ref, 0.0);  // no radius: the whole group
    for (std::size_t d = 0; d < 3; ++d) EXPECT_EQ(cold.centre[d], want[d]) << "seed " << seed << " axis " << d;
    const std::array<double, 3> start{wrap_into(box, want[0] + 0.05, 0), wrap_into(box, want[1] - 0.03, 1), want[2]};
    for (const double radius : {1.66 * cold.radius, 3.0, 1e-6, 0.0}) {
      const auto warm_want = shrinking_sphere_plain(pos, mass, box, ref, &start, radius);
      const auto warm_got = group.centre_from(all, start, radius);
      for (std::size_t d = 0; d < 3; ++d)
        EXPECT_EQ(warm_got.centre[d], warm_want[d]) << "seed " << seed << " radius " << radius << " axis " << d;
    }
    const auto fallback = group.centre_from(all, start, 1e-6);  // holds no particle: from the whole group
    for (std::size_t d = 0; d < 3; ++d) EXPECT_EQ(fallback.centre[d], want[d]) << "seed " << seed << " axis " << d;
    // unbind's group: positions that are offsets already, in an open box about the origin, which the
    // group reads in place instead of copying.
    std::vector<double> offsets(pos.size());
    for (std::size_t i = 0; i < pos.size(); ++i)
      offsets[i] = minimum_image(pos[i] - ref[i % 3], box.extent[i % 3], box.periodic);
    const Box open{};
    const ShrinkingSphereGroup in_place(offsets, mass, open, {0, 0, 0});
    const auto open_want = shrinking_sphere_plain(offsets, mass, open, {0, 0, 0});
    const auto open_got = in_place.centre(all);
    for (std::size_t d = 0; d < 3; ++d) EXPECT_EQ(open_got[d], open_want[d]) << "seed " << seed << " axis " << d;
  }
}

}  // namespace
}  // namespace phew::grid
