// Reading the real Gadget-4 HDF5 snapshots in ../shared/data and our own particle file.
#include <phew/grid/geometry.hpp>
#include <phew/core/error.hpp>
#include <phew/io/h5.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/snapshot/open.hpp>

#include <gtest/gtest.h>
#include <bit>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>

namespace phew::particles {
namespace {

using namespace phew::snapshot;  // the formats under test

std::string shared(const std::string& rel) {
  const char* root = std::getenv("PHEW_SHARED_DATA");
  return std::string(root ? root : "../shared/data") + "/" + rel;
}

const std::string kLcdm = "gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5";

TEST(Gadget4, HeaderCosmologyAndUnits) {
  const auto r = open_snapshot({shared(kLcdm)});
  const SnapshotInfo& info = r->info();
  EXPECT_EQ(info.format, "gadget-hdf5");
  EXPECT_EQ(info.num_types(), 2);
  EXPECT_EQ(info.total(0), 32768u);
  EXPECT_EQ(info.total(1), 32768u);
  EXPECT_TRUE(info.periodic);
  EXPECT_EQ(info.box_size[0], 50000.0);
  EXPECT_NEAR(info.redshift, 0.0, 1e-6);
  ASSERT_TRUE(info.cosmology);
  EXPECT_DOUBLE_EQ(info.cosmology->omega_m, 0.3);
  EXPECT_DOUBLE_EQ(info.cosmology->hubble_param, 0.7);
  EXPECT_TRUE(info.comoving);
  EXPECT_TRUE(info.units.known());
  EXPECT_EQ(info.units.length_name(), "kpc/h");
  EXPECT_EQ(info.units.mass_name(), "1e10 Msun/h");
  // Gadget-2 used G = 6.672e-8 (43007.1); phew uses CODATA 2018, 6.6743e-8: 0.03% apart.
  EXPECT_NEAR(info.units.gravitational_constant(), 43007.1, 0.001 * 43007.1);
  EXPECT_FALSE(info.has_potential);
}

TEST(Gadget4, MeanDensityOfAllTypesIsOmegaMatter) {
  const auto r = open_snapshot({shared(kLcdm)});
  const SnapshotInfo& info = r->info();
  const ParticleSet all = read_particles(*r, {0, 1}, 0, info.total({0, 1}), FieldSelection{});
  const double mass = std::accumulate(all.mass.begin(), all.mass.end(), 0.0);
  const double mean = mass / std::pow(50000.0, 3);
  EXPECT_NEAR(mean / info.cosmology->critical_density(1.0, info.units), 0.300, 0.002);
  const ParticleSet dm = read_particles(*r, {1}, 0, info.total(1), FieldSelection{});
  EXPECT_NEAR(dm.mass[0], 27.528, 1e-5);  // from the mass table
}

TEST(Gadget4, PositionsInBoxIdsAndRangesAgree) {
  const auto r = open_snapshot({shared(kLcdm)});
  FieldSelection f;
  f.ids = f.velocities = true;
  const ParticleSet all = read_particles(*r, {1}, 0, 32768, f);
  for (double x : all.position) {
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 50000.0);
  }
  EXPECT_EQ(*std::min_element(all.id.begin(), all.id.end()), 32769u);
  EXPECT_EQ(*std::max_element(all.id.begin(), all.id.end()), 65536u);
  const ParticleSet part = read_particles(*r, {1}, 1000, 10, f);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(part.id[i], all.id[1000 + i]);
  // Across the type boundary of the global numbering: types 0 then 1.
  const ParticleSet both = read_particles(*r, {0, 1}, 32760, 16, f);
  EXPECT_EQ(both.id[8], all.id[0]);
}

TEST(Gadget4, EveryOutputOpensWithItsRedshift) {
  const double z[] = {5.04, 3.00, 2.02, 1.00, 0.00};
  for (int i = 0; i < 5; ++i) {
    const auto r = open_snapshot({shared("gadget4-lcdm-gas-L50-N32/snapshot_00" + std::to_string(i) + ".hdf5")});
    EXPECT_NEAR(r->info().redshift, z[i], 0.01);
    EXPECT_NEAR(r->info().time, 1.0 / (1.0 + r->info().redshift), 1e-3);
  }
}

TEST(Snapshot, StemFindsTheFile) {
  const std::string stem = shared("gadget4-lcdm-gas-L50-N32/snapshot_004");
  EXPECT_EQ(open_snapshot({stem})->info().total(1), 32768u);
}

TEST(Snapshot, UnknownFormatAndMissingFile) {
  try {
    open_snapshot({shared("README.md")});
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::input);
  }
  try {
    open_snapshot({shared("nope.hdf5")});
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::io);
  }
}

TEST(Snapshot, ParsesTypes) {
  EXPECT_EQ(parse_types("1", 6), std::vector<int>{1});
  EXPECT_EQ(parse_types("4,0,4", 6), (std::vector<int>{0, 4}));
  EXPECT_EQ(parse_types("all", 3), (std::vector<int>{0, 1, 2}));
  EXPECT_THROW(parse_types("7", 6), core::Error);
  EXPECT_THROW(parse_types("1,x", 6), core::Error);
}

// SWIFT writes peculiar velocities (a dx/dt, a-scale exponent 0), and phew's velocities are peculiar
// whatever the reader: SWIFT's come unchanged, with or without the attribute.
TEST(Swift, PeculiarVelocitiesStayPeculiar) {
  const std::string path = (std::filesystem::temp_directory_path() / "phew-test-swift.hdf5").string();
  {
    const mpi::Comm comm;
    io::File f = io::File::create(path, comm);
    for (const char* g : {"/Header", "/Units", "/Cosmology", "/PartType1"}) f.create_group(g);
    f.write_attribute<double>("/Header", "BoxSize", std::vector<double>{100, 100, 100});
    f.write_attribute<double>("/Header", "MassTable", std::vector<double>{0, 0});
    f.write_attribute<std::uint64_t>("/Header", "NumPart_ThisFile", std::vector<std::uint64_t>{0, 2});
    f.write_attribute<std::uint64_t>("/Header", "NumPart_Total", std::vector<std::uint64_t>{0, 2});
    f.write_attribute<double>("/Header", "Time", 0.25);
    f.write_attribute<double>("/Header", "Redshift", 3.0);
    f.write_attribute<double>("/Units", "Unit length in cgs (U_L)", 3.08567758e24);
    f.write_attribute<double>("/Units", "Unit mass in cgs (U_M)", 1.98841e43);
    f.write_attribute<double>("/Units", "Unit time in cgs (U_t)", 3.08567758e19);
    f.write_attribute<double>("/Cosmology", "Omega_m", 0.3);
    f.write_attribute<double>("/Cosmology", "Omega_lambda", 0.7);
    f.write_attribute<double>("/Cosmology", "h", 0.7);
    f.write_attribute<double>("/Cosmology", "Cosmological run", 1.0);
    f.write_attribute<double>("/Cosmology", "Scale-factor", 0.25);
    f.write<double>("/PartType1/Coordinates", {2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
    f.write<double>("/PartType1/Velocities", {2, 3}, std::vector<double>{100, 0, -50, 10, 20, 30});
    f.write<double>("/PartType1/Masses", std::vector<double>{1.0, 1.0});
    f.write<std::uint64_t>("/PartType1/ParticleIDs", std::vector<std::uint64_t>{1, 2});
  }
  const auto r = open_snapshot({path});
  EXPECT_EQ(r->info().format, "swift-hdf5");
  EXPECT_TRUE(r->info().comoving);
  FieldSelection f;
  f.velocities = true;
  const ParticleSet p = read_particles(*r, {1}, 0, 2, f);
  EXPECT_EQ(p.velocity, (std::vector<double>{100, 0, -50, 10, 20, 30}));
  std::filesystem::remove(path);
}

// Gadget-4 says how its velocities scale (a_scaling 0.5 on Velocities: v_pec = stored a^0.5).
TEST(Gadget4, VelocitiesArePeculiar) {
  const std::string path = shared("gadget4-lcdm-gas-L50-N32/snapshot_002.hdf5");
  const auto r = open_snapshot({path});
  FieldSelection f;
  f.velocities = f.ids = true;
  const ParticleSet p = read_particles(*r, {1}, 0, 100, f);
  const io::File raw = io::File::open_read(path);
  EXPECT_EQ(raw.read_attribute<double>("/PartType1/Velocities", "a_scaling").at(0), 0.5);
  const std::vector<double> u = raw.read_rows<double>("/PartType1/Velocities", 0, 100);
  const double a = r->info().time;
  EXPECT_NEAR(a, 0.331, 1e-3);
  for (std::size_t i = 0; i < u.size(); ++i) ASSERT_EQ(p.velocity[i], u[i] * std::sqrt(a)) << i;
}

TEST(ParticleFile, ReadsOurOwnFormat) {
  const std::string path = (std::filesystem::temp_directory_path() / "phew-test-particles.h5").string();
  {
    const mpi::Comm comm;
    io::File f = io::File::create(path, comm);
    f.create_group("/particles");
    f.write<double>("/particles/position", {2, 3}, std::vector<double>{1, 2, 3, 11, 5, 6});
    f.write<double>("/particles/velocity", {2, 3}, std::vector<double>{0, 0, 0, 1, 1, 1});
    f.write<double>("/particles/mass", std::vector<double>{1.0, 2.0});
    f.write<std::uint64_t>("/particles/id", std::vector<std::uint64_t>{7, 9});
    f.write_attribute<double>("/particles", "box_size", std::vector<double>{10, 10, 10});
    f.write_attribute<std::int8_t>("/particles", "periodic", 1);
  }
  const auto r = open_snapshot({path});
  EXPECT_EQ(r->info().format, "phew-particles");
  FieldSelection f;
  f.ids = true;
  const ParticleSet p = read_particles(*r, {0}, 0, 2, f);
  EXPECT_EQ(p.id, (std::vector<std::uint64_t>{7, 9}));
  EXPECT_DOUBLE_EQ(p.position[3], 1.0);  // 11 wrapped into the periodic box of 10
  std::filesystem::remove(path);
}

// A periodic box's positions come wrapped into it, bit for bit as grid::wrap_position gives them,
// whichever coordinate lies outside (signed zeros, the box's edge either side by an ulp, a box length
// out); a position both far out and not finite is named not finite, as before the wrap.
TEST(ParticleFile, WrapsPositionsIntoThePeriodicBox) {
  const std::string path = (std::filesystem::temp_directory_path() / "phew-test-wrap.h5").string();
  const double box = 10;
  const std::vector<double> values{3.5,
                                   -0.0,
                                   0.0,
                                   box,
                                   std::nextafter(box, 0.0),
                                   std::nextafter(0.0, -1.0),
                                   -2.5,
                                   12.5,
                                   1e-300,
                                   std::nextafter(box, 20.0),
                                   9.999999,
                                   0.25};
  std::vector<double> position;
  for (const double v : values)  // each value alone on each axis, the other two inside
    position.insert(position.end(), {v, 3.5, 3.5, 3.5, v, 3.5, 3.5, 3.5, v});
  const auto write = [&](const std::vector<double>& pos) {
    const mpi::Comm comm;
    io::File f = io::File::create(path, comm);
    f.create_group("/particles");
    f.write<double>("/particles/position", {pos.size() / 3, 3}, pos);
    f.write<double>("/particles/velocity", {pos.size() / 3, 3}, std::vector<double>(pos.size(), 0.0));
    f.write<double>("/particles/mass", std::vector<double>(pos.size() / 3, 1.0));
    std::vector<std::uint64_t> ids(pos.size() / 3);
    std::iota(ids.begin(), ids.end(), 1);
    f.write<std::uint64_t>("/particles/id", ids);
    f.write_attribute<double>("/particles", "box_size", std::vector<double>{box, box, box});
    f.write_attribute<std::int8_t>("/particles", "periodic", 1);
  };
  write(position);
  {
    const auto r = open_snapshot({path});
    const ParticleSet p = read_particles(*r, {0}, 0, position.size() / 3, FieldSelection{});
    ASSERT_EQ(p.position.size(), position.size());
    for (std::size_t i = 0; i < position.size(); ++i)
      ASSERT_EQ(std::bit_cast<std::uint64_t>(p.position[i]),
                std::bit_cast<std::uint64_t>(grid::wrap_position(position[i], box)))
          << "coordinate " << i << " = " << position[i];
  }
  position.insert(position.end(), {-25.0, NAN, 1.0});
  write(position);
  {
    const auto r = open_snapshot({path});
    try {
      read_particles(*r, {0}, 0, position.size() / 3, FieldSelection{});
      ADD_FAILURE() << "a non-finite position was read";
    } catch (const core::Error& e) {
      EXPECT_NE(std::string(e.what()).find("non-finite position"), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace phew::particles
