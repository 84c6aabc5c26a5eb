// Gravity for voters: the distributed FFT against a naive DFT, the particle-mesh part against an analytic
// density wave, TreePM and the open-box tree against direct summation, and the voters they select.
#include <phew/gravity/fft3d.hpp>
#include <phew/gravity/forest.hpp>
#include <phew/gravity/long_range.hpp>
#include <phew/gravity/spherical_profile.hpp>
#include <phew/phasespace/voters.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <map>
#include <cstdio>
#include <random>
#include <string>

namespace phew::gravity {
namespace {

TEST(SlabFft, MatchesANaiveDftAndInvertsOnOneRank) {
  const std::array<std::int64_t, 3> n{6, 4, 5};  // odd last axis: the half spectrum has n2/2+1 = 3 modes
  const mpi::Comm comm;
  if (comm.size() != 1) GTEST_SKIP();
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> f(6 * 4 * 5);
  for (double& v : f) v = u(rng);
  const SlabFft fft(n, comm);
  const auto spec = fft.forward(f);
  ASSERT_EQ(spec.size(), 4u * 6u * 3u);  // [ky][kx][kz]
  double worst = 0;
  for (std::int64_t ky = 0; ky < 4; ++ky)
    for (std::int64_t kx = 0; kx < 6; ++kx)
      for (std::int64_t kz = 0; kz < 3; ++kz) {
        std::complex<double> s = 0;
        for (std::int64_t x = 0; x < 6; ++x)
          for (std::int64_t y = 0; y < 4; ++y)
            for (std::int64_t z = 0; z < 5; ++z) {
              const double ph = -2 * M_PI * (double(kx * x) / 6 + double(ky * y) / 4 + double(kz * z) / 5);
              s += f[static_cast<std::size_t>((x * 4 + y) * 5 + z)] * std::complex<double>(std::cos(ph), std::sin(ph));
            }
        worst = std::max(worst, std::abs(s - spec[static_cast<std::size_t>((ky * 6 + kx) * 3 + kz)]));
      }
  EXPECT_LT(worst, 1e-12);
  const auto back = fft.backward(spec);
  for (std::size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(back[i], f[i], 1e-14);
}

// Threads share a rank's planes, and the plane-by-plane feed (a deposit's runs, any order) is the
// whole-mesh forward(): the same bits either way, on square planes (the transpose in place) and not.
TEST(SlabFft, SameBitsOnAnyThreadsAndFromRunsOfPlanes) {
  const mpi::Comm comm;
  if (comm.size() != 1) GTEST_SKIP();
  for (const std::array<std::int64_t, 3> n : {std::array<std::int64_t, 3>{12, 12, 10}, {9, 6, 7}}) {
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> f(static_cast<std::size_t>(n[0] * n[1] * n[2]));
    for (double& v : f) v = u(rng);
    const SlabFft one(n, comm, 1);
    const auto spec = one.forward(f);
    const auto back = one.backward(spec);
    for (const int threads : {2, 3, 5}) {
      const SlabFft many(n, comm, threads);
      EXPECT_EQ(many.forward(f), spec) << threads;
      EXPECT_EQ(many.backward(spec), back) << threads;
      // Runs of planes in reverse order, each scaled by 2 (exact): the spectrum doubles exactly.
      SlabFft::Forward fed(many);
      const auto plane = static_cast<std::size_t>(n[1] * n[2]);
      for (std::size_t p1 = static_cast<std::size_t>(n[0]); p1 > 0;) {
        const std::size_t p0 = p1 >= 4 ? p1 - 4 : 0;
        std::vector<double> run(f.begin() + static_cast<std::ptrdiff_t>(p0 * plane),
                                f.begin() + static_cast<std::ptrdiff_t>(p1 * plane));
        fed.add(p0, p1, run.data(), 2.0);
        p1 = p0;
      }
      const auto doubled = std::move(fed).finish();
      ASSERT_EQ(doubled.size(), spec.size());
      for (std::size_t i = 0; i < spec.size(); ++i) ASSERT_EQ(doubled[i], 2.0 * spec[i]) << threads << " " << i;
    }
  }
}

// The Green's function from per-axis tables against its formula, mode by mode, on a box of unequal
// sides and cells.
TEST(GreenTable, AgreesWithTheFormulaAtEveryMode) {
  const grid::GridGeometry mesh{{8, 6, 10}, {0, 0, 0}, {4, 3.5, 6}, true};
  const double G = 1.7, r_split = 0.6;
  const GreenTable table(mesh, G, r_split);
  const auto folded = [](std::int64_t i, std::int64_t n) { return i <= n / 2 ? i : i - n; };
  for (std::int64_t a = 0; a < 8; ++a)
    for (std::int64_t b = 0; b < 6; ++b)
      for (std::int64_t c = 0; c <= 5; ++c) {
        const double expected = long_range_green({folded(a, 8), folded(b, 6), c}, mesh, G, r_split);
        EXPECT_NEAR(table(a, b, c), expected, 1e-13 * std::abs(expected)) << a << " " << b << " " << c;
      }
  EXPECT_EQ(table(0, 0, 0), 0.0);
}

// Particles at the mesh's cell centres with masses m0 (1 + A cos(k x)): CIC puts each wholly in its
// cell, so the mesh density is an exact cosine and the potential is -4 pi G rho_k / k^2 times the
// split and window factors; the 4-point difference of a cosine is known in closed form.
TEST(LongRangeField, SolvesADensityWaveExactly) {
  const mpi::Comm comm;
  if (comm.size() != 1) GTEST_SKIP();
  const std::int64_t n = 16;
  const double L = 8, h = L / static_cast<double>(n), A = 0.3, G = 2.0, r_split = 1.25 * h;
  const grid::GridGeometry mesh{{n, n, n}, {0, 0, 0}, {L, L, L}, true};
  std::vector<double> pos, mass;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t k = 0; k < n; ++k) {
        const double x = (static_cast<double>(i) + 0.5) * h;
        pos.insert(pos.end(), {x, (static_cast<double>(j) + 0.5) * h, (static_cast<double>(k) + 0.5) * h});
        mass.push_back(1.0 + A * std::cos(2 * M_PI * 2 * x / L));  // mode m = 2 along x
      }
  const LongRangeField field(mesh, G, r_split, pos, mass, 0.0, comm);
  const double rho_amp = A / (h * h * h);
  const double green = long_range_green({2, 0, 0}, mesh, G, r_split);
  const double k = 2 * M_PI * 2 / L;
  const double k_fd = (8 * std::sin(k * h) - std::sin(2 * k * h)) / (6 * h);  // d/dx of cos(kx) by 4 points: -k_fd sin
  for (std::int64_t i = 0; i < n; ++i) {
    const double x[3] = {(static_cast<double>(i) + 0.5) * h, 1.5 * h, 7.5 * h};
    double phi = 0, acc[3];
    field.sample(x, phi, acc);
    EXPECT_NEAR(phi, green * rho_amp * std::cos(k * x[0]), 1e-10 * std::abs(green * rho_amp));
    EXPECT_NEAR(acc[0], green * rho_amp * k_fd * std::sin(k * x[0]), 1e-10 * std::abs(green * rho_amp * k));
    EXPECT_NEAR(acc[1], 0, 1e-12);
  }
  // The Green's function: -4 pi G / k^2 at long wavelengths.
  const grid::GridGeometry big{{64, 64, 64}, {0, 0, 0}, {1000, 1000, 1000}, true};
  const double k1 = 2 * M_PI / 1000;
  EXPECT_NEAR(long_range_green({1, 0, 0}, big, 1.0, 0.1) / (-4 * M_PI / (k1 * k1)), 1.0, 2e-3);  // window: +0.16%
  EXPECT_EQ(long_range_green({0, 0, 0}, big, 1.0, 0.1), 0.0);
}

// A Plummer sphere (scale 1, mass 1, cut at 99% of its mass) of n equal particles around `centre`.
std::vector<Source> plummer(std::size_t n, unsigned seed, std::array<double, 3> centre) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<Source> s;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = 1.0 / std::sqrt(std::pow(u(rng) * 0.99, -2.0 / 3.0) - 1.0);
    double d[3] = {g(rng), g(rng), g(rng)};
    const double norm = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    Source p{};
    for (std::size_t k = 0; k < 3; ++k) p.x[k] = centre[k] + r * d[k] / norm;
    p.m = 1.0 / static_cast<double>(n);
    p.id = i + 1;
    s.push_back(p);
  }
  return s;
}

std::vector<std::array<double, 3>> positions(const std::vector<Source>& s) {
  std::vector<std::array<double, 3>> x;
  for (const Source& p : s) x.push_back({p.x[0], p.x[1], p.x[2]});
  return x;
}

struct Errors {
  double phi_rms, acc_rms;
};

// RMS relative errors; the potentials are compared after removing their mean difference (a periodic
// box's potential is defined up to a constant).
Errors compare(const std::vector<double>& phi, const std::vector<std::array<double, 3>>& acc,
               const std::vector<double>& phi_ref, const std::vector<std::array<double, 3>>& acc_ref) {
  double offset = 0;
  for (std::size_t i = 0; i < phi.size(); ++i) offset += (phi[i] - phi_ref[i]) / static_cast<double>(phi.size());
  double ep = 0, rp = 0, ea = 0, ra = 0;
  for (std::size_t i = 0; i < phi.size(); ++i) {
    ep += (phi[i] - offset - phi_ref[i]) * (phi[i] - offset - phi_ref[i]);
    rp += phi_ref[i] * phi_ref[i];
    for (std::size_t d = 0; d < 3; ++d) {
      ea += (acc[i][d] - acc_ref[i][d]) * (acc[i][d] - acc_ref[i][d]);
      ra += acc_ref[i][d] * acc_ref[i][d];
    }
  }
  return {std::sqrt(ep / rp), std::sqrt(ea / ra)};
}

// The opening angles checked against direct sums: the old default and voters' default (docs/tools/voters.md).
class TreeTheta : public ::testing::TestWithParam<double> {};
INSTANTIATE_TEST_SUITE_P(Theta, TreeTheta, ::testing::Values(0.5, 0.7));

// An isolated Plummer sphere in a large periodic box: TreePM (mesh + short-range trees) against direct
// Newtonian summation. Images and the subtracted mean density change the force by ~(r/L)^3 only.
TEST_P(TreeTheta, TreePmAgreesWithDirectSummationForAnIsolatedHalo) {
  const double theta = GetParam();
  const mpi::Comm comm;
  if (comm.size() != 1) GTEST_SKIP();
  const double L = 40, G = 1, eps = 0.02;
  const auto src = plummer(4000, 21, {20.3, 19.6, 20.1});
  const grid::GridGeometry box{{64, 64, 64}, {0, 0, 0}, {L, L, L}, true};
  const double r_split = 1.25 * L / 64;
  std::vector<double> pos, mass;
  for (const Source& s : src) {
    pos.insert(pos.end(), s.x, s.x + 3);
    mass.push_back(s.m);
  }
  const LongRangeField mesh(box, G, r_split, pos, mass, 0.0, comm);
  const std::int64_t cubes = static_cast<std::int64_t>(L / (PairForce::kCutInSplits * r_split));
  const Forest forest(box, {cubes, cubes, cubes}, {0, L}, src, PairForce(G, eps, r_split), {theta, 8});
  const auto targets = positions(src);
  std::vector<double> phi(targets.size());
  std::vector<std::array<double, 3>> acc(targets.size());
  for (std::size_t t = 0; t < targets.size(); ++t) {
    double p = 0, a[3] = {0, 0, 0}, pl = 0, al[3];
    forest.accumulate(targets[t].data(), p, a);
    mesh.sample(targets[t].data(), pl, al);
    phi[t] = p + pl;
    for (std::size_t d = 0; d < 3; ++d) acc[t][d] = a[d] + al[d];
  }
  std::vector<double> phi_ref;
  std::vector<std::array<double, 3>> acc_ref;
  direct_sum(src, targets, PairForce(G, eps), phi_ref, acc_ref);
  const Errors e = compare(phi, acc, phi_ref, acc_ref);
  std::printf("theta %.1f, TreePM vs direct: potential rms %.2e, acceleration rms %.2e\n", theta, e.phi_rms, e.acc_rms);
  EXPECT_LT(e.phi_rms, 0.01);
  EXPECT_LT(e.acc_rms, 0.02);
  // Group walks (what voters uses): every source once, the same accuracy.
  std::vector<char> seen(src.size(), 0);
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (seen[i]) continue;
    forest.accumulate_group(i, [&](std::size_t k, const double*, double p, const double* a) {
      double pl = 0, al[3];
      mesh.sample(src[k].x, pl, al);
      phi[k] = p + pl;
      for (std::size_t d = 0; d < 3; ++d) acc[k][d] = a[d] + al[d];
      EXPECT_FALSE(seen[k]);
      seen[k] = 1;
    });
  }
  const Errors g = compare(phi, acc, phi_ref, acc_ref);
  std::printf("theta %.1f, TreePM (group walks) vs direct: potential rms %.2e, acceleration rms %.2e\n", theta,
              g.phi_rms, g.acc_rms);
  EXPECT_LT(g.phi_rms, 0.01);
  EXPECT_LT(g.acc_rms, 0.02);
}

// The cubes' trees built on several threads are the one-thread trees: every source's group walk gives
// the same bits and the same groups, with empty cubes and cubes of very different weight.
TEST(Forest, SameTreesOnAnyThreads) {
  const double L = 40;
  auto src = plummer(3000, 31, {10.2, 30.4, 20.1});
  const auto second = plummer(1500, 32, {31.0, 8.5, 12.7});
  for (Source s : second) {
    s.id += 3000;
    src.push_back(s);
  }
  const grid::GridGeometry box{{1, 1, 1}, {0, 0, 0}, {L, L, L}, true};
  for (Source& s : src)
    for (std::size_t d = 0; d < 3; ++d) s.x[d] = std::fmod(s.x[d] + L, L);
  const double r_split = 1.25 * L / 64;
  const std::int64_t cubes = static_cast<std::int64_t>(L / (PairForce::kCutInSplits * r_split));
  const auto walk = [&](int threads) {
    const Forest forest(box, {cubes, cubes, cubes}, {0, L}, src, PairForce(1, 0.02, r_split), {0.5, 8, threads});
    std::vector<std::array<double, 5>> out(src.size());
    for (std::size_t i = 0; i < src.size(); ++i) {
      forest.accumulate_group(i, [&](std::size_t k, const double*, double p, const double* a) {
        out[k] = {p, a[0], a[1], a[2], static_cast<double>(forest.group_of(k))};
      });
    }
    return out;
  };
  const auto one = walk(1);
  for (const int threads : {2, 5}) {
    const auto many = walk(threads);
    for (std::size_t i = 0; i < src.size(); ++i) ASSERT_EQ(many[i], one[i]) << threads << " threads, source " << i;
  }
}

// A forest read from the caller's own records (voters' particles: the ID first, the velocity between
// the position and the mass) is the forest of the same Sources: every group walk the same bits, each
// member reported with its own position.
TEST(Forest, ReadsSourcesInPlaceFromAnyRecord) {
  struct Record {
    std::uint64_t id;
    double x[3], v[3], m;
  };
  const double L = 40;
  auto src = plummer(2500, 33, {20.0, 19.0, 21.0});
  const grid::GridGeometry box{{1, 1, 1}, {0, 0, 0}, {L, L, L}, true};
  std::vector<Record> records(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    for (std::size_t d = 0; d < 3; ++d) src[i].x[d] = std::fmod(src[i].x[d] + L, L);
    records[i] = {src[i].id, {src[i].x[0], src[i].x[1], src[i].x[2]}, {1e3, -1e3, 7.0}, src[i].m};
  }
  const double r_split = 1.25 * L / 64;
  const std::int64_t cubes = static_cast<std::int64_t>(L / (PairForce::kCutInSplits * r_split));
  const auto walk = [&](const Forest& forest) {
    std::vector<std::array<double, 5>> out(src.size());
    for (std::size_t i = 0; i < src.size(); ++i)
      forest.accumulate_group(i, [&](std::size_t k, const double* x, double p, const double* a) {
        out[k] = {p, a[0], a[1], a[2], static_cast<double>(forest.group_of(k))};
        for (std::size_t d = 0; d < 3; ++d) ASSERT_EQ(x[d], src[k].x[d]) << "the position reported with source " << k;
      });
    return out;
  };
  const PairForce force(1, 0.02, r_split);
  const auto from_sources = walk(Forest(box, {cubes, cubes, cubes}, {0, L}, src, force, {0.5, 8, 2}));
  const auto from_records = walk(
      Forest(box, {cubes, cubes, cubes}, {0, L}, SourceView::of(std::span<const Record>(records)), force, {0.5, 8, 2}));
  for (std::size_t i = 0; i < src.size(); ++i) ASSERT_EQ(from_records[i], from_sources[i]) << "source " << i;
  EXPECT_NE(from_sources[0][0], 0.0);

  // The same from columns (voters' ParticleSet), which the `copied` hook lets go before the trees are
  // built: the forest keeps its own copy (position, mass) and never reads them again.
  std::vector<double> position(3 * src.size()), mass(src.size());
  std::vector<std::uint64_t> id(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    std::copy_n(src[i].x, 3, &position[3 * i]);
    mass[i] = src[i].m;
    id[i] = src[i].id;
  }
  int copied = 0;
  const Forest from_columns(box, {cubes, cubes, cubes}, {0, L}, SourceView::columns(position, mass, id), force,
                            {0.5, 8, 2}, [&] {
                              ++copied;
                              std::fill(position.begin(), position.end(), -1.0);
                              std::fill(mass.begin(), mass.end(), -1.0);
                            });
  EXPECT_EQ(copied, 1);
  const auto columns = walk(from_columns);
  for (std::size_t i = 0; i < src.size(); ++i) {
    ASSERT_EQ(columns[i], from_sources[i]) << "source " << i;
    for (std::size_t d = 0; d < 3; ++d) ASSERT_EQ(from_columns.position(i)[d], src[i].x[d]) << "source " << i;
    ASSERT_EQ(from_columns.mass(i), src[i].m) << "source " << i;
  }
  EXPECT_THROW(SourceView::columns(std::span<const double>(position).first(3), mass, id), core::Error);
}

// A group walk asked for some members only (voters' candidates) gives those members the bits of the
// whole group's walk and reports no other: every third source wanted, so that groups with no wanted
// member and groups partly wanted both occur (checked).
TEST(Forest, GroupWalkOfWantedMembersHasTheWholeGroupsBits) {
  const double L = 40;
  auto src = plummer(3000, 33, {12.5, 22.0, 30.5});
  const grid::GridGeometry box{{1, 1, 1}, {0, 0, 0}, {L, L, L}, true};
  for (Source& s : src)
    for (std::size_t d = 0; d < 3; ++d) s.x[d] = std::fmod(s.x[d] + L, L);
  const double r_split = 1.25 * L / 64;
  const std::int64_t cubes = static_cast<std::int64_t>(L / (PairForce::kCutInSplits * r_split));
  const Forest forest(box, {cubes, cubes, cubes}, {0, L}, src, PairForce(1, 0.02, r_split), {0.5, 8});
  std::vector<std::array<double, 4>> all(src.size()), some(src.size(), {-1, -1, -1, -1});
  for (std::size_t i = 0; i < src.size(); ++i)
    forest.accumulate_group(i, [&](std::size_t k, const double*, double p, const double* a) {
      all[k] = {p, a[0], a[1], a[2]};
    });
  std::vector<std::uint8_t> wanted(src.size(), 0);
  for (std::size_t i = 0; i < src.size(); i += 3) wanted[i] = 1;
  std::vector<int> reported(src.size(), 0);
  for (std::size_t i = 0; i < src.size(); ++i)
    forest.accumulate_group(
        i,
        [&](std::size_t k, const double*, double p, const double* a) {
          some[k] = {p, a[0], a[1], a[2]};
          ++reported[k];
        },
        wanted);
  std::map<std::int64_t, std::array<int, 2>> groups;  // group -> (members wanted, members)
  for (std::size_t i = 0; i < src.size(); ++i) {
    groups[forest.group_of(i)][0] += wanted[i];
    ++groups[forest.group_of(i)][1];
  }
  bool none = false, part = false;
  for (const auto& [g, n] : groups) {
    none = none || n[0] == 0;
    part = part || (n[0] > 0 && n[0] < n[1]);
  }
  EXPECT_TRUE(none && part) << "the scene must hold groups with no wanted member and groups partly wanted";
  for (std::size_t i = 0; i < src.size(); ++i) {
    ASSERT_EQ(reported[i] > 0, wanted[i] != 0) << "source " << i;
    if (wanted[i]) {
      ASSERT_EQ(some[i], all[i]) << "source " << i;
    }
  }
}

// A thin sheet of particles along the top face of its cube, whose tree nodes' cubes reach past that
// face into the next cube, and particles just below the cube's bottom face, within r_cut of the sheet
// (cubes barely wider than r_cut). With theta = 0 every node is opened, so the group walks must be the
// direct sum: the 27 cubes searched are those around the members' cube, wherever their nodes' centres.
TEST(Forest, GroupWalksFindEveryCubeAroundTheMembers) {
  const double L = 10, r_split = 0.9995 / PairForce::kCutInSplits;  // r_cut 0.9995, cubes of 1
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Source> src;
  for (std::uint64_t i = 0; i < 200; ++i)  // the sheet: cube (5, 5, 5), y in [5.99, 5.999]
    src.push_back({{5.1 + 0.8 * u(rng), 5.99 + 0.009 * u(rng), 5.1 + 0.8 * u(rng)}, 1.0, i + 1});
  for (std::uint64_t i = 0; i < 100; ++i)  // cube (5, 4, 5), just below y = 5
    src.push_back({{5.1 + 0.8 * u(rng), 4.999 - 0.0005 * u(rng), 5.1 + 0.8 * u(rng)}, 1.0, 1000 + i});
  const grid::GridGeometry box{{1, 1, 1}, {0, 0, 0}, {L, L, L}, true};
  const PairForce force(1, 0.001, r_split);
  const Forest forest(box, {10, 10, 10}, {0, L}, src, force, {0.0, 8});
  std::vector<double> phi(200);
  std::vector<std::array<double, 3>> acc(200);
  for (std::size_t i = 0; i < 200; ++i)
    forest.accumulate_group(i, [&](std::size_t k, const double*, double p, const double* a) {
      if (k < 200) {
        phi[k] = p;
        acc[k] = {a[0], a[1], a[2]};
      }
    });
  std::vector<std::array<double, 3>> targets = positions(src);
  targets.resize(200);
  std::vector<double> phi_ref;
  std::vector<std::array<double, 3>> acc_ref;
  direct_sum(src, targets, force, phi_ref, acc_ref);  // no images reach: every source is far from the box's faces
  for (std::size_t i = 0; i < 200; ++i) {
    // Within the group walks' single precision (PairForce::sum_scaled), about 1e-7 of the potential;
    // a source missed would take away at least erfc(2.25) / r_cut = 1.5e-3. The acceleration is made of
    // near pairs' terms up to 1e6 that cancel, each as precise as float places the pair about the
    // group's centre (1e-7 of r_cut, 1e-4 of a pair 1e-3 apart): checked to that of their sizes.
    ASSERT_NEAR(phi[i], phi_ref[i], 5e-4) << i;
    double size = 0;
    for (const Source& s : src) {
      const double r[3] = {src[i].x[0] - s.x[0], src[i].x[1] - s.x[1], src[i].x[2] - s.x[2]};
      double p = 0, a[3] = {0, 0, 0};
      force.add(s.m, r, p, a);
      size += std::abs(a[1]);
    }
    ASSERT_NEAR(acc[i][1], acc_ref[i][1], 1e-4 * size) << i;
  }
}

// The same halo in an open box: Barnes-Hut over cube trees and the shared pyramid of cube monopoles.
TEST_P(TreeTheta, OpenTreeAgreesWithDirectSummationAndTheAnalyticPotential) {
  const double theta = GetParam();
  const mpi::Comm comm;
  if (comm.size() != 1) GTEST_SKIP();
  const auto src = plummer(20000, 12, {0, 0, 0});
  grid::GridGeometry box{{1, 1, 1}, {-30, -30, -30}, {60, 60, 60}, false};
  Forest forest(box, {16, 16, 16}, {-1e300, 1e300}, src, PairForce(1, 0.02), {theta, 8});
  forest.share_cube_moments(comm, [](std::int64_t) { return true; });
  std::vector<std::array<double, 3>> targets = positions(src);
  targets.resize(2000);
  std::vector<double> phi(targets.size());
  std::vector<std::array<double, 3>> acc(targets.size());
  for (std::size_t t = 0; t < targets.size(); ++t) forest.accumulate(targets[t].data(), phi[t], acc[t].data());
  std::vector<double> phi_ref;
  std::vector<std::array<double, 3>> acc_ref;
  direct_sum(src, targets, PairForce(1, 0.02), phi_ref, acc_ref);
  double worst = 0;
  for (std::size_t t = 0; t < targets.size(); ++t) worst = std::max(worst, std::abs(phi[t] / phi_ref[t] - 1));
  const Errors e = compare(phi, acc, phi_ref, acc_ref);
  std::printf("theta %.1f, open tree vs direct: potential worst %.2e, acceleration rms %.2e\n", theta, worst,
              e.acc_rms);
  EXPECT_LT(worst, 0.01);
  EXPECT_LT(e.acc_rms, 0.01);
  // Group walks over the first 2,000 sources.
  std::vector<double> gphi(src.size(), 0);
  std::vector<std::array<double, 3>> gacc(src.size());
  for (std::size_t i = 0; i < targets.size(); ++i)
    forest.accumulate_group(i, [&](std::size_t k, const double*, double p, const double* a) {
      gphi[k] = p;
      gacc[k] = {a[0], a[1], a[2]};
    });
  gphi.resize(targets.size());
  gacc.resize(targets.size());
  const Errors g = compare(gphi, gacc, phi_ref, acc_ref);
  std::printf("theta %.1f, open tree (group walks) vs direct: potential rms %.2e, acceleration rms %.2e\n", theta,
              g.phi_rms, g.acc_rms);
  EXPECT_LT(g.phi_rms, 0.01);
  EXPECT_LT(g.acc_rms, 0.01);
  // Against Plummer's -GM / sqrt(r^2 + b^2) (1% of the mass was cut at large radius).
  for (double r : {0.0, 2.0, 5.0}) {
    const double x[3] = {0, r, 0};
    double p = 0, a[3] = {0, 0, 0};
    forest.accumulate(x, p, a);
    EXPECT_NEAR(p / (-0.99 / std::sqrt(r * r + 1)), 1.0, 0.03) << "r = " << r;
  }
}

std::vector<phasespace::Candidate> halo_candidates(const std::vector<Source>& src, const std::vector<double>& phi,
                                                   const std::vector<std::array<double, 3>>& acc, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 0.3);
  std::vector<phasespace::Candidate> c;
  for (std::size_t i = 0; i < src.size(); ++i)
    c.push_back({src[i].id, {src[i].x[0], src[i].x[1], src[i].x[2]}, {g(rng), g(rng), g(rng)}, phi[i], acc[i]});
  return c;
}

TEST(Voters, TreeAndBruteForcePotentialsPickTheSameVoters) {
  const mpi::Comm comm;
  if (comm.size() != 1) GTEST_SKIP();
  const auto src = plummer(2000, 13, {0, 0, 0});
  Forest forest({{1, 1, 1}, {-40, -40, -40}, {80, 80, 80}, false}, {8, 8, 8}, {-1e300, 1e300}, src, PairForce(1, 0.02),
                {0.5, 8});
  forest.share_cube_moments(comm, [](std::int64_t) { return true; });
  const auto targets = positions(src);
  std::vector<double> phi(src.size()), phi_ref;
  std::vector<std::array<double, 3>> acc(src.size()), acc_ref;
  for (std::size_t t = 0; t < src.size(); ++t) forest.accumulate(targets[t].data(), phi[t], acc[t].data());
  direct_sum(src, targets, PairForce(1, 0.02), phi_ref, acc_ref);
  const auto a = choose_voters(halo_candidates(src, phi, acc, 1), {0, 0, 0}, 20);
  const auto b = choose_voters(halo_candidates(src, phi_ref, acc_ref, 1), {0, 0, 0}, 20);
  std::size_t same = 0;
  for (auto id : a.id) same += static_cast<std::size_t>(std::count(b.id.begin(), b.id.end(), id));
  EXPECT_GE(same, 18u);
  EXPECT_TRUE(std::is_sorted(a.energy.begin(), a.energy.end()));  // most bound first
}

TEST(Voters, BoostCancelsAUniformExternalField) {
  const auto src = plummer(2000, 14, {0, 0, 0});
  std::vector<double> phi;
  std::vector<std::array<double, 3>> acc;
  direct_sum(src, positions(src), PairForce(1, 0.02), phi, acc);
  const auto base = halo_candidates(src, phi, acc, 2);
  auto pushed = base;
  const double g[3] = {3.0, -1.0, 0.5};  // a strong uniform field: Phi -= g.x, a += g
  for (phasespace::Candidate& c : pushed)
    for (std::size_t d = 0; d < 3; ++d) {
      c.potential -= g[d] * c.dx[d];
      c.acceleration[d] += g[d];
    }
  const auto isolated = choose_voters(base, {0, 0, 0}, 20);
  const auto boosted = choose_voters(pushed, {0, 0, 0}, 20);
  const auto plain = choose_voters(pushed, {0, 0, 0}, 20, false);
  std::size_t same_boost = 0, same_plain = 0;
  for (auto id : isolated.id) {
    same_boost += static_cast<std::size_t>(std::count(boosted.id.begin(), boosted.id.end(), id));
    same_plain += static_cast<std::size_t>(std::count(plain.id.begin(), plain.id.end(), id));
  }
  EXPECT_GE(same_boost, 19u);  // equal up to rounding
  EXPECT_LT(same_plain, 10u);  // without the boost the voters slide down the external gradient
}

TEST(PairForce, ShortPlusLongRangeIsNewtonian) {
  // erfc + erf = 1: the short-range pair term plus -G m erf(r/2r_s)/r is the whole potential.
  const PairForce whole(1, 0), short_part(1, 0, 0.5);
  for (double r : {0.05, 0.3, 1.0, 2.0}) {
    const double x[3] = {r, 0, 0};
    double pw = 0, ps = 0, aw[3] = {0, 0, 0}, as[3] = {0, 0, 0};
    whole.add(1, x, pw, aw);
    short_part.add(1, x, ps, as);
    EXPECT_NEAR(ps, -std::erfc(r / 1.0) / r, 1e-6 / r);
    EXPECT_NEAR(pw, -1 / r, 1e-12);
  }
  const double far[3] = {2.3, 0, 0};  // beyond r_cut = 4.5 r_s
  double p = 0, a[3] = {0, 0, 0};
  short_part.add(1, far, p, a);
  EXPECT_EQ(p, 0.0);
}

// Lane k of a pair sum at several targets x[k] at once (phi[k], acc[k]) against add() over the same
// sources one at a time, bit for bit.
template <std::size_t Lanes>
void expect_lanes_are_add(const PairForce& force, const std::vector<PointMass>& src, const double* const (&x)[Lanes],
                          const double (&phi)[Lanes], const double (&acc)[Lanes][3], const std::string& what) {
  for (std::size_t lane = 0; lane < Lanes; ++lane) {
    double p = 0, a[3] = {0, 0, 0};
    for (const PointMass& s : src) {
      const double r[3] = {x[lane][0] - s.x[0], x[lane][1] - s.x[1], x[lane][2] - s.x[2]};
      force.add(s.m, r, p, a);
    }
    EXPECT_EQ(phi[lane], p) << what << " lane " << lane;
    for (int d = 0; d < 3; ++d) EXPECT_EQ(acc[lane][d], a[d]) << what << " lane " << lane;
  }
}

// The pair sums two targets at a time (the tree's kernel) against add() one source at a time, bit for
// bit: sources inside and beyond the cut-off, at the target itself (softened and not), near the table's
// last entry, for the whole force and its short-range part.
TEST(PairForce, TwoTargetsAtOnceAreAddBitForBit) {
  std::mt19937_64 rng(47);
  std::uniform_real_distribution<double> u(-1.5, 1.5), mass(0.1, 2);
  for (const double eps : {0.0, 0.03})
    for (const double r_split : {0.0, 0.25}) {
      const PairForce force(4.3, eps, r_split);
      const double t[2][3] = {{0.1, -0.2, 0.3}, {-0.4, 0.05, 0.2}};
      std::vector<PointMass> src;
      for (int k = 0; k < 500; ++k) src.push_back({{u(rng), u(rng), u(rng)}, mass(rng)});
      src.push_back({{t[0][0], t[0][1], t[0][2]}, 1.0});                                   // on target 0
      if (r_split > 0) src.push_back({{t[1][0] + force.r_cut(), t[1][1], t[1][2]}, 1.0});  // at r_cut
      for (const auto& pair : {std::array<int, 2>{0, 1}, std::array<int, 2>{1, 1}}) {
        const double* const x[2] = {t[pair[0]], t[pair[1]]};
        double phi[2] = {0, 0}, acc[2][3] = {{0, 0, 0}, {0, 0, 0}};
        force.add_to_two(src.data(), src.size(), x, phi, acc);
        expect_lanes_are_add(force, src, x, phi, acc, fmt::format("eps {} r_split {}", eps, r_split));
      }
    }
}

// The single-precision sums of the group walks: every kernel (AVX where the CPU has it, SSE2, plain
// C++) the same bits, lane by lane; and each within float's error of add()'s double sums. Sources inside
// and beyond the cut-off, at a target (softened and not), near the table's last entry, counts that fill
// no run, one run and several, for the whole force and its short-range part, at scales far from 1.
TEST(PairForce, ScaledSumsAreTheSameBitsInEveryKernelAndAddWithinFloatsError) {
  std::mt19937_64 rng(4748);
  std::uniform_real_distribution<double> u(-1.5, 1.5), mass(0.1, 2);
  for (const double unit : {1.0, 3.0e19, 1.0e-7})  // lengths as cm, as Gpc
    for (const double eps : {0.0, 0.03})
      for (const double r_split : {0.0, 0.25})
        for (const std::size_t n : {std::size_t{0}, std::size_t{5}, PairForce::kRun, std::size_t{501}}) {
          const PairForce force(4.3, eps * unit, r_split * unit);
          const double t[8][3] = {{0.1, -0.2, 0.3}, {-0.4, 0.05, 0.2}, {0.7, 0.6, -0.9}, {-1.2, 1.1, 0.0},
                                  {0.0, 0.0, 0.0},  {1.4, -1.4, 1.4},  {0.7, 0.6, -0.9}, {-0.3, -0.3, 0.8}};
          std::vector<PointMass> src;
          for (std::size_t k = 0; k + 2 < n; ++k) src.push_back({{u(rng), u(rng), u(rng)}, mass(rng)});
          if (n > 0) src.push_back({{t[2][0], t[2][1], t[2][2]}, 1.0});  // on targets 2 and 6
          if (n > 1) src.push_back({{t[3][0], t[3][1] - (r_split > 0 ? force.r_cut() / unit : 0.5), t[3][2]}, 1.0});
          const GroupScale scale{2.0 * unit, 2.0};
          std::vector<ScaledSource> scaled;
          for (PointMass& s : src) {
            scaled.push_back(
                {{static_cast<float>(s.x[0] / 2), static_cast<float>(s.x[1] / 2), static_cast<float>(s.x[2] / 2)},
                 static_cast<float>(s.m / 2)});
            for (double& x : s.x) x *= unit;
          }
          float ts[3][8];
          for (std::size_t lane = 0; lane < 8; ++lane)
            for (std::size_t d = 0; d < 3; ++d) ts[d][lane] = static_cast<float>(t[lane][d] / 2);
          const std::string what = fmt::format("unit {} eps {} r_split {} n {}", unit, eps, r_split, n);
          double phi[3][8], acc[3][8][3];
          const PairForce::Kernel kernels[3] = {PairForce::Kernel::best, PairForce::Kernel::sse2,
                                                PairForce::Kernel::reference};
          for (std::size_t k = 0; k < 3; ++k)
            force.sum_scaled(scaled.data(), scaled.size(), ts, scale, phi[k], acc[k], kernels[k]);
          for (std::size_t lane = 0; lane < 8; ++lane) {
            for (std::size_t k = 1; k < 3; ++k) {
              EXPECT_EQ(phi[k][lane], phi[0][lane]) << what << " kernel " << k << " lane " << lane;
              for (std::size_t d = 0; d < 3; ++d)
                EXPECT_EQ(acc[k][lane][d], acc[0][lane][d]) << what << " kernel " << k << " lane " << lane;
            }
            // add()'s sums in double, and the sums of the terms' sizes that bound float's error.
            const double x[3] = {t[lane][0] * unit, t[lane][1] * unit, t[lane][2] * unit};
            double p = 0, a[3] = {0, 0, 0}, p_size = 0, a_size = 0;
            for (const PointMass& s : src) {
              const double r[3] = {x[0] - s.x[0], x[1] - s.x[1], x[2] - s.x[2]};
              double tp = 0, ta[3] = {0, 0, 0};
              force.add(s.m, r, tp, ta);
              p += tp, p_size += std::abs(tp);
              for (std::size_t d = 0; d < 3; ++d) a[d] += ta[d], a_size += std::abs(ta[d]);
            }
            // Float's rounding of the offsets moves a term near the cut-off, where erfc falls fastest,
            // by up to about 1e-6 of itself.
            EXPECT_LE(std::abs(phi[0][lane] - p), 4e-6 * p_size) << what << " lane " << lane;
            for (std::size_t d = 0; d < 3; ++d)
              EXPECT_LE(std::abs(acc[0][lane][d] - a[d]), 4e-6 * a_size) << what << " lane " << lane;
          }
        }
}

}  // namespace
}  // namespace phew::gravity

// SphericalProfile's members in the order of (radius, index) pairs sorted whole, and its sums from that
// order: members at equal radii (ties by index) and at radii that differ only in their last bits (one
// float, several doubles: the float-keyed sort's runs), a subset of the particles, every sort size.
TEST(SphericalProfile, MembersInTheOrderOfRadiusThenIndex) {
  std::mt19937_64 rng(23);
  std::normal_distribution<double> g(0.0, 1.0);
  for (const std::size_t n : {0, 1, 2, 200, 300, 5000, 20000}) {
    std::vector<double> pos(3 * n), mass(n);
    for (std::size_t i = 0; i < n; ++i) {
      mass[i] = 1.0 + static_cast<double>(i % 7);
      for (std::size_t d = 0; d < 3; ++d) pos[3 * i + d] = g(rng);
      if (i % 5 == 1) {  // the same place as the particle before: an exact tie
        for (std::size_t d = 0; d < 3; ++d) pos[3 * i + d] = pos[3 * (i - 1) + d];
      } else if (i % 5 == 2) {  // a few ulps away: the same float radius, another double
        for (std::size_t d = 0; d < 3; ++d) pos[3 * i + d] = std::nextafter(pos[3 * (i - 2) + d], 10.0);
      }
    }
    std::vector<std::size_t> members;
    for (std::size_t i = n; i-- > 0;)
      if (i % 11 != 3) members.push_back(i);  // a subset, in descending order
    const std::array<double, 3> centre{0.01, -0.02, 0.03};
    const phew::gravity::SphericalProfile prof(pos, mass, members, centre, 1.0, 0.0);
    std::vector<std::pair<double, std::size_t>> want;
    for (const std::size_t i : members) {
      const double dx = pos[3 * i] - centre[0], dy = pos[3 * i + 1] - centre[1], dz = pos[3 * i + 2] - centre[2];
      want.emplace_back(std::sqrt(dx * dx + dy * dy + dz * dz), i);
    }
    std::sort(want.begin(), want.end());
    ASSERT_EQ(prof.size(), want.size());
    double before = 0;
    for (std::size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(prof.index()[k], want[k].second) << n << " members, place " << k;
      ASSERT_EQ(prof.radius()[k], want[k].first);
      ASSERT_EQ(prof.mass_before(k), before);
      before += mass[want[k].second];
    }
  }
}
