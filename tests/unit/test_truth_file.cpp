// The truth file of synth-particles written and read back.
#include <phew/core/error.hpp>
#include <phew/io/truth_file.hpp>

#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

namespace phew::io {
namespace {

namespace fs = std::filesystem;

TEST(TruthFile, RoundTrips) {
  const fs::path dir = fs::temp_directory_path() / ("phew-test-truth-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "t.truth.h5").string();
  model::Truth t;
  t.meta = {"snap_001.hdf5",
            1,
            0.25,
            244.5,
            0.0,
            42,
            "restricted",
            R"({"seed":42})",
            "kpc",
            "1e10 Msun",
            "km/s",
            {"host", "sat"},
            {"nfw", "hernquist"},
            200,
            1.4e-8};
  t.particles = {{1, 0, 1}, {2, 0, 0}, {3, 1, 1}};
  t.components = {{2, 1, true, -1, 0.5, 1.0, 0.9, 200, 10, 20, 200, 20, 100, {1, 2, 3}, {0, 0, 0}},
                  {1, 3, true, 0, 0.1, 0.1, 0.08, 40, 0, 2, 40, 4, 5, {10, 2, 3}, {0, 50, 0}}};
  t.track = {{0.0, 0.25}, {0.0, 244.5}, {1, 2, 3, 9, 2, 3, 1, 2, 3, 10, 2, 3}, {0, 0, 0, 0, 50, 0, 0, 0, 0, 0, 50, 0}};
  const mpi::Comm comm;
  {
    File f = File::create(path, comm);
    write_truth(f, t, comm);
  }
  const File f = File::open_read(path);
  const model::Truth back = read_truth(f);
  EXPECT_EQ(back.meta.snapshot, "snap_001.hdf5");
  EXPECT_EQ(back.meta.snapshot_index, 1);
  EXPECT_EQ(back.meta.seed, 42u);
  EXPECT_EQ(back.meta.names, t.meta.names);
  EXPECT_EQ(back.meta.models, t.meta.models);
  EXPECT_EQ(back.meta.critical_density, 1.4e-8);
  ASSERT_EQ(back.particles.size(), 3u);
  EXPECT_EQ(back.particles[2].component, 1);
  EXPECT_EQ(back.particles[1].bound, 0);
  ASSERT_EQ(back.components.size(), 2u);
  EXPECT_EQ(back.components[1].parent, 0);
  EXPECT_EQ(back.components[1].velocity, (std::array<double, 3>{0, 50, 0}));
  EXPECT_TRUE(back.components[0].is_halo);
  EXPECT_EQ(back.track.center, t.track.center);
  EXPECT_EQ(back.track.time_myr, t.track.time_myr);
  // Types and units as documented.
  EXPECT_EQ(f.dataset_info("/particles/bound").describe(), "int8 [3]");
  EXPECT_EQ(f.dataset_info("/components/is_halo").describe(), "int8 [2]");
  EXPECT_EQ(f.dataset_info("/components/parent").describe(), "int32 [2]");
  EXPECT_EQ(f.dataset_info("/track/center").describe(), "float64 [2,2,3]");
  EXPECT_EQ(f.read_attribute_string("/components/concentration", "units"), "1");
  EXPECT_EQ(f.read_attribute_string("/components/center", "units"), "kpc");
  EXPECT_EQ(f.read_attribute_string("/components", "names"), R"(["host","sat"])");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace phew::io
