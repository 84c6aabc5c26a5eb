// The products of lib/io written and read back: io::Table itself, patches.h5 and clumps.h5.
#include <phew/core/error.hpp>
#include <phew/io/cells_file.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/io/patches_file.hpp>
#include <phew/io/table.hpp>
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace phew {
namespace {

namespace fs = std::filesystem;

class Products : public test::TempDir {
 protected:
  const mpi::Comm comm;
};

grid::GridMeta small_grid() {
  grid::GridMeta g;
  g.geometry.shape = {4, 3, 2};
  g.geometry.extent = {8, 6, 4};
  g.geometry.periodic = true;
  g.assignment = "CIC";
  g.total_mass = 24;
  g.mean_density = 0.125;
  g.n_particles = 24;
  g.particle_mass = 1;
  g.density_units = "(1e10 Msun/h)/(kpc/h)^3";
  g.length_units = "kpc/h";
  g.mass_units = "1e10 Msun/h";
  g.critical_density = 0.01;
  return g;
}

struct Row {
  std::int64_t id = 0;
  std::uint64_t big = 0;
  double x = 0;
  bool flag = false;
  std::array<double, 3> v{};
  double extra = 0;
};

io::Table<Row> row_table() {
  // clang-format off: one column and its constraints per line
  return io::Table<Row>()
      .column("id", &Row::id)
      .column("big", &Row::big)
      .column("x", &Row::x, io::Unit::length, "a length")
      .column("flag", &Row::flag)
      .column("v", &Row::v, io::Unit::velocity)
      .column("extra", &Row::extra, io::Unit::none, "", true);
  // clang-format on
}

TEST_F(Products, TableRoundTripsEveryColumnKind) {
  const std::vector<Row> rows{{1, 1ull << 60, 0.5, true, {1, 2, 3}, 9}, {-2, 3, -1e300, false, {4, 5, 6}, 8}};
  io::UnitNames units;
  units.length = "kpc";
  units.velocity = "km/s";
  {
    io::File f = io::File::create(path("t.h5"), comm);
    row_table().write(f, "/rows", rows, units, comm, {"extra"});
    row_table().write(f, "/lean", rows, units, comm);
  }
  const io::File f = io::File::open_read(path("t.h5"));
  const auto back = row_table().read(f, "/rows");
  ASSERT_EQ(back.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].id, rows[i].id);
    EXPECT_EQ(back[i].big, rows[i].big);
    EXPECT_EQ(back[i].x, rows[i].x);
    EXPECT_EQ(back[i].flag, rows[i].flag);
    EXPECT_EQ(back[i].v, rows[i].v);
    EXPECT_EQ(back[i].extra, rows[i].extra);
  }
  EXPECT_EQ(f.dataset_info("/rows/flag").describe(), "int8 [2]");
  EXPECT_EQ(f.dataset_info("/rows/v").describe(), "float64 [2,3]");
  EXPECT_EQ(f.read_attribute_string("/rows/x", "units"), "kpc");
  EXPECT_EQ(f.read_attribute_string("/rows/x", "description"), "a length");
  EXPECT_FALSE(f.has_attribute("/rows/id", "units"));
  // An optional column not written reads as its default; a part of the table reads by rows.
  EXPECT_FALSE(f.has("/lean/extra"));
  EXPECT_EQ(row_table().read(f, "/lean")[0].extra, 0.0);
  EXPECT_EQ(row_table().read(f, "/rows", 1, 1)[0].id, -2);
}

TEST_F(Products, TableRefusesColumnsOfDifferentLengths) {
  {
    io::File f = io::File::create(path("bad.h5"), comm);
    f.create_group("/rows");
    for (const char* c : {"id", "big", "flag"})
      f.write<std::int64_t>(std::string("/rows/") + c, std::vector<std::int64_t>{1, 2});
    f.write<double>("/rows/x", std::vector<double>{1, 2});
    f.write<double>("/rows/v", {3, 3}, std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
  const io::File f = io::File::open_read(path("bad.h5"));
  try {
    row_table().read(f, "/rows");
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("/rows/v has 3 rows"), std::string::npos) << e.what();
  }
}

// Every kind of declared constraint refuses a value that breaks it, naming the dataset, the row and the
// value, and passes the values that keep it; the order holds across the chunks of a partial read.
TEST_F(Products, TableChecksEveryDeclaredConstraint) {
  struct R {
    std::int64_t id = 0, ref = 0;
    double m = 0, q = 0;
    std::array<double, 3> x{};
  };
  // clang-format off: one column and its constraints per line
  const auto table = io::Table<R>()
                         .column("id", &R::id)
                         .above(0)
                         .ascending()
                         .column("ref", &R::ref)
                         .refers_to("/other/id", true)
                         .column("m", &R::m)
                         .finite()
                         .at_least(0)
                         .column("q", &R::q)
                         .measured()
                         .at_most(1)
                         .column("x", &R::x)
                         .finite();
  // clang-format on
  const std::vector<R> good{{1, 0, 0.5, std::nan(""), {1, 2, 3}}, {2, 7, 0, 1, {0, 0, 0}}, {5, 9, 3, 0.2, {4, 5, 6}}};
  const auto write = [&](const std::string& name, const std::vector<R>& rows) {
    io::File f = io::File::create(path(name), comm);
    table.write(f, "/t", rows, {}, comm);
    f.create_group("/other");
    f.write<std::int64_t>("/other/id", std::vector<std::int64_t>{7, 9});
  };
  write("good.h5", good);
  {
    const io::File f = io::File::open_read(path("good.h5"));
    EXPECT_EQ(table.read(f, "/t").size(), 3u);
    EXPECT_EQ(table.read(f, "/t", 1, 2)[1].id, 5);
  }
  struct Case {
    std::function<void(R&)> edit;
    std::size_t row;
    std::string message;
  };
  const std::vector<Case> cases{
      {[](R& r) { r.id = 0; }, 0, "/t/id row 0 is 0: too small"},
      {[](R& r) { r.id = 2; }, 2, "/t/id row 2 is 2: out of order after 2"},
      {[](R& r) { r.ref = 8; }, 1, "/t/ref row 1 is 8: not one of /other/id (expected one of /other/id or 0)"},
      {[](R& r) { r.m = std::nan(""); }, 1, "/t/m row 1 is nan: not a number"},
      {[](R& r) { r.m = -1; }, 2, "/t/m row 2 is -1: too small"},
      {[](R& r) { r.m = HUGE_VAL; }, 0, "/t/m row 0 is inf: infinite"},
      {[](R& r) { r.q = 2; }, 1, "/t/q row 1 is 2: too large"},
      {[](R& r) { r.q = -HUGE_VAL; }, 1, "/t/q row 1 is -inf: infinite"},
      {[](R& r) { r.x[2] = std::nan(""); }, 2, "/t/x row 2 is nan: not a number"},
  };
  for (std::size_t k = 0; k < cases.size(); ++k) {
    std::vector<R> rows = good;
    cases[k].edit(rows[cases[k].row]);
    const std::string name = "bad" + std::to_string(k) + ".h5";
    write(name, rows);
    const io::File f = io::File::open_read(path(name));
    try {
      table.read(f, "/t");
      ADD_FAILURE() << "accepted: " << cases[k].message;
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::input);
      EXPECT_NE(std::string(e.what()).find(cases[k].message), std::string::npos) << e.what();
    }
  }
  // The order across chunks: rows [2, 3) after row 1.
  std::vector<R> rows = good;
  rows[2].id = 2;
  write("chunk.h5", rows);
  const io::File f = io::File::open_read(path("chunk.h5"));
  EXPECT_THROW(table.read(f, "/t", 2, 1), core::Error);
  EXPECT_EQ(table.read(f, "/t", 0, 2).size(), 2u);
}

// A floating column stored as integers (a damaged or hand-edited file) is refused, not converted.
TEST_F(Products, TableRefusesAnIntegerDatasetForAFloatingColumn) {
  {
    io::File f = io::File::create(path("int.h5"), comm);
    f.create_group("/rows");
    for (const char* c : {"id", "big", "flag", "x"})
      f.write<std::int64_t>(std::string("/rows/") + c, std::vector<std::int64_t>{1, 2});
    f.write<double>("/rows/v", {2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
  }
  const io::File f = io::File::open_read(path("int.h5"));
  try {
    row_table().read(f, "/rows");
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/rows/x is int64 [2], expected floating point"), std::string::npos)
        << e.what();
  }
}

TEST_F(Products, PatchesRoundTrip) {
  model::Patches p;
  p.grid = small_grid();
  p.meta = {0.5, "4mean", 7, true};
  p.cells = {{3, 17}, {1, 2}};      // grid 4 x 3 x 2: cell 3 in plane 0, cell 17 in plane 2
  p.cell_density = {9.5, 2.0 / 3};  // above the threshold 0.5; not exact in float
  p.peaks = {{1, 3, {1, 2, 3}, 9.5, 5, 2.25}, {2, 17, {4, 5, 1}, 3.5, 2, 1.0}};
  p.saddles = {{1, 2, 0.75, 3, 17}};
  // The densities as the grid stores them: float32 (exact for a float32 grid's) or float64.
  for (const bool float32 : {true, false}) {
    model::Patches q = p;
    q.density_float32 = float32;
    if (float32)
      for (double& d : q.cell_density) d = static_cast<float>(d);
    {
      io::File f = io::File::create(path("d.h5"), comm);
      io::write_patches(f, q, comm);
    }
    const io::File f = io::File::open_read(path("d.h5"));
    EXPECT_EQ(f.dataset_info("/cells/density").size, float32 ? 4u : 8u);
    EXPECT_EQ(io::read_patch_cell_densities(f, 0, 24), q.cell_density);
    EXPECT_EQ(io::read_patch_cell_densities(f, 12, 18), std::vector<double>{q.cell_density[1]});
    EXPECT_TRUE(io::read_patch_cell_densities(f, 6, 12)->empty());
  }
  {
    io::File f = io::File::create(path("patches.h5"), comm);
    io::write_patches(f, p, comm);
  }
  const io::File f = io::File::open_read(path("patches.h5"));
  const model::PatchesHeader h = io::read_patches_header(f);
  EXPECT_EQ(h.n_peaks, 2u);
  EXPECT_EQ(h.n_saddles, 1u);
  EXPECT_EQ(h.meta.threshold, 0.5);
  EXPECT_EQ(h.meta.threshold_text, "4mean");
  EXPECT_EQ(h.meta.n_test_cells, 7u);
  EXPECT_TRUE(h.meta.refined_positions);
  EXPECT_EQ(h.grid.geometry.shape, p.grid.geometry.shape);
  const grid::CellLabels all = io::read_patch_cells(f, 0, 24);
  EXPECT_EQ(all.cell, p.cells.cell);
  EXPECT_EQ(all.label, p.cells.label);
  const grid::CellLabels two = io::read_patch_cells(f, 12, 18);  // plane 2
  EXPECT_EQ(two.cell, (std::vector<std::int64_t>{17}));
  EXPECT_EQ(two.label, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(two.at(17), 2);
  EXPECT_EQ(two.at(16), 0);
  EXPECT_TRUE(io::read_patch_cells(f, 6, 12).cell.empty());
  EXPECT_EQ(f.read<std::int64_t>("/cells/plane_start"), (std::vector<std::int64_t>{0, 1, 1, 2, 2}));
  EXPECT_EQ(f.dataset_info("/cells/peak").size, 1u);  // the smallest type that holds the largest ID
  EXPECT_EQ(f.read_attribute_scalar<std::int64_t>("/", "format_version"), io::kCellsFormatVersion);
  const auto peaks = io::patch_peak_table().read(f, "/peaks");
  ASSERT_EQ(peaks.size(), 2u);
  EXPECT_EQ(peaks[1].position, (std::array<double, 3>{4, 5, 1}));
  EXPECT_EQ(peaks[0].mass, 2.25);
  const auto saddles = io::saddle_table().read(f, "/saddles");
  ASSERT_EQ(saddles.size(), 1u);
  EXPECT_EQ(saddles[0].cell_b, 17);
  EXPECT_EQ(saddles[0].density, 0.75);
  EXPECT_EQ(f.read_attribute_string("/peaks/mass", "units"), "1e10 Msun/h");
  EXPECT_DOUBLE_EQ(f.read_attribute_scalar<double>("/cells", "threshold_over_mean"), 4.0);
  EXPECT_DOUBLE_EQ(f.read_attribute_scalar<double>("/cells", "threshold_over_critical"), 50.0);
}

TEST_F(Products, ClumpsRoundTripWithAndWithoutParticleColumns) {
  for (bool particles : {false, true}) {
    model::Clumps c;
    c.grid = small_grid();
    c.meta.density_threshold = 0.5;
    c.meta.relevance = 2;
    c.meta.saddle_threshold = 3;
    c.meta.saddle_threshold_text = "24mean";
    c.meta.with_particles = particles;
    c.meta.velocity_units = "km/s";
    c.cells = {5, 6};
    c.cell_clump = {1, 0};
    c.cell_halo = {1, 0};
    c.peaks = {{1, 4.0, 0.2, 2, 1}, {2, 1.2, 0.2, 1, 0}};
    model::Clump k;
    k.id = 1;
    k.halo = 1;
    k.parent = 1;
    k.n_cells = 3;
    k.mass = 7;
    k.center_of_mass = {1, 1, 1};
    k.n_particles = 11;
    k.bulk_velocity = {1, -2, 3};
    k.peak_density = 4;
    k.relevance = 20;
    model::Clump sub = k;
    sub.id = 2;
    sub.level = 1;
    c.clumps = {k, sub};
    model::Halo h;
    h.id = 1;
    h.n_clumps = 2;
    h.mass = 7;
    h.particle_mass = 6.5;
    h.peak_density = 4;
    c.halos = {h};
    c.hierarchy = {{2, 1, 1, 2.5}};
    const std::string name = particles ? "with.h5" : "without.h5";
    {
      io::File f = io::File::create(path(name), comm);
      io::write_clumps(f, c, comm);
    }
    const io::File f = io::File::open_read(path(name));
    const io::ClumpsHeader head = io::read_clumps_header(f);
    EXPECT_EQ(head.n_peaks, 2u);
    EXPECT_EQ(head.n_clumps, 2u);
    EXPECT_EQ(head.n_halos, 1u);
    EXPECT_EQ(io::read_clump_cells(f, 0, 24).cell, c.cells);
    EXPECT_EQ(io::read_clump_cells(f, 0, 24).label, c.cell_clump);
    EXPECT_EQ(io::read_halo_cells(f, 0, 24).label, c.cell_halo);
    const auto clumps = io::clump_table().read(f, "/clumps");
    EXPECT_EQ(clumps[0].mass, 7.0);
    EXPECT_EQ(clumps[0].n_particles, particles ? 11 : 0);
    EXPECT_EQ(clumps[0].bulk_velocity[1], particles ? -2.0 : 0.0);
    EXPECT_EQ(f.has("/clumps/bulk_velocity"), particles);
    EXPECT_EQ(io::halo_table().read(f, "/halos")[0].particle_mass, particles ? 6.5 : 0.0);
    EXPECT_EQ(io::merged_peak_table().read(f, "/peaks")[1].clump, 0);
    EXPECT_EQ(io::hierarchy_table().read(f, "/hierarchy")[0].saddle_density, 2.5);
    EXPECT_EQ(f.read_attribute_scalar<double>("/", "saddle_threshold"), 3.0);
  }
}

}  // namespace
}  // namespace phew
