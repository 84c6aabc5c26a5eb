// Reading a RAMSES output under MPI: each rank counts its share of the part files, the counts are
// all-gathered, and the ranks' shares of the particles, in rank order, are exactly the serial read.
// The members of labelled cells (members_of_cells, gather_groups): a brute-force serial reference's on
// any ranks x threads.
#include <phew/core/error.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/particles/cell_members.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/snapshot/open.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <tuple>
#include <string>

namespace fs = std::filesystem;

namespace phew::particles {
namespace {

using namespace phew::snapshot;  // the formats under test

fs::path output4() {
  const char* env = std::getenv("PHEW_SHARED_DATA");
  const fs::path root =
      env ? fs::path(env) : fs::path(__FILE__).parent_path().parent_path().parent_path() / ".." / "shared" / "data";
  return root / "ramses-cosmo-L20-N32" / "output_00004";
}

TEST(RamsesMpi, SharesInRankOrderAreTheSerialRead) {
  const mpi::Comm comm;
  const auto reader = open_snapshot({output4().string()});
  const SnapshotInfo& info = reader->info();
  EXPECT_EQ(file_counts(*reader, comm), reader->count_files(0, info.files.size()));
  FieldSelection f;
  f.ids = f.velocities = true;
  const ParticleSet mine = read_share(*reader, {1}, f, comm);
  const std::vector<std::uint64_t> all = comm.all_gatherv(std::span<const std::uint64_t>(mine.id));
  const ParticleSet serial = read_particles(*reader, {1}, 0, info.total(1), f);
  EXPECT_EQ(all, serial.id);
  const std::vector<double> x = comm.all_gatherv(std::span<const double>(mine.position));
  EXPECT_EQ(x, serial.position);
  const std::vector<double> v = comm.all_gatherv(std::span<const double>(mine.velocity));
  EXPECT_EQ(v, serial.velocity);
}

TEST(RamsesMpi, ABadFileStopsEveryRankWithTheSameError) {
  const mpi::Comm comm;
  const fs::path dir = fs::temp_directory_path() / ("phew_ramses_mpi_" + std::to_string(comm.size()));
  int made = 1;
  if (comm.root()) {
    std::error_code ec;  // no throw here: the other ranks would wait forever
    fs::remove_all(dir, ec);
    fs::create_directories(dir / "output_00004", ec);
    for (const auto& e : fs::directory_iterator(output4(), ec))
      fs::copy_file(e.path(), dir / "output_00004" / e.path().filename(), ec);
    fs::permissions(dir / "output_00004" / "part_00004.out00002", fs::perms::owner_write, fs::perm_options::add, ec);
    fs::resize_file(dir / "output_00004" / "part_00004.out00002", 500000, ec);
    made = ec ? 0 : 1;
  }
  comm.broadcast(made);
  ASSERT_EQ(made, 1) << "could not make the broken copy in " << dir;
  const auto reader = open_snapshot({(dir / "output_00004").string()});
  std::string message;
  try {
    read_share(*reader, {1}, FieldSelection{}, comm);
  } catch (const core::Error& e) {
    message = e.what();
    EXPECT_EQ(e.kind(), core::ErrorKind::input);
  }
  EXPECT_NE(message.find("part_00004.out00002: truncated in record 13"), std::string::npos) << message;
  comm.barrier();
  if (comm.root()) fs::remove_all(dir);
}

// check_unique_ids against a serial count: the smallest repeated ID is named on every rank, whichever
// ranks hold its copies (IDs near 2^64 included); unique IDs pass.
TEST(UniqueIdsMpi, TheSmallestRepeatedIdIsNamedOnAnyRanks) {
  const mpi::Comm comm;
  const std::uint64_t top = ~std::uint64_t{0};
  for (const auto& [repeats, want] :
       std::vector<std::pair<std::vector<std::pair<std::size_t, std::size_t>>, std::string>>{
           {{}, ""},
           {{{3, 400}}, "ID 2803 "},
           {{{10, 999}, {500, 20}}, "ID 143 "},
           {{{0, 999}}, "ID " + std::to_string(top) + " "}}) {
    std::vector<std::uint64_t> all(1000);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i + 1 == all.size() ? top : i * 7 + 3;  // unique
    for (const auto& [to, from] : repeats) all[to] = all[from];  // ID 7 from + 3 (the last: top)
    const auto r = static_cast<std::size_t>(comm.rank()), n = static_cast<std::size_t>(comm.size());
    const std::vector<std::uint64_t> mine(all.begin() + static_cast<std::ptrdiff_t>(all.size() * r / n),
                                          all.begin() + static_cast<std::ptrdiff_t>(all.size() * (r + 1) / n));
    std::string got;
    try {
      check_unique_ids(mine, "s.hdf5", comm);
    } catch (const core::Error& e) {
      got = e.what();
      EXPECT_EQ(e.kind(), core::ErrorKind::input);
    }
    if (want.empty())
      EXPECT_EQ(got, "");
    else
      EXPECT_NE(got.find(want), std::string::npos) << got;
  }
}

// 20,000 particles in a periodic 5 x 6 x 7 box of unit cells, a third of the cells labelled with one of
// 40 groups (so a pencil holds cells of several groups, and groups span pencils); each rank reads a
// share in file order. Every particle in a labelled cell, and only those, comes back once, with its
// cell and label, each group whole on one rank, groups in ascending runs over the ranks, and each
// rank's members sorted by (group, ID): the reference's, on any ranks and threads.
TEST(CellMembersMpi, LabelledCellsMembersAreTheBruteForcesOnAnyRanksAndThreads) {
  const mpi::Comm comm;
  grid::GridGeometry g;
  g.shape = {5, 6, 7};
  g.extent = {5, 6, 7};
  const mesh::CellSpace space = mesh::CellSpace::uniform(g);
  std::mt19937_64 rng(31);
  grid::CellLabels all;
  for (std::int64_t c = 0; c < 210; ++c)
    if (rng() % 3 == 0) {
      all.cell.push_back(c);
      all.label.push_back(static_cast<std::int64_t>(rng() % 40) + 1);
    }
  ParticleSet ps;
  std::uniform_real_distribution<double> u(0, 1);
  const std::size_t n = 20000;
  for (std::size_t i = 0; i < n; ++i) {
    ps.id.push_back(1000 + 7 * ((i * 7919) % n));  // unique, not in file order
    for (std::size_t d = 0; d < 3; ++d) ps.position.push_back(u(rng) * static_cast<double>(g.shape[d]));
    for (std::size_t d = 0; d < 3; ++d) ps.velocity.push_back(u(rng));
    ps.mass.push_back(1 + u(rng));
  }
  // The reference: every particle's cell by its coordinates, sorted by (label, ID).
  std::vector<std::tuple<std::int64_t, std::uint64_t, std::int64_t>> want;  // label, id, cell
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t cell =
        (static_cast<std::int64_t>(ps.position[3 * i]) * 6 + static_cast<std::int64_t>(ps.position[3 * i + 1])) * 7 +
        static_cast<std::int64_t>(ps.position[3 * i + 2]);
    const auto it = std::lower_bound(all.cell.begin(), all.cell.end(), cell);
    if (it != all.cell.end() && *it == cell)
      want.emplace_back(all.label[static_cast<std::size_t>(it - all.cell.begin())], ps.id[i], cell);
  }
  std::sort(want.begin(), want.end());
  // This rank's share of the particles and its run of the cells.
  const auto r = static_cast<std::size_t>(comm.rank()), ranks = static_cast<std::size_t>(comm.size());
  ParticleSet mine;
  for (std::size_t i = n * r / ranks; i < n * (r + 1) / ranks; ++i) {
    mine.id.push_back(ps.id[i]);
    mine.mass.push_back(ps.mass[i]);
    for (std::size_t d = 0; d < 3; ++d) {
      mine.position.push_back(ps.position[3 * i + d]);
      mine.velocity.push_back(ps.velocity[3 * i + d]);
    }
  }
  const auto cuts = space.rank_cuts(comm.size(), all.size(),
                                    [&](std::uint64_t row) { return static_cast<std::uint64_t>(all.cell[row]); });
  grid::CellLabels run;
  for (std::size_t k = 0; k < all.size(); ++k)
    if (all.cell[k] >= cuts[r] && all.cell[k] < cuts[r + 1]) {
      run.cell.push_back(all.cell[k]);
      run.label.push_back(all.label[k]);
    }
  for (const int threads : {1, 3}) {
    const std::vector<CellMember> got =
        gather_groups(members_of_cells(space, cuts, mine, run, threads, comm), 40, threads, comm);
    for (std::size_t i = 1; i < got.size(); ++i)
      ASSERT_TRUE(std::tie(got[i - 1].group, got[i - 1].id) < std::tie(got[i].group, got[i].id))
          << "threads " << threads;
    const auto everyone = comm.all_gatherv<CellMember>(got);
    ASSERT_EQ(everyone.size(), want.size()) << "threads " << threads;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(everyone[i].label, std::get<0>(want[i]));
      EXPECT_EQ(everyone[i].group, std::get<0>(want[i]));
      EXPECT_EQ(everyone[i].id, std::get<1>(want[i]));
      EXPECT_EQ(everyone[i].cell, std::get<2>(want[i]));
    }
  }
}

}  // namespace
}  // namespace phew::particles
