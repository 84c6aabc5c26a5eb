// voters' stage on one rank: search radii shrink next to a neighbour (not a sibling from the same
// patch), candidates are every particle within the radius (checked by brute force), voters are the most
// bound in the boosted potential, short peaks are flagged, and the computed potential finds the same
// haloes.
#include <phew/phasespace/select_voters.hpp>
#include <phew/phasespace/voters.hpp>
#include "phasespace_scenes.hpp"

#include <gtest/gtest.h>

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
  particles::ParticleSet without = s.particles;
  without.potential.clear();
  without.acceleration.clear();
  VoterParams p = stored_params(30);
  p.stored_potential = false;
  p.softening = 0.1;
  p.n_particles = s.particles.size();
  std::vector<std::string> phases;
  const VoterSelection computed =
      select_voters(s.grid, s.peaks, without, p, comm, [&](const std::string& ph) { phases.push_back(ph); });
  EXPECT_EQ(phases.front(), "long-range");
  EXPECT_EQ(computed.potential_source.rfind("computed: TreePM", 0), 0u) << computed.potential_source;
  EXPECT_GT(computed.n_computed, 0u);
  const VoterSelection stored = select_voters(s.grid, s.peaks, s.particles, stored_params(30), comm);
  ASSERT_EQ(computed.n_voters, 40);
  std::set<std::uint64_t> a, b;
  for (const model::VoterRow& r : computed.voters) a.insert(r.particle_id * 8 + static_cast<std::uint64_t>(r.peak));
  for (const model::VoterRow& r : stored.voters) b.insert(r.particle_id * 8 + static_cast<std::uint64_t>(r.peak));
  std::size_t common = 0;
  for (auto x : a) common += b.count(x);
  EXPECT_GE(common, 30u);  // most of them (the periodic images and the softening shift a few)
  for (const model::VoterRow& r : computed.voters) EXPECT_EQ(r.particle_id <= s.n_major, r.peak == 1);
}

}  // namespace
}  // namespace phew::phasespace
