// Reading a RAMSES output under MPI: each rank counts its share of the part files, the counts are
// all-gathered, and the ranks' shares of the particles, in rank order, are exactly the serial read.
#include <phew/core/error.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/snapshot.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;

namespace phew::particles {
namespace {

fs::path output4() {
  const char* env = std::getenv("PHEW_SHARED_DATA");
  const fs::path root = env ? fs::path(env) : fs::path(__FILE__).parent_path().parent_path().parent_path() / ".." / "shared" / "data";
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
    for (const auto& e : fs::directory_iterator(output4(), ec)) fs::copy_file(e.path(), dir / "output_00004" / e.path().filename(), ec);
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

}  // namespace
}  // namespace phew::particles
