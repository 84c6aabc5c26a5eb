// deblend's stage on one rank: members found by their cell's label, patches split in velocity space,
// primaries keep the clump ID, new peaks numbered above the segmentation's, clumps outside the
// catalogue skipped, the periodic boundary respected.
#include <phew/phasespace/deblend.hpp>
#include "phasespace_scenes.hpp"

#include <gtest/gtest.h>

namespace phew::phasespace {
namespace {

struct StageRun {
  Deblended d;
  std::vector<std::vector<std::int64_t>> asked;  // what the stage asked for
};

StageRun deblend(const scenes::DeblendScene& s, DeblendParams params, std::vector<std::string>* phases = nullptr) {
  const mpi::Comm comm;
  params.G = s.G;
  StageRun run;
  const scenes::ClumpPeaks catalogue(s.peak_positions);
  const auto space = mesh::CellSpace::uniform(s.grid);
  const auto cuts = s.cuts(space, comm.size());
  const auto r = static_cast<std::size_t>(comm.rank());
  run.d = deblend_patches(space, cuts, s.particles, s.cells(cuts[r], cuts[r + 1]), s.n_clump_peaks, catalogue, params,
                          comm, [&](const std::string& p) {
                            if (phases) phases->push_back(p);
                          });
  run.asked = catalogue.asked;
  return run;
}

TEST(Deblend, SplitsTheMovingPairAndKeepsTheRest) {
  const scenes::DeblendScene s;
  std::vector<std::string> phases;
  const StageRun run = deblend(s, DeblendParams{}, &phases);
  const Deblended& d = run.d;
  EXPECT_EQ(phases, (std::vector<std::string>{"members", "deblend"}));
  ASSERT_EQ(run.asked.size(), 1u);
  EXPECT_EQ(run.asked[0], (std::vector<std::int64_t>{1, 2, 3}));  // every clump with members, sorted

  ASSERT_EQ(d.peaks.size(), 3u);
  EXPECT_EQ(d.n_peaks, 3);
  EXPECT_EQ(d.n_split, 1);
  EXPECT_EQ(d.n_new, 1);
  EXPECT_EQ(d.n_skipped, 1);  // clump 2 is not in the catalogue
  const model::PeakRow &p1 = d.peaks[0], &p3 = d.peaks[1], &p6 = d.peaks[2];
  EXPECT_EQ(p1.id, 1);
  EXPECT_EQ(p3.id, 3);
  EXPECT_EQ(p6.id, s.n_clump_peaks + 1);  // above every peak of the segmentation
  EXPECT_EQ(p6.parent_clump, 1);
  EXPECT_FALSE(p1.from_deblending);
  EXPECT_TRUE(p6.from_deblending);
  EXPECT_EQ(p1.n_particles, 600);  // the primary is the more massive velocity peak
  EXPECT_EQ(p6.n_particles, 400);
  EXPECT_EQ(p3.n_particles, 300);
  EXPECT_DOUBLE_EQ(p1.mass, 600.0);
  EXPECT_NEAR(p1.velocity[0], 300, 5);
  EXPECT_NEAR(p6.velocity[0], -300, 5);
  for (std::size_t d3 = 0; d3 < 3; ++d3) EXPECT_NEAR(p1.position[d3], 4, 0.2);
  // clump 3 straddles x = 0 = 8: its mean position is near the boundary and inside the box
  EXPECT_LT(std::abs(grid::minimum_image(p3.position[0], 8, true)), 0.2);
  EXPECT_GE(p3.position[0], 0);
  EXPECT_LT(p3.position[0], 8);
  // the densest cell's centre: a cell centre inside the patch
  for (const model::PeakRow* p : {&p1, &p6})
    for (std::size_t d3 = 0; d3 < 3; ++d3) {
      EXPECT_DOUBLE_EQ(p->densest_cell_position[d3] - std::floor(p->densest_cell_position[d3]), 0.5);
      EXPECT_GT(p->densest_cell_position[d3], 2);
      EXPECT_LT(p->densest_cell_position[d3], 6);
    }
}

TEST(Deblend, ListsEveryPatchParticleOnceWithItsTruePeak) {
  const scenes::DeblendScene s;
  const Deblended d = deblend(s, DeblendParams{}).d;
  EXPECT_EQ(d.n_particles, 1300);  // not the 100 of clump 2 nor the 200 outside every patch
  ASSERT_EQ(d.particles.size(), 1300u);
  for (std::size_t i = 0; i < d.particles.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(d.particles[i - 1].id, d.particles[i].id);
    }
    EXPECT_EQ(d.particles[i].peak, s.truth.at(d.particles[i].id)) << d.particles[i].id;
  }
}

TEST(Deblend, SmallPatchesAreNotSplit) {
  const scenes::DeblendScene s;
  DeblendParams p;
  p.min_particles = 2000;  // more than any patch holds
  const Deblended d = deblend(s, p).d;
  ASSERT_EQ(d.peaks.size(), 2u);
  EXPECT_EQ(d.n_split, 0);
  EXPECT_EQ(d.peaks[0].n_particles, 1000);
  for (const model::PeakMember& m : d.particles) EXPECT_TRUE(m.peak == 1 || m.peak == 3);
}

TEST(Deblend, ComovingSnapshotsCompareVelocitiesInPhysicalUnits) {
  // With a = 0.25, distances shrink by 4 and Gadget's u by 1/2: v_e doubles, the velocities halve,
  // and the +-300 clouds (physical +-150) fall within about one bin of 4 x 50: no split.
  const scenes::DeblendScene s;
  DeblendParams p;
  p.scale_factor = 0.25;
  p.bin_fraction = 1.0;
  EXPECT_EQ(deblend(s, p).d.n_split, 0);
  p.scale_factor = 1;
  EXPECT_EQ(deblend(s, p).d.n_split, 1);
}

}  // namespace
}  // namespace phew::phasespace
