// deblend's and voters' stages at 1-4 ranks: the rows every rank writes, gathered in rank order, are
// bit for bit those of one rank holding everything (the routing to cell owners and patch ranks, the
// balancing, the new IDs, the x-partition of peaks and the distribution of particles).
#include <phew/phasespace/deblend.hpp>
#include <phew/phasespace/select_voters.hpp>
#include "../unit/phasespace_scenes.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

namespace phew::phasespace {
namespace {

template <typename T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

static_assert(sizeof(model::VoterRow) == 32 && sizeof(model::VoterPeakRow) == 56 && sizeof(model::PeakMember) == 16,
              "rows compared byte for byte have no padding");

// Peak rows have padding after from_deblending: compared field by field (exact doubles).
bool same_rows(const std::vector<model::PeakRow>& a, const std::vector<model::PeakRow>& b) {
  auto key = [](const model::PeakRow& r) {
    return std::tie(r.id, r.parent_clump, r.position, r.densest_cell_position, r.velocity, r.n_particles, r.mass,
                    r.from_deblending);
  };
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (key(a[i]) != key(b[i])) return false;
  return true;
}

particles::ParticleSet my_share(const particles::ParticleSet& all, const mpi::Comm& comm) {
  const std::size_t n = all.size(), r = static_cast<std::size_t>(comm.rank()),
                    s = static_cast<std::size_t>(comm.size());
  return scenes::share(all, r * n / s, (r + 1) * n / s);
}

Deblended deblend_on(const scenes::DeblendScene& s, const particles::ParticleSet& ps, const mpi::Comm& comm) {
  DeblendParams p;
  p.G = s.G;
  const auto space = mesh::CellSpace::uniform(s.grid);
  const auto cuts = s.cuts(space, comm.size());
  const auto r = static_cast<std::size_t>(comm.rank());
  return deblend_patches(space, cuts, ps, s.cells(cuts[r], cuts[r + 1]), s.n_clump_peaks,
                         scenes::ClumpPeaks(s.peak_positions), p, comm);
}

TEST(DeblendMpi, SameRowsOnAnyNumberOfRanks) {
  const mpi::Comm world, self{MPI_COMM_SELF};
  const scenes::DeblendScene s;
  const Deblended one = deblend_on(s, s.particles, self);
  const Deblended many = deblend_on(s, my_share(s.particles, world), world);
  const auto peaks = world.all_gatherv<model::PeakRow>(many.peaks);
  const auto members = world.all_gatherv<model::PeakMember>(many.particles);
  EXPECT_TRUE(same_rows(peaks, one.peaks));
  EXPECT_TRUE(same_bytes(members, one.particles));
  EXPECT_EQ(many.n_split, one.n_split);
  EXPECT_EQ(many.n_skipped, one.n_skipped);
  EXPECT_EQ(one.peaks.size(), 3u);
}

VoterSelection voters_on(const scenes::VotersScene& s, particles::ParticleSet ps, VoterParams p,
                         const mpi::Comm& comm) {
  return select_voters(s.grid, s.peaks, std::move(ps), p, comm);
}

void expect_rank_invariant(const scenes::VotersScene& s, const particles::ParticleSet& all, const VoterParams& p) {
  const mpi::Comm world, self{MPI_COMM_SELF};
  const VoterSelection one = voters_on(s, all, p, self);
  const VoterSelection many = voters_on(s, my_share(all, world), p, world);
  EXPECT_TRUE(same_bytes(world.all_gatherv<model::VoterRow>(many.voters), one.voters));
  EXPECT_TRUE(same_bytes(world.all_gatherv<model::VoterPeakRow>(many.peaks), one.peaks));
  EXPECT_EQ(many.potential_source, one.potential_source);
  EXPECT_EQ(one.n_voters, 2 * p.n_voters);
}

VoterParams params_for(const scenes::VotersScene& s, bool stored) {
  VoterParams p;
  p.search_radius = 30;
  p.n_voters = 25;
  p.stored_potential = stored;
  p.G = 1;
  p.softening = 0.1;
  p.periodic = s.grid.geometry.periodic;
  p.box_size = {100, 100, 100};
  p.n_particles = s.particles.size();
  return p;
}

TEST(SelectVotersMpi, StoredPotentialSameRowsOnAnyNumberOfRanks) {
  const scenes::VotersScene s;
  expect_rank_invariant(s, s.particles, params_for(s, true));
}

TEST(SelectVotersMpi, ComputedPotentialSameRowsOnAnyNumberOfRanks) {
  scenes::VotersScene s;
  particles::ParticleSet without = s.particles;
  without.potential.clear();
  without.acceleration.clear();
  expect_rank_invariant(s, without, params_for(s, false));  // periodic: TreePM
  s.grid.geometry.periodic = false;
  expect_rank_invariant(s, without, params_for(s, false));  // open box: Barnes-Hut over the bounding box
}

// Peaks on the periodic boundary and on a slab boundary, their voter candidates and sample points on
// both sides: the same rows at any number of ranks, and, with the stored potential, the same voters as the
// unmoved scene (a periodic box has no preferred origin).
TEST(SelectVotersMpi, PeaksAcrossSlabAndPeriodicBoundaries) {
  const scenes::VotersScene base;
  const VoterSelection unmoved = voters_on(base, base.particles, params_for(base, true), mpi::Comm{MPI_COMM_SELF});
  for (double dx : {20.0, 70.0}) {
    SCOPED_TRACE("shifted by " + std::to_string(dx));
    const scenes::VotersScene s = base.shifted(dx);
    expect_rank_invariant(s, s.particles, params_for(s, true));
    const VoterSelection moved = voters_on(s, s.particles, params_for(s, true), mpi::Comm{MPI_COMM_SELF});
    ASSERT_EQ(moved.voters.size(), unmoved.voters.size());
    for (std::size_t i = 0; i < moved.voters.size(); ++i) {
      EXPECT_EQ(moved.voters[i].peak, unmoved.voters[i].peak) << "row " << i;
      EXPECT_EQ(moved.voters[i].particle_id, unmoved.voters[i].particle_id) << "row " << i;
      EXPECT_NEAR(moved.voters[i].binding_energy, unmoved.voters[i].binding_energy,
                  1e-9 * std::abs(unmoved.voters[i].binding_energy))
          << "row " << i;
    }
    particles::ParticleSet without = s.particles;
    without.potential.clear();
    without.acceleration.clear();
    expect_rank_invariant(s, without, params_for(s, false));  // TreePM: the long-range mesh across the boundary
  }
}

}  // namespace
}  // namespace phew::phasespace
