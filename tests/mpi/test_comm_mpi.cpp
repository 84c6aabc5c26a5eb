// Communicator helpers, plane exchange and agreement on errors, at any rank count.
#include "mpi/agree.hpp"
#include "mpi/comm.hpp"
#include "mpi/planes.hpp"

#include <gtest/gtest.h>

namespace phew::mpi {
namespace {

TEST(Comm, AllToAllKeepsSourceOrder) {
  const Comm comm;
  // Rank r sends to each rank d the values 1000*r + d*10 + {0, 1, ..., r}.
  std::vector<int> send;
  std::vector<std::uint64_t> counts;
  for (int d = 0; d < comm.size(); ++d) {
    for (int k = 0; k <= comm.rank(); ++k) send.push_back(1000 * comm.rank() + d * 10 + k);
    counts.push_back(static_cast<std::uint64_t>(comm.rank() + 1));
  }
  const auto got = comm.all_to_all<int>(send, counts);
  std::vector<int> want;
  for (int s = 0; s < comm.size(); ++s)
    for (int k = 0; k <= s; ++k) want.push_back(1000 * s + comm.rank() * 10 + k);
  EXPECT_EQ(got, want);
}

TEST(Comm, LargeRecordsSurviveTheBlockSplit) {
  const Comm comm;
  struct Rec {
    double v[5];
  };  // 40 bytes: not a multiple of the 64-byte blocks
  std::vector<Rec> send(static_cast<std::size_t>(3 * comm.size()));
  for (std::size_t i = 0; i < send.size(); ++i) send[i].v[4] = comm.rank() * 100.0 + static_cast<double>(i);
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(comm.size()), 3);
  const auto got = comm.all_to_all<Rec>(send, counts);
  ASSERT_EQ(got.size(), send.size());
  for (int s = 0; s < comm.size(); ++s)
    for (int k = 0; k < 3; ++k)
      EXPECT_EQ(got[static_cast<std::size_t>(3 * s + k)].v[4], s * 100.0 + 3 * comm.rank() + k);
}

TEST(Comm, AllGathervConcatenatesInRankOrder) {
  const Comm comm;
  const std::vector<long> mine(static_cast<std::size_t>(comm.rank()), comm.rank());
  const auto all = comm.all_gatherv<long>(mine);
  std::vector<long> want;
  for (int r = 0; r < comm.size(); ++r) want.insert(want.end(), static_cast<std::size_t>(r), r);
  EXPECT_EQ(all, want);
}

TEST(Planes, GhostsComeFromTheirOwners) {
  const Comm comm;
  const std::int64_t nx = 7;
  const SlabDecomposition slabs(nx, comm.size());
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

TEST(Agree, AnErrorOnOneRankStopsEveryRankWithItsMessage) {
  const Comm comm;
  const int failing = comm.size() - 1;
  try {
    agree(comm, [&] {
      if (comm.rank() == failing) throw Error::input("bad value on rank {}", failing);
    });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(e.agreed());
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_EQ(std::string(e.what()), "bad value on rank " + std::to_string(failing));
  }
  EXPECT_NO_THROW(agree(comm, [] {}));
}

TEST(Slabs, OwnersCoverEveryPlaneOnce) {
  for (int ranks = 1; ranks <= 9; ++ranks) {
    const SlabDecomposition s(7, ranks);
    for (std::int64_t p = 0; p < 7; ++p) {
      const int o = s.owner(p);
      EXPECT_GE(p, s.begin(o));
      EXPECT_LT(p, s.end(o));
    }
  }
}

}  // namespace
}  // namespace phew::mpi
