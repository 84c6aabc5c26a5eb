// Round trips of the products of deblend, voters and mergertree (peaks.h5, voters.h5, tree.h5) and of
// what deblend reads of clumps.h5: written by lib/io, read back by lib/io, with the stored types.
#include <phew/core/error.hpp>
#include <phew/io/cells_file.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/io/peaks_file.hpp>
#include <phew/io/tree_file.hpp>
#include <phew/io/voters_file.hpp>
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace phew {
namespace {

namespace fs = std::filesystem;

using PhaseSpaceProducts = test::TempDir;

grid::GridMeta a_grid() {
  grid::GridMeta g;
  g.geometry = grid::GridGeometry{{4, 5, 6}, {1, 2, 3}, {8, 10, 12}, false};
  g.assignment = "CIC";
  g.total_mass = 7;
  g.mean_density = 0.5;
  g.n_particles = 99;
  g.density_units = "(1e10 Msun/h)/(kpc/h)^3";
  g.length_units = "kpc/h";
  g.mass_units = "1e10 Msun/h";
  g.time = 0.5;
  g.redshift = 1;
  g.omega_m = 0.3;
  return g;
}

TEST_F(PhaseSpaceProducts, PeaksRoundTrip) {
  const mpi::Comm comm;
  model::Peaks p;
  p.grid = a_grid();
  p.meta = {0.5, 1.0, 43.0, 11, "km/s (as stored in the snapshot)"};
  p.peaks = {{3, 3, {1, 2, 3}, {1.5, 2.5, 3.5}, {-1, 0, 1}, 40, 4.5, false},
             {11, 3, {1.1, 2.1, 3.1}, {1.5, 2.5, 3.5}, {9, 8, 7}, 20, 2.25, true}};
  p.particles = {{5, 3}, {6, 11}, {8, 3}};
  {
    io::File f = io::File::create(path("peaks.h5"), comm);
    io::write_peaks(f, p, comm);
  }
  const io::File f = io::File::open_read(path("peaks.h5"));
  const io::PeaksHeader h = io::read_peaks_header(f);
  EXPECT_EQ(h.grid.geometry.shape, p.grid.geometry.shape);
  EXPECT_EQ(h.grid.length_units, "kpc/h");
  EXPECT_EQ(h.meta.time, 0.5);
  EXPECT_EQ(h.meta.redshift, 1.0);
  EXPECT_EQ(h.meta.gravitational_constant, 43.0);
  EXPECT_EQ(h.meta.first_new_id, 11);
  EXPECT_EQ(h.meta.velocity_units, p.meta.velocity_units);
  EXPECT_EQ(h.n_peaks, 2u);
  EXPECT_EQ(h.n_particles, 3u);
  const auto rows = io::read_peak_rows(f);
  ASSERT_EQ(rows.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(rows[i].id, p.peaks[i].id);
    EXPECT_EQ(rows[i].parent_clump, p.peaks[i].parent_clump);
    EXPECT_EQ(rows[i].position, p.peaks[i].position);
    EXPECT_EQ(rows[i].densest_cell_position, p.peaks[i].densest_cell_position);
    EXPECT_EQ(rows[i].velocity, p.peaks[i].velocity);
    EXPECT_EQ(rows[i].n_particles, p.peaks[i].n_particles);
    EXPECT_EQ(rows[i].mass, p.peaks[i].mass);
    EXPECT_EQ(rows[i].from_deblending, p.peaks[i].from_deblending);
  }
  const auto members = io::read_peak_members(f);
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[1].id, 6u);
  EXPECT_EQ(members[1].peak, 11);
  // the stored types and units (docs/formats.md)
  EXPECT_EQ(f.dataset_info("/peaks/from_deblending").describe(), "int8 [2]");
  EXPECT_EQ(f.dataset_info("/peaks/position").describe(), "float64 [2,3]");
  EXPECT_EQ(f.dataset_info("/particles/id").describe(), "uint64 [3]");
  EXPECT_EQ(f.read_attribute_string("/peaks/mass", "units"), "1e10 Msun/h");
  EXPECT_FALSE(f.has_attribute("/peaks/n_particles", "units"));
}

TEST_F(PhaseSpaceProducts, VotersRoundTrip) {
  const mpi::Comm comm;
  model::Voters v;
  v.grid = a_grid();
  v.meta = {"snapshot Potential and Acceleration", 2, 0.75, false, "(km/s)^2, physical", "km/s^2 / (kpc/h), physical"};
  v.voters = {{1, 40, -3.0, 0}, {1, 41, -2.5, 1}, {2, 7, -1.0, 0}};
  v.peaks = {{1, 9.5, {0.1, 0.2, 0.3}, 2, 12}, {2, 4.0, {0, 0, -1}, 1, 1}};
  {
    io::File f = io::File::create(path("voters.h5"), comm);
    io::write_voters(f, v, comm);
  }
  const io::File f = io::File::open_read(path("voters.h5"));
  const io::VotersHeader h = io::read_voters_header(f);
  EXPECT_EQ(h.meta.potential_source, v.meta.potential_source);
  EXPECT_EQ(h.meta.n_voters_requested, 2);
  EXPECT_EQ(h.meta.time, 0.75);
  EXPECT_FALSE(h.meta.boosted);
  EXPECT_EQ(h.meta.energy_units, v.meta.energy_units);
  EXPECT_EQ(h.meta.acceleration_units, v.meta.acceleration_units);
  EXPECT_EQ(h.n_voters, 3u);
  EXPECT_EQ(h.n_peaks, 2u);
  const auto voters = io::read_voter_rows(f);
  ASSERT_EQ(voters.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(voters[i].peak, v.voters[i].peak);
    EXPECT_EQ(voters[i].particle_id, v.voters[i].particle_id);
    EXPECT_EQ(voters[i].binding_energy, v.voters[i].binding_energy);
    EXPECT_EQ(voters[i].rank, v.voters[i].rank);  // not stored: the row order
  }
  const auto peaks = io::read_voter_peaks(f);
  ASSERT_EQ(peaks.size(), 2u);
  EXPECT_EQ(peaks[0].search_radius, 9.5);
  EXPECT_EQ(peaks[0].a0, (std::array<double, 3>{0.1, 0.2, 0.3}));
  EXPECT_EQ(peaks[0].n_candidates, 12);
  EXPECT_EQ(peaks[1].n_voters, 1);
  EXPECT_EQ(f.read_attribute_string("/peaks/search_radius", "units"), "kpc/h");
  EXPECT_EQ(f.dataset_info("/voters/particle_id").describe(), "uint64 [3]");
}

TEST_F(PhaseSpaceProducts, TreeRoundTripAndACorruptFileIsAnInputError) {
  const mpi::Comm comm;
  model::TreeRows t;
  t.peaks = {{0, 1, 1, -1, 0, 0, 0, 1, 4, false, false, 0, false, false, 1.0, 2.0, {1, 2, 3}, {4, 5, 6}},
             {1, 4, 1, 0, 1, 1, 17, -1, 0, false, true, 1, true, true, 2.0, 2.5, {1, 2, 4}, {4, 5, 7}}};
  t.snapshots = {{0, 1.0}, {1, 2.0}};
  t.state = {2, 15, 10, 10, 1000, {100, 100, 50}, "kpc", 1, 2.0};
  t.last_peaks = {{4, 1, {1, 2, 4}, {4, 5, 7}, 2.5}};
  t.last_members = {{3, 4}, {9, 4}};
  t.last_voters = {{4, 9}, {4, 3}};
  t.graveyard = {{12, 0, 2, 0}};
  t.artefacts = {{4}};
  {
    io::File f = io::File::create(path("tree.h5"), comm);
    io::write_tree(f, t, comm);
  }
  const model::TreeRows b = io::read_tree(path("tree.h5"));
  ASSERT_EQ(b.peaks.size(), 2u);
  const model::TreePeakRow &x = t.peaks[1], &y = b.peaks[1];
  EXPECT_EQ(std::tie(x.snapshot, x.id, x.lineage, x.main_progenitor_snapshot, x.main_progenitor_id, x.n_progenitors,
                     x.progenitor_votes, x.descendant_snapshot, x.descendant_id, x.gap),
            std::tie(y.snapshot, y.id, y.lineage, y.main_progenitor_snapshot, y.main_progenitor_id, y.n_progenitors,
                     y.progenitor_votes, y.descendant_snapshot, y.descendant_id, y.gap));
  EXPECT_EQ(std::tie(x.merged, x.revived_from_graveyard, x.artefact, x.from_deblending),
            std::tie(y.merged, y.revived_from_graveyard, y.artefact, y.from_deblending));
  EXPECT_EQ(std::tie(x.time, x.mass, x.position, x.velocity), std::tie(y.time, y.mass, y.position, y.velocity));
  ASSERT_EQ(b.snapshots.size(), 2u);
  EXPECT_EQ(b.snapshots[1].time, 2.0);
  EXPECT_EQ(b.state.next_lineage, 2);
  EXPECT_EQ(b.state.min_votes, 15);
  EXPECT_EQ(b.state.box_size, t.state.box_size);
  EXPECT_EQ(b.state.length_units, "kpc");
  EXPECT_EQ(b.state.last_snapshot, 1);
  ASSERT_EQ(b.last_peaks.size(), 1u);
  EXPECT_EQ(b.last_peaks[0].from_deblending, 1);
  EXPECT_EQ(b.last_peaks[0].velocity, t.last_peaks[0].velocity);
  ASSERT_EQ(b.last_members.size(), 2u);
  EXPECT_EQ(b.last_members[1].particle, 9u);
  ASSERT_EQ(b.last_voters.size(), 2u);
  EXPECT_EQ(b.last_voters[1].particle, 3u);
  ASSERT_EQ(b.graveyard.size(), 1u);
  EXPECT_EQ(b.graveyard[0].peak_id, 2);
  ASSERT_EQ(b.artefacts.size(), 1u);
  {
    const io::File f = io::File::open_read(path("tree.h5"));
    EXPECT_EQ(f.dataset_info("/peaks/merged").describe(), "int8 [2]");
    EXPECT_EQ(f.dataset_info("/state/peak_from_deblending").describe(), "int64 [1]");  // as it always was
    EXPECT_EQ(f.dataset_info("/state/peak_position").describe(), "float64 [1,3]");
  }
  // an empty state (no graveyard) writes empty tables that read back
  t.graveyard.clear();
  t.artefacts.clear();
  {
    io::File f = io::File::create(path("tree2.h5"), comm);
    io::write_tree(f, t, comm);
  }
  EXPECT_TRUE(io::read_tree(path("tree2.h5")).graveyard.empty());
  {
    std::ifstream in(path("tree.h5"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(path("cut.h5"), std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  }
  for (const char* bad : {"cut.h5", "peaks-not-a-tree.h5", "missing.h5"}) {
    if (std::string(bad) == "peaks-not-a-tree.h5") {
      io::File f = io::File::create(path(bad), comm);
      f.create_group("/peaks");
    }
    try {
      io::read_tree(path(bad));
      FAIL() << bad;
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::input) << bad;
      EXPECT_NE(std::string(e.what()).find("not a readable merger-tree state"), std::string::npos) << e.what();
    }
  }
}

TEST_F(PhaseSpaceProducts, ClumpsReaderReadsLabelPlanesAndTheCataloguesPositions) {
  const mpi::Comm comm;
  const grid::GridMeta grid = a_grid();
  {
    // what phew-merge writes, as far as deblend reads it
    io::File f = io::File::create(path("clumps.h5"), comm);
    f.create_group("/grid");
    io::write_grid_attributes(f, grid, "/grid");
    // every cell a test cell, labelled i % 7 (0: discarded as noise)
    std::vector<std::int64_t> cells(4 * 5 * 6), labels(cells.size());
    for (std::size_t i = 0; i < labels.size(); ++i) {
      cells[i] = static_cast<std::int64_t>(i);
      labels[i] = static_cast<std::int64_t>(i % 7);
    }
    io::write_cell_index(f, grid.geometry, cells, comm);
    io::write_cell_labels(f, "clump", labels, "", comm);
    f.create_group("/peaks");
    f.write<std::int64_t>("/peaks/id", std::vector<std::int64_t>{1, 2, 3, 4, 5, 6});
    f.create_group("/clumps");
    f.write<std::int64_t>("/clumps/id", std::vector<std::int64_t>{2, 5, 6});
    f.write<double>("/clumps/peak_position", {3, 3}, std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9});
    f.create_group("/halos");
    f.write<std::int64_t>("/halos/id", std::vector<std::int64_t>{2});
  }
  const io::File f = io::File::open_read(path("clumps.h5"));
  const io::ClumpsHeader header = io::read_clumps_header(f);
  EXPECT_EQ(header.grid.geometry.shape, grid.geometry.shape);
  EXPECT_EQ(header.n_peaks, 6u);
  EXPECT_EQ(header.n_clumps, 3u);
  EXPECT_EQ(header.n_halos, 1u);
  const grid::CellLabels planes = io::read_clump_cells(f, 30, 90);  // planes 1 and 2
  ASSERT_EQ(planes.size(), 60u);
  EXPECT_EQ(planes.cell[0], 30);
  EXPECT_EQ(planes.label[0], 30 % 7);
  EXPECT_TRUE(io::read_clump_cells(f, 60, 60).cell.empty());
  const auto pos = io::read_clump_peak_positions(f, {1, 5, 6});
  ASSERT_EQ(pos.size(), 2u);  // 1 is not in the catalogue
  EXPECT_EQ(pos.at(5), (std::array<double, 3>{4, 5, 6}));
  EXPECT_EQ(pos.at(6), (std::array<double, 3>{7, 8, 9}));
}

}  // namespace
}  // namespace phew
