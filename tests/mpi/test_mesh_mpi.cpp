// The meshes' ghost exchanges at any rank count: the uniform grid's blocks (every lattice the ranks
// make, periodic and open, grids of 1-3 cells per axis) give each cell exactly the neighbours a brute
// force over the wrapped grid gives, with their densities, and ghost members take their owners'
// values; ghost planes (the potential's FFT slabs) come from their owners, planes travel with their
// source, with ranks that own no plane.
#include "../unit/block_lattices.hpp"
#include <phew/mesh/block_mesh.hpp>
#include <phew/mesh/ghost_planes.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace phew::mesh {
namespace {

double value_of(std::int64_t cell) { return 0.25 * static_cast<double>(cell % 1009) + 1.0; }

TEST(BlockMesh, NeighboursAndGhostsMatchABruteForce) {
  const mpi::Comm comm;
  for (const mpi::Extent3 n : {mpi::Extent3{6, 6, 6}, mpi::Extent3{7, 5, 3}, mpi::Extent3{1, 3, 2},
                               mpi::Extent3{2, 2, 2}, mpi::Extent3{3, 1, 4}})
    for (const bool periodic : {true, false})
      for (const mpi::BlockDecomposition& blocks : test::every_lattice(n, comm.size())) {
        grid::GridGeometry g;
        g.shape = n;
        g.periodic = periodic;
        const mpi::BlockDecomposition::Box box = blocks.box(comm.rank());
        core::RawVector<double> mine;
        for (auto i = box.lo[0]; i < box.hi[0]; ++i)
          for (auto j = box.lo[1]; j < box.hi[1]; ++j)
            for (auto k = box.lo[2]; k < box.hi[2]; ++k) mine.push_back(value_of((i * n[1] + j) * n[2] + k));
        const BlockMesh mesh(g, blocks, mine, comm);
        ASSERT_EQ(mesh.end_local(), static_cast<std::size_t>(box.cells()));
        grid::CellSet all(mesh.slots());
        for (std::size_t s = 0; s < mesh.slots(); ++s)
          if (mesh.global_index(s) >= 0) all.insert(s);
        all.finish();
        std::vector<std::int64_t> values(all.size(), -1);
        for (std::size_t s = 0; s < mesh.end_local(); ++s) values[all.rank(s)] = mesh.global_index(s);
        mesh.update_ghost_members(all, values, comm);
        for (std::size_t s = 0; s < mesh.end_local(); ++s) {
          const auto c = mesh.cell(s);
          std::set<std::int64_t> want;
          for (int di = -1; di <= 1; ++di)
            for (int dj = -1; dj <= 1; ++dj)
              for (int dk = -1; dk <= 1; ++dk) {
                mpi::Extent3 m{c[0] + di, c[1] + dj, c[2] + dk};
                bool inside = true;
                for (std::size_t d = 0; d < 3; ++d) {
                  if (m[d] < 0 || m[d] >= n[d]) inside = periodic;
                  m[d] = (m[d] + n[d]) % n[d];
                }
                const std::int64_t cell = (m[0] * n[1] + m[1]) * n[2] + m[2];
                if (inside && cell != mesh.global_index(s)) want.insert(cell);
              }
          std::set<std::int64_t> got;
          mesh.for_each_neighbour(s, [&](std::size_t t) {
            const std::int64_t cell = mesh.global_index(t);
            got.insert(cell);
            EXPECT_EQ(mesh.density(t), value_of(cell)) << "cell " << cell;
            EXPECT_EQ(values[all.rank(t)], cell) << "the ghost's member value comes from its owner";
          });
          ASSERT_EQ(got, want) << "cell " << mesh.global_index(s) << " of a " << n[0] << "x" << n[1] << "x" << n[2]
                               << (periodic ? " periodic" : " open") << " grid, lattice " << blocks.lattice()[0] << "x"
                               << blocks.lattice()[1] << "x" << blocks.lattice()[2];
        }
      }
}

TEST(BlockDecomposition, TheLatticeHasTheFewestGhostsAndLetsRanksOutnumberPlanes) {
  EXPECT_EQ(mpi::block_lattice({256, 256, 256}, 2), (std::array<int, 3>{2, 1, 1}));  // slabs while they are best
  EXPECT_EQ(mpi::block_lattice({256, 256, 256}, 8), (std::array<int, 3>{2, 2, 2}));
  EXPECT_EQ(mpi::block_lattice({6, 6, 6}, 8), (std::array<int, 3>{2, 2, 2}));
  EXPECT_EQ(mpi::block_lattice({4, 4, 4}, 64), (std::array<int, 3>{4, 4, 4}));
  EXPECT_EQ(mpi::block_lattice({4, 4, 4}, 5), (std::array<int, 3>{0, 0, 0}));  // no lattice of 5 fits
  const mpi::BlockDecomposition b({4, 4, 4}, 5);                               // so 4 ranks work, one idles
  EXPECT_EQ(b.used_ranks(), 4);
  EXPECT_EQ(b.box(4).cells(), 0);
  std::int64_t total = 0;
  for (int r = 0; r < 5; ++r) total += b.box(r).cells();
  EXPECT_EQ(total, 64);
  const mpi::BlockDecomposition c({6, 6, 6}, 8);
  for (std::int64_t i = 0; i < 6; ++i)
    for (std::int64_t j = 0; j < 6; ++j)
      for (std::int64_t k = 0; k < 6; ++k) {
        const mpi::BlockDecomposition::Box box = c.box(c.owner({i, j, k}));
        EXPECT_TRUE(i >= box.lo[0] && i < box.hi[0] && j >= box.lo[1] && j < box.hi[1] && k >= box.lo[2] &&
                    k < box.hi[2]);
      }
}

TEST(BlockDecomposition, TheRanksABoxTouchesAreTheOwnersOfItsCells) {
  using mpi::BlockDecomposition, mpi::SlabDecomposition, mpi::Extent3;
  // Runs of cells shorter and longer than an axis, wrapping or clipped, on lattices with empty places:
  // each owner once, and no other rank.
  const Extent3 n{7, 5, 3};
  const std::vector<std::int64_t> uneven{0, 0, 3, 3, 6};  // places 0 and 2 hold no planes
  const std::vector<BlockDecomposition> all{
      BlockDecomposition(n, 6), BlockDecomposition(n, 1),
      BlockDecomposition({SlabDecomposition(7, uneven), SlabDecomposition(5, 2), SlabDecomposition(3, 3)})};
  for (const BlockDecomposition& blocks : all)
    for (const bool periodic : {true, false})
      for (std::int64_t a = -9; a <= 8; a += 3)
        for (std::int64_t len : {0, 1, 2, 4, 6, 9}) {
          const Extent3 first{a, a / 2, -a}, last{a + len, a / 2 + len / 2, -a + len};
          std::set<int> want;
          for (auto i = first[0]; i <= last[0]; ++i)
            for (auto j = first[1]; j <= last[1]; ++j)
              for (auto k = first[2]; k <= last[2]; ++k) {
                Extent3 c{i, j, k};
                bool inside = true;
                for (std::size_t d = 0; d < 3; ++d) {
                  if (c[d] < 0 || c[d] >= n[d]) inside = inside && periodic;
                  c[d] = ((c[d] % n[d]) + n[d]) % n[d];
                }
                if (inside) want.insert(blocks.owner(c));
              }
          std::vector<int> got;
          blocks.for_each_rank_touching(first, last, periodic, [&](int r) { got.push_back(r); });
          EXPECT_EQ(std::set<int>(got.begin(), got.end()), want)
              << "from " << a << " length " << len << (periodic ? " periodic" : " open");
          EXPECT_EQ(got.size(), want.size()) << "each rank once";
        }
}

TEST(Planes, GhostsComeFromTheirOwners) {
  const mpi::Comm comm;
  const std::int64_t nx = 7;
  const mpi::SlabDecomposition slabs(nx, comm.size());
  const std::size_t plane = 3;
  std::vector<double> local;
  for (auto i = slabs.begin(comm.rank()); i < slabs.end(comm.rank()); ++i)
    for (std::size_t c = 0; c < plane; ++c) local.push_back(static_cast<double>(10 * i) + static_cast<double>(c));
  for (bool periodic : {true, false}) {
    const auto ghosts = fetch_ghost_planes<double>(comm, slabs, local, plane, 2, periodic, -1.0);
    ASSERT_EQ(ghosts.size(), 4 * plane);
    if (slabs.planes(comm.rank()) == 0) continue;
    const std::int64_t want_planes[4] = {slabs.begin(comm.rank()) - 2, slabs.begin(comm.rank()) - 1,
                                         slabs.end(comm.rank()), slabs.end(comm.rank()) + 1};
    for (int g = 0; g < 4; ++g) {
      std::int64_t p = want_planes[g];
      const bool outside = p < 0 || p >= nx;
      p = ((p % nx) + nx) % nx;
      const double expect = (!periodic && outside) ? -1.0 : static_cast<double>(10 * p) + 1.0;
      EXPECT_EQ(ghosts[static_cast<std::size_t>(g) * plane + 1], expect) << "ghost " << g << " periodic " << periodic;
    }
  }
}

TEST(Planes, SentPlanesArriveFromTheirSourceInSendOrder) {
  const mpi::Comm comm;
  const std::size_t plane = 2;
  std::vector<PlaneMessage<int>> out;
  for (int r = 0; r < comm.size(); ++r)
    for (int k = 0; k < 2; ++k) out.push_back({r, 100 * comm.rank() + k, k, {comm.rank(), r * 10 + k}});
  const auto in = send_planes(comm, out, plane);
  ASSERT_EQ(in.size(), 2 * static_cast<std::size_t>(comm.size()));
  for (std::size_t i = 0; i < in.size(); ++i) {
    const int source = static_cast<int>(i / 2), k = static_cast<int>(i % 2);
    EXPECT_EQ(in[i].peer, source);
    EXPECT_EQ(in[i].plane, 100 * source + k);
    EXPECT_EQ(in[i].tag, k);
    EXPECT_EQ(in[i].values, (std::vector<int>{source, comm.rank() * 10 + k}));
  }
}

}  // namespace
}  // namespace phew::mesh
