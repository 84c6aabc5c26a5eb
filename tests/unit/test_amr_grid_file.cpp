// The adaptive grid.h5 (lib/io/amr_grid_file): written and read back, any range of keys by binary
// search, and the invariants a reader relies on refused when broken.
#include <phew/core/error.hpp>
#include <phew/io/amr_grid_file.hpp>
#include "temp_dir.hpp"

#include <gtest/gtest.h>

namespace phew {
namespace {

using AmrFile = test::TempDir;

grid::GridMeta meta() {
  grid::GridMeta m;
  m.geometry.shape = {2, 2, 2};
  m.geometry.extent = {1, 1, 1};
  m.density_units = "Msun/kpc^3";
  m.mass_units = "Msun";
  m.length_units = "kpc";
  m.mean_density = 1;
  m.total_mass = 1;
  return m;
}

// Keys 16 * i | level for i = 0..n-1 (ascending; the level in the low bits).
model::AmrLeaves leaves(std::size_t n) {
  model::AmrLeaves out;
  for (std::size_t i = 0; i < n; ++i) {
    out.key.push_back(16 * i + i % 3);
    out.density.push_back(0.5 * static_cast<double>(i));
  }
  return out;
}

void write(io::File& f, const model::AmrRefinement& r, const model::AmrLeaves& rows, io::Precision precision,
           bool compress, const mpi::Comm& comm) {
  io::write_amr_grid(f, meta(), r, rows.key, rows.density, precision, compress, comm);
}

TEST_F(AmrFile, WritesAndReadsAnyRangeOfKeys) {
  const mpi::Comm comm;
  const auto rows = leaves(1000);
  model::AmrRefinement r{2, 8, 8, 1, {334, 333, 333}};
  {
    io::File f = io::File::create(path("amr.h5"), comm);
    write(f, r, rows, io::Precision::f64, true, comm);
  }
  const io::File f = io::File::open_read(path("amr.h5"));
  EXPECT_TRUE(io::is_adaptive_grid(f));
  const auto back = io::read_amr_refinement(f);
  EXPECT_EQ(back.levels, 2);
  EXPECT_EQ(back.leaves_per_level, r.leaves_per_level);
  EXPECT_EQ(io::count_amr_leaves(f), 1000u);
  // Keys [16*100, 16*251): leaves 100..250 (the range is half-open).
  auto part = io::read_amr_leaves(f, 16 * 100, 16 * 251);
  ASSERT_EQ(part.size(), 151u);
  EXPECT_EQ(part.key.front(), rows.key[100]);
  EXPECT_EQ(part.key.back(), rows.key[250]);
  EXPECT_EQ(part.density.back(), rows.density[250]);
  EXPECT_EQ(io::read_amr_leaves(f, 0, ~std::uint64_t{0}).size(), 1000u);
  EXPECT_TRUE(io::read_amr_leaves(f, 16 * 2000, 16 * 3000).empty());
  EXPECT_TRUE(io::read_amr_leaves(f, 18, 34).empty());  // between keys 17 and 34
  EXPECT_THROW(io::read_grid_meta(f), core::Error);     // a uniform grid's reader refuses it by name
}

// A float32 file read as stored (float) and as double: the same values; a float64 file is not float32.
TEST_F(AmrFile, ReadsFloat32DensitiesAsStored) {
  const mpi::Comm comm;
  auto rows = leaves(500);
  for (double& d : rows.density) d = d / 3;  // not exact in float
  model::AmrRefinement r{2, 8, 8, 1, {167, 167, 166}};
  for (const io::Precision precision : {io::Precision::f32, io::Precision::f64}) {
    {
      io::File f = io::File::create(path("p.h5"), comm);
      write(f, r, rows, precision, false, comm);
    }
    const io::File f = io::File::open_read(path("p.h5"));
    EXPECT_EQ(io::amr_density_is_float32(f), precision == io::Precision::f32);
    const auto wide = io::read_amr_leaves<double>(f, 0, ~std::uint64_t{0});
    const auto single = io::read_amr_leaves<float>(f, 0, ~std::uint64_t{0});
    ASSERT_EQ(single.size(), 500u);
    EXPECT_EQ(single.key, rows.key);
    for (std::size_t n = 0; n < 500; ++n) {
      EXPECT_EQ(single.density[n], static_cast<float>(rows.density[n]));
      if (precision == io::Precision::f32) {
        EXPECT_EQ(wide.density[n], static_cast<double>(single.density[n]));
      }
    }
  }
}

// The levels are checked a million rows at a time: a wrong one in the second piece is found too.
TEST_F(AmrFile, ChecksTheLevelsOfEveryPiece) {
  const mpi::Comm comm;
  const std::size_t n = (std::size_t{1} << 20) + 5;
  const auto good = leaves(n);
  std::vector<std::int8_t> level(n);
  for (std::size_t i = 0; i < n; ++i) level[i] = static_cast<std::int8_t>(good.key[i] & 0xF);
  level[n - 3] = static_cast<std::int8_t>(level[n - 3] + 1);
  {
    io::File h = io::File::create(path("pieces.h5"), comm);
    h.create_group("/grid");
    io::write_grid_attributes(h, meta(), "/grid");
    h.create_group("/grid/leaves");
    h.write_rows<std::uint64_t, std::uint64_t>("/grid/leaves/key", {n}, 0, good.key);
    h.write_rows<std::int8_t, std::int8_t>("/grid/leaves/level", {n}, 0, level);
    h.write_rows<double, double>("/grid/leaves/density", {n}, 0, good.density);
  }
  const io::File h = io::File::open_read(path("pieces.h5"));
  EXPECT_NO_THROW(io::read_amr_leaf_rows(h, 0, n - 3));
  EXPECT_THROW(io::read_amr_leaf_rows(h, 0, n), core::Error);
  EXPECT_THROW(io::read_amr_leaf_rows<float>(h, 10, n - 10), core::Error);
  // Checked on lib/io's threads: the same leaves, and the first bad leaf named whichever thread met a
  // bad one first.
  for (const int threads : {1, 3}) {
    io::set_io_threads(threads);
    EXPECT_EQ(io::read_amr_leaf_rows(h, 0, n - 3).key,
              std::vector<std::uint64_t>(good.key.begin(), good.key.end() - 3));
    try {
      io::read_amr_leaf_rows(h, 700000, n - 700000);
      ADD_FAILURE() << threads;
    } catch (const core::Error& e) {
      EXPECT_NE(std::string(e.what()).find("leaf " + std::to_string(n - 3) + " of"), std::string::npos) << e.what();
    }
  }
  io::set_io_threads(1);
}

// Two bad leaves far apart: the first is named on any number of threads.
TEST_F(AmrFile, NamesTheFirstBadLeafOnAnyThreads) {
  const mpi::Comm comm;
  const std::size_t n = 300000;
  auto rows = leaves(n);
  rows.density[250000] = -1;
  rows.density[70001] = -2;
  {
    io::File f = io::File::create(path("two.h5"), comm);
    write(f, model::AmrRefinement{2, 8, 8, 1, {n / 3, n / 3, n / 3}}, rows, io::Precision::f64, false, comm);
  }
  const io::File f = io::File::open_read(path("two.h5"));
  for (const int threads : {1, 2, 5}) {
    io::set_io_threads(threads);
    try {
      io::read_amr_leaves_above<double>(f, 0, ~std::uint64_t{0}, 0.0);
      ADD_FAILURE() << threads;
    } catch (const core::Error& e) {
      EXPECT_NE(std::string(e.what()).find("leaf 70001 of"), std::string::npos) << e.what();
    }
  }
  io::set_io_threads(1);
}

// phew-segment's read: the leaves above a threshold, a million rows at a time, each batch checked, and
// the keys ascending across batches too.
TEST_F(AmrFile, ReadsTheLeavesAboveAThresholdABatchAtATime) {
  const mpi::Comm comm;
  const std::size_t n = (std::size_t{1} << 20) + 5;
  auto rows = leaves(n);
  for (std::size_t i = 0; i < n; ++i) rows.density[i] = static_cast<double>((i * 7919) % 1000);
  model::AmrRefinement r{2, 8, 8, 1, {n / 3 + 1, n / 3 + 1, n / 3}};
  {
    io::File f = io::File::create(path("above.h5"), comm);
    write(f, r, rows, io::Precision::f64, false, comm);
  }
  const io::File f = io::File::open_read(path("above.h5"));
  const std::size_t b = 1000, e = n - 2;  // leaves [b, e): both batches
  model::AmrLeaves want;
  for (std::size_t i = b; i < e; ++i)
    if (rows.density[i] > 990.0) {
      want.key.push_back(rows.key[i]);
      want.density.push_back(rows.density[i]);
    }
  EXPECT_GT(want.size(), 1000u);
  for (const int threads : {1, 3}) {  // kept on lib/io's threads: the same leaves in the same order
    io::set_io_threads(threads);
    const auto above = io::read_amr_leaves_above<double>(f, rows.key[b], rows.key[e], 990.0);
    EXPECT_EQ(above.read, e - b);
    EXPECT_EQ(above.densest, 999.0);
    EXPECT_EQ(above.leaves.key, want.key);
    EXPECT_EQ(above.leaves.density, want.density);
  }
  io::set_io_threads(1);
  EXPECT_TRUE(io::read_amr_leaves_above<float>(f, 5, 5, 0.0).leaves.empty());
  // The first key of the second batch below the last of the first: each batch alone is in order.
  const std::size_t batch = std::size_t{1} << 20;
  std::swap(rows.key[batch - 1], rows.key[batch]);
  {
    io::File g = io::File::create(path("seam.h5"), comm);
    write(g, r, rows, io::Precision::f64, false, comm);
  }
  const io::File g = io::File::open_read(path("seam.h5"));
  EXPECT_THROW(io::read_amr_leaves_above<double>(g, 0, ~std::uint64_t{0}, 0.0), core::Error);
}

TEST_F(AmrFile, RefusesLeavesOutOfOrderOrWithTheWrongLevel) {
  const mpi::Comm comm;
  auto rows = leaves(10);
  std::swap(rows.key[3], rows.key[4]);
  model::AmrRefinement r{2, 8, 8, 1, {4, 3, 3}};
  {
    io::File f = io::File::create(path("bad.h5"), comm);
    write(f, r, rows, io::Precision::f32, false, comm);
  }
  const io::File f = io::File::open_read(path("bad.h5"));
  EXPECT_THROW(io::read_amr_leaf_rows(f, 0, 10), core::Error);
  EXPECT_NO_THROW(io::read_amr_leaf_rows(f, 5, 5));
  // A level that disagrees with its key (the writer takes the level from the key, so written by hand).
  {
    io::File h = io::File::create(path("level.h5"), comm);
    const auto good = leaves(10);
    h.create_group("/grid");
    io::write_grid_attributes(h, meta(), "/grid");
    h.create_group("/grid/leaves");
    std::vector<std::int8_t> level(10);
    for (std::size_t n = 0; n < 10; ++n) level[n] = static_cast<std::int8_t>(good.key[n] & 0xF);
    level[7] = static_cast<std::int8_t>(level[7] + 1);
    h.write_rows<std::uint64_t, std::uint64_t>("/grid/leaves/key", {10}, 0, good.key);
    h.write_rows<std::int8_t, std::int8_t>("/grid/leaves/level", {10}, 0, level);
    h.write_rows<double, double>("/grid/leaves/density", {10}, 0, good.density);
  }
  const io::File h = io::File::open_read(path("level.h5"));
  EXPECT_NO_THROW(io::read_amr_leaf_rows(h, 0, 7));
  EXPECT_THROW(io::read_amr_leaf_rows(h, 0, 10), core::Error);
  r.leaves_per_level = {4, 3, 2};  // 9 leaves announced, 10 stored
  {
    io::File g = io::File::create(path("count.h5"), comm);
    write(g, r, leaves(10), io::Precision::f32, false, comm);
  }
  EXPECT_THROW(io::read_amr_refinement(io::File::open_read(path("count.h5"))), core::Error);
}

// With io threads each piece's keys are made while the piece before is written: every piece comes out
// whole and in order (two and a half pieces), on one thread and on two, and a failure while making the
// next piece's keys is the write's.
TEST_F(AmrFile, WritesEveryPieceWhileTheNextKeysAreMade) {
  const mpi::Comm comm;
  const std::size_t n = 2 * io::kLeafPiece + io::kLeafPiece / 2;
  const auto rows = leaves(n);
  model::AmrRefinement r{2, 8, 8, 1, {n, 0, 0}};
  for (const int threads : {1, 2}) {
    io::set_io_threads(threads);
    std::size_t made = 0;
    const io::NextKeys next = [&](std::span<std::uint64_t> out) {
      for (std::uint64_t& k : out) k = rows.key[made++];
    };
    {
      io::File f = io::File::create(path("pieces.h5"), comm);
      io::write_amr_grid(f, meta(), r, std::span<const double>(rows.density), next, io::Precision::f64, false, comm);
    }
    EXPECT_EQ(made, n);
    const io::File f = io::File::open_read(path("pieces.h5"));
    const auto back = io::read_amr_leaves(f, 0, ~std::uint64_t{0});
    EXPECT_EQ(back.key, rows.key) << threads << " io threads";
    EXPECT_EQ(back.density, rows.density) << threads << " io threads";

    std::size_t calls = 0;
    const io::NextKeys failing = [&](std::span<std::uint64_t> out) {
      if (++calls == 2) throw core::Error::internal("the second piece's keys");
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = rows.key[i];
    };
    io::File g = io::File::create(path("failing.h5"), comm);
    EXPECT_THROW(io::write_amr_grid(g, meta(), r, std::span<const double>(rows.density), failing, io::Precision::f64,
                                    false, comm),
                 core::Error);
  }
  io::set_io_threads(1);
}

}  // namespace
}  // namespace phew
