// voters' stage on one rank: search radii shrink next to a neighbour (not a sibling from the same
// patch), candidates are every particle within the radius (checked by brute force), voters are the most
// bound in the boosted potential, short peaks are flagged, and the computed potential finds the same
// haloes.
#include <phew/phasespace/select_voters.hpp>
#include <phew/phasespace/voters.hpp>
#include "phasespace_scenes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

namespace phew::phasespace {
namespace {

VoterParams stored_params(double R) {
  VoterParams p;
  p.search_radius = R;
  p.stored_potential = true;
  p.G = 1;
  p.periodic = true;
  p.box_size = {100, 100, 100};
  return p;
}

// The scene's particles without their stored potential.
particles::ParticleSet without_potential(const scenes::VotersScene& s) {
  particles::ParticleSet without = s.particles;
  without.potential.clear();
  without.acceleration.clear();
  return without;
}

// The (peak, voter) pairs two selections share.
std::size_t common_voters(const VoterSelection& x, const VoterSelection& y) {
  std::set<std::uint64_t> a, b;
  for (const model::VoterRow& r : x.voters) a.insert(r.particle_id * 8 + static_cast<std::uint64_t>(r.peak));
  for (const model::VoterRow& r : y.voters) b.insert(r.particle_id * 8 + static_cast<std::uint64_t>(r.peak));
  std::size_t common = 0;
  for (auto v : a) common += b.count(v);
  return common;
}

TEST(SearchRadii, AQuarterOfTheNearestOtherPeakButNotASibling) {
  const scenes::VotersScene s;
  std::vector<model::PeakRow> peaks = s.peaks;
  EXPECT_EQ(search_radii(peaks, s.grid.geometry, 30, 0), (std::vector<double>{10, 10}));
  EXPECT_EQ(search_radii(peaks, s.grid.geometry, 8, 0), (std::vector<double>{8, 8}));
  EXPECT_EQ(search_radii(peaks, s.grid.geometry, 30, 12), (std::vector<double>{12, 12}));
  // across the periodic boundary: 20 apart through x = 0
  peaks[1].position[0] = 90;
  peaks[0].position[0] = 10;
  EXPECT_EQ(search_radii(peaks, s.grid.geometry, 30, 0), (std::vector<double>{5, 5}));
  // a peak deblended from the same patch does not shrink the radius
  peaks[1].parent_clump = peaks[0].parent_clump;
  EXPECT_EQ(search_radii(peaks, s.grid.geometry, 30, 0), (std::vector<double>{30, 30}));
}

TEST(SearchRadii, DefaultIsHalfThe200TimesMeanRadiusOfTheMostMassivePeak) {
  const scenes::VotersScene s;
  const double r200 = std::cbrt(3 * 1.0 / (4 * M_PI * 200 * s.grid.mean_density));
  EXPECT_DOUBLE_EQ(default_search_radius(s.peaks, s.grid), 0.5 * r200);
  grid::GridMeta unknown = s.grid;
  unknown.mean_density = 0;
  EXPECT_DOUBLE_EQ(default_search_radius(s.peaks, unknown), 100.0 / 16);
}

TEST(SelectVoters, TheMostBoundCandidatesOfEachPeakByBruteForce) {
  const scenes::VotersScene s;
  const mpi::Comm comm;
  if (comm.size() != 1) GTEST_SKIP();
  std::vector<std::string> phases;
  const VoterSelection v = select_voters(s.grid, s.peaks, s.particles, stored_params(30), comm,
                                         [&](const std::string& p) { phases.push_back(p); });
  EXPECT_EQ(phases, (std::vector<std::string>{"distribute", "potential", "voters"}));  // no long-range: stored
  EXPECT_EQ(v.potential_source, "snapshot Potential and Acceleration");
  EXPECT_EQ(v.search_radius, 30);
  ASSERT_EQ(v.peaks.size(), 2u);
  ASSERT_EQ(v.voters.size(), 40u);
  EXPECT_EQ(v.n_short, 0);
  for (std::size_t h = 0; h < 2; ++h) {
    const model::PeakRow& pk = s.peaks[h];
    // brute force: every particle within r_s = 10, sorted by ID
    std::vector<Candidate> cand;
    for (std::size_t i = 0; i < s.particles.size(); ++i) {
      Candidate c{s.particles.id[i], {}, {}, s.particles.potential[i], {}};
      double r2 = 0;
      for (std::size_t d = 0; d < 3; ++d) {
        c.dx[d] = s.particles.position[3 * i + d] - pk.position[d];
        c.v[d] = s.particles.velocity[3 * i + d];
        c.acceleration[d] = s.particles.acceleration[3 * i + d];
        r2 += c.dx[d] * c.dx[d];
      }
      if (r2 <= 100) cand.push_back(c);
    }
    const VoterChoice want = choose_voters(cand, pk.velocity, 20);
    const model::VoterPeakRow& row = v.peaks[h];
    EXPECT_EQ(row.id, pk.id);
    EXPECT_EQ(row.search_radius, 10);
    EXPECT_EQ(row.n_candidates, static_cast<std::int64_t>(cand.size()));
    EXPECT_EQ(row.n_voters, 20);
    for (std::size_t d = 0; d < 3; ++d) EXPECT_DOUBLE_EQ(row.a0[d], want.a0[d]);
    for (std::size_t k = 0; k < 20; ++k) {
      const model::VoterRow& r = v.voters[20 * h + k];
      EXPECT_EQ(r.peak, pk.id);
      EXPECT_EQ(r.rank, static_cast<std::int64_t>(k));
      EXPECT_EQ(r.particle_id, want.id[k]);
      EXPECT_DOUBLE_EQ(r.binding_energy, want.energy[k]);
      EXPECT_EQ(r.particle_id <= s.n_major, h == 0);  // from its own halo
    }
  }
}

TEST(SelectVoters, PeaksWithFewerCandidatesGetFewerVoters) {
  const scenes::VotersScene s;
  const mpi::Comm comm;
  VoterParams p = stored_params(0.3);
  p.n_voters = 50;
  const VoterSelection v = select_voters(s.grid, s.peaks, s.particles, p, comm);
  EXPECT_EQ(v.n_short, 2);
  for (const model::VoterPeakRow& row : v.peaks) {
    EXPECT_LT(row.n_voters, 50);
    EXPECT_EQ(row.n_voters, row.n_candidates);
  }
}

TEST(SelectVoters, TheComputedPotentialFindsTheSameHaloes) {
  const scenes::VotersScene s;
  const mpi::Comm comm;
  VoterParams p = stored_params(30);
  p.stored_potential = false;
  p.softening = 0.1;
  p.n_particles = s.particles.size();
  std::vector<std::string> phases;
  const VoterSelection computed = select_voters(s.grid, s.peaks, without_potential(s), p, comm,
                                                [&](const std::string& ph) { phases.push_back(ph); });
  EXPECT_EQ(phases.front(), "long-range");
  EXPECT_EQ(computed.potential_source.rfind("computed: TreePM", 0), 0u) << computed.potential_source;
  EXPECT_GT(computed.n_computed, 0u);
  const VoterSelection stored = select_voters(s.grid, s.peaks, s.particles, stored_params(30), comm);
  ASSERT_EQ(computed.n_voters, 40);
  EXPECT_GE(common_voters(computed, stored), 30u);  // most (the periodic images and the softening shift a few)
  for (const model::VoterRow& r : computed.voters) EXPECT_EQ(r.particle_id <= s.n_major, r.peak == 1);
}

TEST(SelectVoters, TheProfilePotentialFindsTheSameHaloesWithoutTheSolver) {
  const scenes::VotersScene s;
  const mpi::Comm comm;
  VoterParams p = stored_params(30);
  p.stored_potential = false;
  p.profile_potential = true;
  p.softening = 0.1;
  std::vector<std::string> phases;
  const VoterSelection profile = select_voters(s.grid, s.peaks, without_potential(s), p, comm,
                                               [&](const std::string& ph) { phases.push_back(ph); });
  EXPECT_EQ(phases.front(), "distribute");  // no long-range mesh
  EXPECT_EQ(profile.potential_source.rfind("spherical profile", 0), 0u) << profile.potential_source;
  EXPECT_EQ(profile.n_computed, 0u);
  ASSERT_EQ(profile.n_voters, 40);
  const VoterSelection stored = select_voters(s.grid, s.peaks, s.particles, stored_params(30), comm);
  EXPECT_GE(common_voters(profile, stored), 30u);
  for (const model::VoterRow& r : profile.voters) EXPECT_EQ(r.particle_id <= s.n_major, r.peak == 1);
}

// spherical_potential against the rule written pair by pair (each other candidate pulls from the larger
// of the two softened radii, ties in radius by ID), the same for any order of the candidates, and a
// uniform sphere's analytic potential and field.
TEST(SphericalPotential, ThePairRuleAnyOrderAndAUniformSphere) {
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Candidate> c;
  std::vector<double> m;
  const double G = 2.5, eps = 0.05, R = 3.0;
  const std::size_t n = 20000;
  while (c.size() < n) {
    const double x = R * u(rng), y = R * u(rng), z = R * u(rng);
    if (x * x + y * y + z * z > R * R) continue;
    c.push_back({c.size() + 1, {x, y, z}, {0, 0, 0}, 0, {0, 0, 0}});
    m.push_back(c.size() % 3 == 0 ? 2.0 : 1.0);
  }
  c.push_back({n + 1, {0, 0, 0}, {0, 0, 0}, 0, {0, 0, 0}});  // one at the very centre
  m.push_back(1.0);
  c.push_back({n + 2, c[5].dx, {0, 0, 0}, 0, {0, 0, 0}});  // a tie in radius with candidate 6
  m.push_back(1.0);
  std::vector<Candidate> got = c;
  spherical_potential(got, m, G, eps);

  // the pair rule on a few hundred of them
  auto r_of = [](const Candidate& k) { return std::sqrt(k.dx[0] * k.dx[0] + k.dx[1] * k.dx[1] + k.dx[2] * k.dx[2]); };
  for (std::size_t i = 0; i < c.size(); i += 97) {
    const double ri = r_of(c[i]), si = std::sqrt(ri * ri + eps * eps);
    double phi = 0, inside = 0;
    for (std::size_t j = 0; j < c.size(); ++j) {
      if (j == i) continue;
      const double rj = r_of(c[j]);
      const bool before = rj < ri || (rj == ri && c[j].id < c[i].id);
      if (before) {
        phi -= G * m[j] / si;
        inside += m[j];
      } else {
        phi -= G * m[j] / std::sqrt(rj * rj + eps * eps);
      }
    }
    EXPECT_NEAR(got[i].potential, phi, 1e-9 * std::abs(phi)) << i;
    for (std::size_t d = 0; d < 3; ++d)
      EXPECT_NEAR(got[i].acceleration[d], -G * inside * c[i].dx[d] / (si * si * si), 1e-9 * G * inside / (si * si))
          << i;
  }
  // the same bits whatever order the candidates come in
  std::vector<std::size_t> perm(c.size());
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<Candidate> shuffled;
  std::vector<double> ms;
  for (const std::size_t i : perm) {
    shuffled.push_back(c[i]);
    ms.push_back(m[i]);
  }
  spherical_potential(shuffled, ms, G, eps);
  for (std::size_t k = 0; k < perm.size(); ++k) {
    EXPECT_EQ(shuffled[k].potential, got[perm[k]].potential);
    EXPECT_EQ(shuffled[k].acceleration, got[perm[k]].acceleration);
  }
  // a uniform sphere of mass M: Phi(r) = -G M (3 R^2 - r^2) / (2 R^3), g(r) = -G M r / R^3, away from
  // the centre and the edge, where the softening and the sampling matter
  double M = 0;
  for (double x : m) M += x;
  for (std::size_t i = 0; i < n; i += 50) {
    const double r = r_of(c[i]);
    if (r < 0.5 || r > 2.7) continue;
    EXPECT_NEAR(got[i].potential, -G * M * (3 * R * R - r * r) / (2 * R * R * R), 0.02 * G * M / R) << r;
    const double g =
        -std::sqrt(got[i].acceleration[0] * got[i].acceleration[0] + got[i].acceleration[1] * got[i].acceleration[1] +
                   got[i].acceleration[2] * got[i].acceleration[2]);
    // the field follows the mass inside, whose counting noise is ~1/sqrt(N(<r)): within 4 sigma
    const double n_inside = static_cast<double>(n) * (r / R) * (r / R) * (r / R);
    EXPECT_NEAR(g, -G * M * r / (R * R * R), (0.01 + 4 / std::sqrt(n_inside)) * G * M * r / (R * R * R)) << r;
  }
}

}  // namespace
}  // namespace phew::phasespace
