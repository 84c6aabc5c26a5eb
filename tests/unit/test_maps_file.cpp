// maps.h5 written and read back (both precisions), the halo centres of a clumps.h5, the centres files,
// and the PNG quicklook's structure.
#include <phew/core/error.hpp>
#include <phew/io/centres_file.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/io/h5.hpp>
#include <phew/io/maps_file.hpp>
#include <phew/io/quicklook.hpp>
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace phew::io {
namespace {

namespace fs = std::filesystem;

using MapsFile = test::TempDir;

model::Maps sample_maps(bool float64) {
  model::Maps m;
  m.meta.length_units = "kpc/h";
  m.meta.mass_units = "1e10 Msun/h";
  m.meta.axes = {2, 0, 1};
  m.meta.mode = "exact";
  m.meta.samples = 1;
  m.meta.backend = "qhull";
  m.meta.centers_source = "clumps";
  m.meta.box_size = {100, 100, 100};
  m.meta.periodic = true;
  m.meta.time = 0.5;
  m.meta.redshift = 1;
  m.meta.float64 = float64;
  m.resolution = 3;
  for (std::int64_t f = 0; f < 2; ++f) {
    m.rows.push_back({{1.0 + static_cast<double>(f), 2, 3}, 40 + f, 10, 20, 1, 3, 1, 1000 + f, 990, 6000, 1.25, 1.125});
    m.timing.push_back({0.5, 0.25, 0.0, f, f});
    for (int p = 0; p < 9; ++p) m.sigma.push_back(0.1 * p + static_cast<double>(f));
  }
  return m;
}

TEST_F(MapsFile, RoundTripsInBothPrecisions) {
  const mpi::Comm comm;
  for (bool f64 : {false, true}) {
    const model::Maps m = sample_maps(f64);
    {
      File f = File::create(path("maps.h5"), comm);
      write_maps(f, m, comm);
    }
    const File f = File::open_read(path("maps.h5"));
    const MapsHeader h = read_maps_header(f);
    EXPECT_EQ(h.n_fields, 2u);
    EXPECT_EQ(h.resolution, 3);
    EXPECT_EQ(h.meta.axes, m.meta.axes);
    EXPECT_EQ(h.meta.mode, "exact");
    EXPECT_EQ(h.meta.backend, "qhull");
    EXPECT_EQ(h.meta.centers_source, "clumps");
    EXPECT_EQ(h.meta.box_size, m.meta.box_size);
    EXPECT_TRUE(h.meta.periodic);
    EXPECT_EQ(h.meta.time, 0.5);
    EXPECT_EQ(h.meta.float64, f64);
    EXPECT_EQ(h.meta.sigma_units(), "(1e10 Msun/h)/(kpc/h)^2");
    EXPECT_EQ(f.read_attribute_string("/maps/sigma", "units"), "(1e10 Msun/h)/(kpc/h)^2");
    const auto rows = read_map_rows(f);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1].center, (std::array<double, 3>{2, 2, 3}));
    EXPECT_EQ(rows[1].id, 41);
    EXPECT_EQ(rows[1].n_particles, 1001);
    EXPECT_EQ(rows[0].map_mass, 1.125);
    EXPECT_EQ(read_map_timing(f)[1].rank, 1);
    const auto sigma = read_map_sigma(f, 1, 1);
    ASSERT_EQ(sigma.size(), 9u);
    for (int p = 0; p < 9; ++p)
      EXPECT_EQ(sigma[static_cast<std::size_t>(p)],
                f64 ? m.sigma[9 + static_cast<std::size_t>(p)]
                    : static_cast<double>(static_cast<float>(m.sigma[9 + static_cast<std::size_t>(p)])));
    EXPECT_EQ(f.dataset_info("/maps/id").describe(), "int64 [2]");
    EXPECT_EQ(f.dataset_info("/timing/model_sample").describe(), "int64 [2]");
    EXPECT_EQ(f.read_attribute_string("/timing/triangulation", "units"), "s");
  }
  EXPECT_EQ(quicklook_path("out/maps.h5", 0), "out/maps.0001.png");
  EXPECT_EQ(quicklook_path("maps", 11), "maps.0012.png");
}

TEST_F(MapsFile, HaloCentresMostMassiveFirst) {
  const mpi::Comm comm;
  {
    File f = File::create(path("clumps.h5"), comm);
    f.create_group("/halos");
    f.write<std::int64_t>("/halos/id", std::vector<std::int64_t>{1, 2, 3, 4});
    f.write<double>("/halos/mass", std::vector<double>{5, 9, 5, 1});
    f.write<double>("/halos/peak_position", {4, 3}, std::vector<double>{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4});
  }
  const auto h = read_halo_centres(File::open_read(path("clumps.h5")));
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].id, 2);
  EXPECT_EQ(h[1].id, 1);  // ties in mass: the lower ID first
  EXPECT_EQ(h[2].id, 3);
  EXPECT_EQ(h[2].position, (std::array<double, 3>{3, 3, 3}));
  {
    File f = File::create(path("bad.h5"), comm);
    f.create_group("/halos");
    f.write<std::int64_t>("/halos/id", std::vector<std::int64_t>{1});
  }
  EXPECT_THROW(read_halo_centres(File::open_read(path("bad.h5"))), core::Error);
}

TEST_F(MapsFile, CentresFromTextAndTables) {
  std::ofstream(path("c.csv")) << "x,y,z\n1,2,3\n\n# a comment\n4 5 6 # another\n";
  EXPECT_EQ(read_centres_text(path("c.csv")), (std::vector<std::array<double, 3>>{{1, 2, 3}, {4, 5, 6}}));
  std::ofstream(path("bad.txt")) << "1 2 3\n4 five 6\n";
  try {
    read_centres_text(path("bad.txt"));
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos);
  }
  std::ofstream(path("nan.txt")) << "nan 1 2\n";  // a number (refused later as not finite), not a header
  EXPECT_TRUE(std::isnan(read_centres_text(path("nan.txt")).at(0)[0]));
  const mpi::Comm comm;
  {
    File f = File::create(path("c.h5"), comm);
    f.write<double>(kDefaultCentresDataset, {2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
    f.write<double>("/flat", std::vector<double>{1, 2, 3});
  }
  EXPECT_EQ(read_centres_table(path("c.h5"), kDefaultCentresDataset)[1], (std::array<double, 3>{4, 5, 6}));
  EXPECT_THROW(read_centres_table(path("c.h5"), "/flat"), core::Error);
  EXPECT_THROW(read_centres_table(path("c.h5"), "/none"), core::Error);
}

TEST(Quicklook, IsAnRgbPngOfTheMapsSize) {
  std::vector<double> sigma(5 * 5, 0.0);
  sigma[7] = 1;
  const std::string png = quicklook_png(sigma, 5);
  ASSERT_GT(png.size(), 33u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  EXPECT_EQ(static_cast<unsigned char>(png[19]), 5u);  // width
  EXPECT_EQ(static_cast<unsigned char>(png[23]), 5u);  // height
  EXPECT_EQ(png[25], 2);                               // RGB
  EXPECT_EQ(png.substr(png.size() - 8, 4), "IEND");
}

TEST(Quicklook, NanPixelsAreGreyAndEmptyOnesBlack) {
  // A pixel outside the hull is NaN (maps.h5): grey, never drawn like an empty (0) pixel.
  const int n = 5;
  std::vector<double> sigma(n * n, 0.0);
  sigma[7] = 1;
  sigma[12] = std::nan("");
  const std::string png = quicklook_png(sigma, n);
  // One stored deflate block: "IDAT", the 2-byte zlib header, the 5-byte block header, the scanlines.
  const std::size_t raw = png.find("IDAT") + 4 + 2 + 5;
  auto pixel = [&](int i, int j) {  // sigma[i * n + j]: u = i to the right, v = j up
    const std::size_t at =
        raw + static_cast<std::size_t>(n - 1 - j) * (3 * n + 1) + 1 + 3 * static_cast<std::size_t>(i);
    return std::array<int, 3>{static_cast<unsigned char>(png[at]), static_cast<unsigned char>(png[at + 1]),
                              static_cast<unsigned char>(png[at + 2])};
  };
  EXPECT_EQ(pixel(2, 2), (std::array<int, 3>{128, 128, 128}));  // sigma[12]: NaN
  EXPECT_EQ(pixel(0, 0), (std::array<int, 3>{0, 0, 4}));        // 0: the bottom of the colour map
  EXPECT_NE(pixel(1, 2), (std::array<int, 3>{0, 0, 0}));        // sigma[7]: the maximum
}

}  // namespace
}  // namespace phew::io
