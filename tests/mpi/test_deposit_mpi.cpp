// The distributed deposit gives the same bits as a one-rank deposit, for any slab split.
#include <phew/grid/deposit.hpp>
#include "../unit/block_lattices.hpp"
#include "../unit/reference_deposit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace phew::grid {
namespace {

struct Case {
  std::vector<double> pos, mass;
};

Case random_particles(std::size_t n, double box, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> x(0.0, box), mu(0.1, 3.0);
  std::normal_distribution<double> blob(0.3 * box, 0.05 * box);
  Case c;
  for (std::size_t i = 0; i < n; ++i) {
    for (int d = 0; d < 3; ++d) {
      double v = i % 2 ? x(rng) : blob(rng);  // half uniform, half clustered
      v = v - box * std::floor(v / box);
      c.pos.push_back(v >= box ? 0.0 : v);
    }
    c.mass.push_back(mu(rng));
  }
  return c;
}

// This rank's contiguous share of n particles: [first, end).
std::pair<std::size_t, std::size_t> share(std::size_t n, const mpi::Comm& comm) {
  const auto r = static_cast<std::size_t>(comm.rank()), s = static_cast<std::size_t>(comm.size());
  return {n * r / s, n * (r + 1) / s};
}

// Every rank assembles the whole grid from the ranks' blocks.
std::vector<double> whole_grid(const GridGeometry& g, const mpi::BlockDecomposition& blocks,
                               const core::RawVector<double>& block, const mpi::Comm& comm) {
  const std::vector<double> all = comm.all_gatherv<double>(block);
  std::vector<double> grid(static_cast<std::size_t>(g.shape[0] * g.shape[1] * g.shape[2]), -1.0);
  std::size_t at = 0;
  for (int q = 0; q < comm.size(); ++q) {
    const mpi::BlockDecomposition::Box box = blocks.box(q);
    for (auto i = box.lo[0]; i < box.hi[0]; ++i)
      for (auto j = box.lo[1]; j < box.hi[1]; ++j)
        for (auto k = box.lo[2]; k < box.hi[2]; ++k)
          grid[static_cast<std::size_t>((i * g.shape[1] + j) * g.shape[2] + k)] = all[at++];
  }
  return grid;
}

// Every rank takes its contiguous share of the particles and deposits; every rank assembles the whole
// grid from the blocks. The total mass must be the single rank's too.
std::vector<double> distributed(const GridGeometry& g, Assignment a, const mpi::BlockDecomposition& blocks,
                                const Case& c, const mpi::Comm& comm, double* total = nullptr) {
  const auto [b, e] = share(c.mass.size(), comm);
  const auto res = deposit(g, a, blocks, std::span<const double>(c.pos).subspan(3 * b, 3 * (e - b)),
                           std::span<const double>(c.mass).subspan(b, e - b), comm);
  if (total) *total = res.mass_total;
  return whole_grid(g, blocks, res.mass, comm);
}

std::vector<double> single(const GridGeometry& g, Assignment a, const Case& c, double* total = nullptr) {
  const mpi::Comm self(MPI_COMM_SELF);
  const auto res = deposit(g, a, mpi::BlockDecomposition(g.shape, 1), c.pos, c.mass, self);
  if (total) *total = res.mass_total;
  return {res.mass.begin(), res.mass.end()};
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

class RankInvariance : public ::testing::TestWithParam<Assignment> {};

TEST_P(RankInvariance, EveryLatticeGivesIdenticalBits) {
  const mpi::Comm comm;
  GridGeometry g;
  g.shape = {12, 10, 8};
  g.extent = {6.0, 5.0, 4.0};
  const Case c = random_particles(20000, 6.0, 7);
  for (Case& cc : std::vector<Case>{c}) {
    for (std::size_t i = 0; i < cc.mass.size(); ++i) {
      cc.pos[3 * i + 1] *= 5.0 / 6.0;
      cc.pos[3 * i + 2] *= 4.0 / 6.0;
    }
    double want_total = 0;
    const auto want = single(g, GetParam(), cc, &want_total);
    for (const mpi::BlockDecomposition& blocks : test::every_lattice(g.shape, comm.size())) {
      double total = 0;
      EXPECT_TRUE(same_bits(distributed(g, GetParam(), blocks, cc, comm, &total), want));
      EXPECT_EQ(total, want_total);
    }
  }
}

TEST_P(RankInvariance, UnevenAndEmptySlabsGiveIdenticalBits) {
  const mpi::Comm comm;
  GridGeometry g;
  g.shape = {9, 9, 9};
  g.extent = {1.0, 1.0, 1.0};
  const Case c = random_particles(5000, 1.0, 11);
  // Rank 0 gets one plane, the last rank the rest, the ranks between none.
  std::vector<std::int64_t> begins(static_cast<std::size_t>(comm.size()), 1);
  begins[0] = 0;
  const mpi::SlabDecomposition uneven(9, begins), whole(9, 1);
  for (const mpi::BlockDecomposition& blocks :
       {mpi::BlockDecomposition({uneven, whole, whole}), mpi::BlockDecomposition({whole, uneven, whole}),
        mpi::BlockDecomposition({whole, whole, uneven})})
    EXPECT_TRUE(same_bits(distributed(g, GetParam(), blocks, c, comm), single(g, GetParam(), c)));
}

TEST_P(RankInvariance, MoreRanksThanPlanes) {
  const mpi::Comm comm;
  GridGeometry g;
  g.shape = {2, 4, 4};
  g.extent = {1.0, 1.0, 1.0};
  const Case c = random_particles(1000, 1.0, 3);
  EXPECT_TRUE(same_bits(distributed(g, GetParam(), mpi::BlockDecomposition(g.shape, comm.size()), c, comm),
                        single(g, GetParam(), c)));
}

TEST_P(RankInvariance, AgreesWithTheNaiveReference) {
  const mpi::Comm comm;
  GridGeometry g;
  g.shape = {16, 16, 16};
  g.extent = {2.0, 2.0, 2.0};
  const Case c = random_particles(4000, 2.0, 5);
  const auto got = distributed(g, GetParam(), mpi::BlockDecomposition(g.shape, comm.size()), c, comm);
  const char* names[] = {"ngp", "cic", "tsc"};
  const auto want =
      test::reference_deposit({16, 16, 16}, {2, 2, 2}, c.pos, c.mass, names[static_cast<int>(GetParam())]);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12 * (1 + want[i]));
}

TEST_P(RankInvariance, NonPeriodicRegion) {
  const mpi::Comm comm;
  GridGeometry g;
  g.shape = {10, 10, 10};
  g.origin = {0.2, 0.2, 0.2};
  g.extent = {0.5, 0.5, 0.5};
  g.periodic = false;
  const Case c = random_particles(5000, 1.0, 13);
  EXPECT_TRUE(same_bits(distributed(g, GetParam(), mpi::BlockDecomposition(g.shape, comm.size()), c, comm),
                        single(g, GetParam(), c)));
}

// add() in rounds, as cic-project reads its share: rounds of uneven sizes (a rank's last ones empty,
// as every rank calls it as often), masses in runs of one value and single ones (pages of positions
// alone and of whole clouds), the particles in no order (every bucket fed by every source, round after
// round) and in the order of their x (the rounds' clouds go to one rank after another: an outbox that
// held a round's worth and then little gives its memory back): the same bits as one rank's deposit.
TEST_P(RankInvariance, RoundsOfAnySizeGiveIdenticalBits) {
  const mpi::Comm comm;
  GridGeometry g;
  g.shape = {16, 12, 10};
  g.extent = {1.0, 1.0, 1.0};
  Case c = random_particles(30000, 1.0, 17);
  std::vector<std::size_t> order(c.mass.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t i, std::size_t j) { return c.pos[3 * i] < c.pos[3 * j]; });
  Case sorted;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t i = order[k];
    sorted.pos.insert(sorted.pos.end(), c.pos.begin() + 3 * i, c.pos.begin() + 3 * i + 3);
    sorted.mass.push_back((k / 997) % 3 == 2 ? c.mass[i] : 0.5 + static_cast<double>(k / 2000));
  }
  c.mass = sorted.mass;  // the same runs of masses, the particles unsorted

  const std::size_t sizes[] = {1, 700, 0, 3000, 50, 4500, 2, 1200};
  for (const Case* scene : {&c, &sorted}) {
    const auto want = single(g, GetParam(), *scene);
    const auto [b, e] = share(scene->mass.size(), comm);
    std::vector<std::pair<std::size_t, std::size_t>> rounds;
    for (std::size_t at = b, k = 0; at < e; ++k) {
      const std::size_t next = std::min(e, at + sizes[k % std::size(sizes)]);
      rounds.emplace_back(at, next);
      at = next;
    }
    const auto n_rounds = static_cast<std::size_t>(comm.max(static_cast<std::uint64_t>(rounds.size())));
    rounds.resize(n_rounds, {e, e});
    for (const mpi::BlockDecomposition& blocks : test::every_lattice(g.shape, comm.size())) {
      Deposit d(g, GetParam(), blocks, comm);
      for (const auto& [r0, r1] : rounds)
        d.add(std::span<const double>(scene->pos).subspan(3 * r0, 3 * (r1 - r0)),
              std::span<const double>(scene->mass).subspan(r0, r1 - r0));
      EXPECT_TRUE(same_bits(whole_grid(g, blocks, d.finish().mass, comm), want))
          << (scene == &c ? "particles in no order" : "particles in x order");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, RankInvariance, ::testing::Values(Assignment::ngp, Assignment::cic, Assignment::tsc));

}  // namespace
}  // namespace phew::grid
