// The Gadget HDF5 writer: what it writes, phew's own snapshot reader reads back exactly (float64 as
// written, float32 as rounded, a coordinate that rounds up to BoxSize as 0), with the header's box,
// time, cosmology, mass table or per-particle masses, potential and acceleration.
#include <phew/io/h5.hpp>
#include <phew/snapshot/gadget_writer.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/snapshot/open.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include <filesystem>
#include <random>

#include <unistd.h>

namespace phew::particles {
namespace {

using namespace phew::snapshot;  // the formats under test

namespace fs = std::filesystem;

struct Data {
  std::vector<double> position, velocity, mass, potential, acceleration;
  std::vector<std::uint64_t> id;
};

Data make(std::size_t n, double box, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Data d;
  for (std::size_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) {
      d.position.push_back(box * u(rng));
      d.velocity.push_back(100 * (u(rng) - 0.5));
      d.acceleration.push_back(u(rng) - 0.5);
    }
    d.mass.push_back(0.5 + u(rng));
    d.potential.push_back(-1000 * u(rng));
    d.id.push_back(7 * i + 3);
  }
  d.position[0] = std::nextafter(box, 0.0);  // rounds up to BoxSize in float32
  return d;
}

TEST(GadgetWriter, ReadsBackThroughTheSnapshotReader) {
  const fs::path dir = fs::temp_directory_path() / ("phew-test-gadget-writer-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const mpi::Comm comm;
  for (bool f64 : {false, true}) {
    for (bool per_particle : {false, true}) {
      const std::string path = (dir / "snap.hdf5").string();
      const Data d = make(300, 50.0, 9);
      GadgetHeader h;
      h.type = 1;
      h.particle_mass = per_particle ? 0.0 : 0.75;
      h.box_size = 50.0;
      h.time = 0.5;
      h.redshift = 1.0;
      h.omega0 = 0.3;
      h.omega_lambda = 0.7;
      h.hubble_param = 0.7;
      h.double_precision = f64;
      h.potential = h.acceleration = true;
      h.length_units = "kpc/h";
      h.velocity_units = "km/s";
      h.mass_units = "1e10 Msun/h";
      h.potential_units = "(km/s)^2";
      h.acceleration_units = "(km/s)^2/kpc/h";
      GadgetParticles p{
          d.position,  d.velocity,     d.id, per_particle ? std::span<const double>(d.mass) : std::span<const double>(),
          d.potential, d.acceleration, {}};
      {
        io::File f = io::File::create(path, comm);
        write_gadget_hdf5(f, h, p, comm);
      }
      const auto reader = open_snapshot({path});
      const SnapshotInfo& info = reader->info();
      EXPECT_EQ(info.format, "gadget-hdf5");
      EXPECT_EQ(info.total(1), 300u);
      EXPECT_TRUE(info.periodic);
      EXPECT_EQ(info.box_size[2], 50.0);
      EXPECT_EQ(info.time, 0.5);
      EXPECT_EQ(info.mass_table[1], h.particle_mass);
      ASSERT_TRUE(info.cosmology);
      EXPECT_EQ(info.cosmology->hubble_param, 0.7);
      EXPECT_TRUE(info.has_potential);
      EXPECT_TRUE(info.has_acceleration);
      const ParticleSet back = read_particles(*reader, {1}, 0, 300, FieldSelection{true, true, true, true});
      auto stored = [&](double x) { return f64 ? x : static_cast<double>(static_cast<float>(x)); };
      for (std::size_t i = 0; i < 300; ++i) {
        EXPECT_EQ(back.id[i], d.id[i]);
        EXPECT_EQ(back.mass[i], per_particle ? stored(d.mass[i]) : 0.75);
        EXPECT_EQ(back.potential[i], stored(d.potential[i]));
        for (std::size_t k = 0; k < 3; ++k) {
          const double x = i == 0 && k == 0 && !f64 ? 0.0 : stored(d.position[3 * i + k]);
          ASSERT_EQ(back.position[3 * i + k], x) << i << " " << k;
          // The file holds Gadget's u (a cosmological run at a = 0.5); the reader gives v_pec = u sqrt(a).
          ASSERT_EQ(back.velocity[3 * i + k], stored(d.velocity[3 * i + k]) * std::sqrt(0.5));
          ASSERT_EQ(back.acceleration[3 * i + k], stored(d.acceleration[3 * i + k]));
        }
      }
      const io::File f = io::File::open_read(path);
      EXPECT_EQ(f.dataset_info("/PartType1/Coordinates").describe(), f64 ? "float64 [300,3]" : "float32 [300,3]");
      EXPECT_EQ(f.has("/PartType1/Masses"), per_particle);
      EXPECT_EQ(f.read_attribute_string("/PartType1/Coordinates", "units"), "kpc/h");
    }
  }
  fs::remove_all(dir);
}

TEST(GadgetWriter, EachTypeInItsGroupAndReadBackWithItsType) {
  // Particles of types 1, 4 and 0 in turn: each written to its own /PartTypeN in the order given, read
  // back type-major with each particle's type (ParticleSet::type).
  const fs::path dir = fs::temp_directory_path() / ("phew-test-gadget-types-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const mpi::Comm comm;
  const std::string path = (dir / "snap.hdf5").string();
  const Data d = make(90, 50.0, 4);
  std::vector<std::uint8_t> type(90);
  for (std::size_t i = 0; i < 90; ++i) type[i] = std::array<std::uint8_t, 3>{1, 4, 0}[i % 3];
  GadgetHeader h;
  h.box_size = 50.0;
  h.time = 1;
  h.double_precision = true;
  {
    io::File f = io::File::create(path, comm);
    write_gadget_hdf5(f, h, {d.position, d.velocity, d.id, d.mass, {}, {}, type}, comm);
  }
  const auto reader = open_snapshot({path});
  EXPECT_EQ(reader->info().total(0), 30u);
  EXPECT_EQ(reader->info().total(1), 30u);
  EXPECT_EQ(reader->info().total(4), 30u);
  FieldSelection fields;
  fields.ids = fields.types = true;
  const ParticleSet back = read_particles(*reader, {0, 1, 4}, 0, 90, fields);
  ASSERT_EQ(back.type.size(), 90u);
  std::size_t k = 0;
  for (const std::uint8_t t : std::array<std::uint8_t, 3>{0, 1, 4})
    for (std::size_t i = 0; i < 90; ++i) {
      if (type[i] != t) continue;
      EXPECT_EQ(back.type[k], t);
      EXPECT_EQ(back.id[k], d.id[i]);
      EXPECT_EQ(back.mass[k], d.mass[i]);
      EXPECT_EQ(back.position[3 * k + 2], d.position[3 * i + 2]);
      ++k;
    }
  EXPECT_EQ(k, 90u);
  const io::File f = io::File::open_read(path);
  EXPECT_FALSE(f.has("/PartType2"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace phew::particles
