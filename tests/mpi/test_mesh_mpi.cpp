// The mesh's ghost exchange at any rank count: ghost planes come from their owners, planes travel with
// their source, on periodic and open grids, with ranks that own no plane.
#include <phew/mesh/ghost_planes.hpp>

#include <gtest/gtest.h>

namespace phew::mesh {
namespace {

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
    for (int k = 0; k < 2; ++k)
      out.push_back({r, 100 * comm.rank() + k, k, {comm.rank(), r * 10 + k}});
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
