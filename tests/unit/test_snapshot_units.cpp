// A snapshot's units when the file does not give them: --units parsed, kpc/h or Mpc/h inferred from the
// mean density, assumed when nothing fits or nothing tells; and the velocities every
// reader gives are peculiar (item 3).
#include <phew/core/error.hpp>
#include <phew/io/h5.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/snapshot/open.hpp>
#include <phew/particles/snapshot_units.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace phew::particles {
namespace {

using namespace phew::snapshot;  // the formats under test

const Cosmology kLcdm{0.3, 0.7, 0.7};
// Omega_m rho_crit in (1e10 Msun/h)/(Mpc/h)^3: 0.3 x 27.75.
double mean_matter_density_mpc() {
  Units mpc;
  mpc.length_cm *= 1e3;
  return kLcdm.omega_m * kLcdm.critical_density(1.0, mpc);
}

TEST(UnitsInference, MpcBoxIsMpc) {
  EXPECT_NEAR(mean_matter_density_mpc(), 0.3 * 27.75, 0.01);
  const UnitsInference g = infer_units(1.1 * mean_matter_density_mpc(), kLcdm, Units{});
  EXPECT_TRUE(g.fits);
  EXPECT_NEAR(g.ratio, 1.1, 1e-12);
  EXPECT_NEAR(g.kpc_ratio, 1.1e9, 1e-3);
  EXPECT_EQ(g.units.length_name(), "Mpc/h");
  EXPECT_EQ(g.units.mass_name(), "1e10 Msun/h");
  EXPECT_EQ(g.units.velocity_name(), "km/s");
  EXPECT_EQ(g.units.source, UnitsSource::inferred);
  EXPECT_NEAR(g.units.density_ratio, 1.1, 1e-12);
}

TEST(UnitsInference, KpcBoxIsKpc) {
  const UnitsInference g = infer_units(0.6 * mean_matter_density_mpc() * 1e-9, kLcdm, Units{});
  EXPECT_TRUE(g.fits);
  EXPECT_NEAR(g.ratio, 0.6, 1e-12);
  EXPECT_EQ(g.units.length_name(), "kpc/h");
  EXPECT_EQ(g.units.length_cm, Units{}.length_cm);
  EXPECT_EQ(g.units.source, UnitsSource::inferred);
}

TEST(UnitsInference, NeitherFitsWithinAFactorOfTwo) {
  // Halfway between (in the logarithm): 3e4 times too dense in kpc/h, 3e4 too thin in Mpc/h.
  for (double off : {std::sqrt(1e9), 2.5, 0.39}) {
    SCOPED_TRACE(off);
    const UnitsInference g = infer_units(off * mean_matter_density_mpc() * 1e-9, kLcdm, Units{});
    EXPECT_FALSE(g.fits);
    EXPECT_EQ(g.units.source, UnitsSource::assumed);
    EXPECT_EQ(g.units.length_name(), "kpc/h");  // the assumed ones, kept
    EXPECT_NEAR(g.units.density_ratio, off, 1e-9 * off);
  }
  EXPECT_TRUE(infer_units(1.9 * mean_matter_density_mpc(), kLcdm, Units{}).fits);
  EXPECT_TRUE(infer_units(0.51 * mean_matter_density_mpc(), kLcdm, Units{}).fits);
}

TEST(UnitsInference, HFreeUnitsStayHFree) {
  Units assumed;
  assumed.h_scaled = false;
  // Without /h the density unit holds h^2 less: Omega_m rho_crit is 0.49 x that of the h-scaled units.
  const UnitsInference g = infer_units(0.49 * mean_matter_density_mpc(), kLcdm, assumed);
  EXPECT_TRUE(g.fits);
  EXPECT_EQ(g.units.length_name(), "Mpc");
  EXPECT_NEAR(g.ratio, 1.0, 1e-9);
}

TEST(UnitsOption, ParsesLengthMassVelocity) {
  const Units u = parse_units("Mpc/h,1e10Msun/h,km/s");
  EXPECT_EQ(u.length_name(), "Mpc/h");
  EXPECT_EQ(u.mass_name(), "1e10 Msun/h");
  EXPECT_EQ(u.velocity_name(), "km/s");
  EXPECT_TRUE(u.h_scaled);
  EXPECT_EQ(u.source, UnitsSource::given);
  // Gadget's defaults to the bit, so that giving them changes nothing.
  const Units g = parse_units("kpc/h, 1e10 Msun/h, km/s");
  EXPECT_EQ(g.length_cm, Units{}.length_cm);
  EXPECT_EQ(g.mass_g, Units{}.mass_g);
  EXPECT_EQ(g.velocity_cm_per_s, Units{}.velocity_cm_per_s);
  // Left out: 1e10 Msun and km/s, with the length's /h.
  const Units l = parse_units("Mpc");
  EXPECT_EQ(l.length_name(), "Mpc");
  EXPECT_EQ(l.mass_name(), "1e10 Msun");
  EXPECT_FALSE(l.h_scaled);
  EXPECT_EQ(parse_units("3.085678e24cm,1.989e43g,1e5cm/s").length_name(), "Mpc");
  EXPECT_EQ(parse_units("pc,Msun,m/s").velocity_cm_per_s, 100.0);
}

TEST(UnitsOption, RefusesWhatItCannotRead) {
  for (const char* bad : {"", "furlong", "Mpc/h,1e10Msun", "Mpc,1e10Msun/h", "Mpc/h,1e10Msun/h,km/s/h",
                          "Mpc/h,1e10Msun/h,km/s,s", "-1Mpc", "Mpc/h,km/s", "0kpc"}) {
    SCOPED_TRACE(bad);
    try {
      parse_units(bad);
      ADD_FAILURE() << "accepted";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::usage);
      EXPECT_NE(std::string(e.what()).find("--units"), std::string::npos) << e.what();
    }
  }
}

// A Gadget-2-style HDF5 file without units: `box` on a side, 8 particles of type 1 in the mass table and 4
// of type 0 with their own masses (3/4 of the total mass `total`); velocities stored as u at a = 0.25.
std::string write_snapshot(const std::string& name, double box, double total, bool cosmology) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  const mpi::Comm comm;
  io::File f = io::File::create(path, comm);
  for (const char* g : {"/Header", "/PartType0", "/PartType1"}) f.create_group(g);
  const double m1 = total / 32, m0 = 3 * total / 16;  // 8 m1 + 4 m0 = total, 3/4 of it in type 0
  f.write_attribute<double>("/Header", "BoxSize", box);
  f.write_attribute<double>("/Header", "MassTable", std::vector<double>{0, m1});
  f.write_attribute<std::uint64_t>("/Header", "NumPart_ThisFile", std::vector<std::uint64_t>{4, 8});
  f.write_attribute<std::uint64_t>("/Header", "NumPart_Total", std::vector<std::uint64_t>{4, 8});
  f.write_attribute<double>("/Header", "Time", 0.25);
  f.write_attribute<double>("/Header", "Redshift", 3.0);
  if (cosmology) {
    f.write_attribute<double>("/Header", "Omega0", kLcdm.omega_m);
    f.write_attribute<double>("/Header", "OmegaLambda", kLcdm.omega_lambda);
    f.write_attribute<double>("/Header", "HubbleParam", kLcdm.hubble_param);
  }
  std::vector<double> x0(12), x1(24), v0(12, 10.0), v1(24, -20.0);
  for (std::size_t i = 0; i < x0.size(); ++i) x0[i] = box * (0.1 + 0.05 * static_cast<double>(i % 3));
  for (std::size_t i = 0; i < x1.size(); ++i) x1[i] = box * (0.5 + 0.01 * static_cast<double>(i % 7));
  f.write<double>("/PartType0/Coordinates", {4, 3}, x0);
  f.write<double>("/PartType0/Velocities", {4, 3}, v0);
  f.write<double>("/PartType0/Masses", std::vector<double>(4, m0));
  f.write<std::uint64_t>("/PartType0/ParticleIDs", std::vector<std::uint64_t>{1, 2, 3, 4});
  f.write<double>("/PartType1/Coordinates", {8, 3}, x1);
  f.write<double>("/PartType1/Velocities", {8, 3}, v1);
  f.write<std::uint64_t>("/PartType1/ParticleIDs", std::vector<std::uint64_t>{5, 6, 7, 8, 9, 10, 11, 12});
  return path;
}

TEST(SettleUnits, InfersFromEveryTypesMass) {
  const mpi::Comm comm;
  // All types together hold Omega_m rho_crit of a 32 Mpc/h box; type 1 alone (a quarter) would fit
  // nothing, so the inference counts every type.
  const double volume = 32.0 * 32.0 * 32.0;
  const std::string mpc = write_snapshot("phew-units-mpc.hdf5", 32.0, mean_matter_density_mpc() * volume, true);
  const auto r = settle_units(open_snapshot({mpc}), std::nullopt, comm);
  EXPECT_NEAR(total_mass(*r, comm), mean_matter_density_mpc() * volume, 1e-9 * volume);
  EXPECT_EQ(r->info().units.source, UnitsSource::inferred);
  EXPECT_EQ(r->info().units.length_name(), "Mpc/h");
  EXPECT_NEAR(r->info().units.density_ratio, 1.0, 1e-12);
  // The same particles, the same numbers: only the units changed.
  FieldSelection f;
  f.velocities = true;
  const ParticleSet p = read_particles(*r, {0, 1}, 0, 12, f);
  EXPECT_EQ(p.position[0], 32.0 * 0.1);

  const std::string kpc = write_snapshot("phew-units-kpc.hdf5", 32000.0, mean_matter_density_mpc() * volume, true);
  const auto k = settle_units(open_snapshot({kpc}), std::nullopt, comm);
  EXPECT_EQ(k->info().units.length_name(), "kpc/h");
  EXPECT_EQ(k->info().units.source, UnitsSource::inferred);

  // Given units win, over an inference and over the file's.
  const auto given = settle_units(open_snapshot({mpc}), parse_units("kpc/h"), comm);
  EXPECT_EQ(given->info().units.length_name(), "kpc/h");
  EXPECT_EQ(given->info().units.source, UnitsSource::given);
  std::filesystem::remove(mpc);
  std::filesystem::remove(kpc);
}

TEST(SettleUnits, AssumedWithoutCosmologyOrWhenNothingFits) {
  const mpi::Comm comm;
  const std::string none = write_snapshot("phew-units-none.hdf5", 32.0, 1.0, false);
  const auto r = settle_units(open_snapshot({none}), std::nullopt, comm);
  EXPECT_EQ(r->info().units.source, UnitsSource::assumed);
  EXPECT_EQ(r->info().units.density_ratio, 0);      // not measured
  EXPECT_EQ(r->info().units.length_name(), "kpc");  // not comoving: no /h

  const std::string odd = write_snapshot("phew-units-odd.hdf5", 32.0, 1e-3, true);
  const auto o = settle_units(open_snapshot({odd}), std::nullopt, comm);
  EXPECT_EQ(o->info().units.source, UnitsSource::assumed);
  EXPECT_EQ(o->info().units.length_name(), "kpc/h");
  EXPECT_GT(o->info().units.density_ratio, 0);
  std::filesystem::remove(none);
  std::filesystem::remove(odd);
}

std::string shared(const std::string& rel) {
  const char* root = std::getenv("PHEW_SHARED_DATA");
  return std::string(root ? root : "../shared/data") + "/" + rel;
}

// total_mass reads the masses alone (FieldSelection::positions false) in every reader: the same sum as
// the masses read with the positions.
TEST(TotalMass, EveryReaderWithoutPositions) {
  const mpi::Comm comm;
  const std::string particles = (std::filesystem::temp_directory_path() / "phew-units-particles.h5").string();
  {
    io::File f = io::File::create(particles, comm);
    f.create_group("/particles");
    f.write<double>("/particles/position", {3, 3}, std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9});
    f.write<double>("/particles/mass", std::vector<double>{0.5, 1.25, 2.0});
    f.write<std::uint64_t>("/particles/id", std::vector<std::uint64_t>{1, 2, 3});
    f.write_attribute<double>("/particles", "box_size", std::vector<double>{10, 10, 10});
    f.write_attribute<std::int8_t>("/particles", "periodic", 1);
  }
  for (const std::string& path :
       {particles, shared("gadget-binary/pot_acc.format2.gadget2"), shared("ramses-cosmo-L20-N32/output_00004"),
        shared("gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5")}) {
    SCOPED_TRACE(path);
    const auto r = open_snapshot({path});
    std::vector<int> types;
    for (int t = 0; t < r->info().num_types(); ++t)
      if (r->info().total(t) > 0) types.push_back(t);
    double want = 0;
    for (double m : read_particles(*r, types, 0, r->info().total(types), FieldSelection{}).mass) want += m;
    EXPECT_GT(want, 0);
    EXPECT_NEAR(total_mass(*r, comm), want, 1e-12 * want);
  }
  std::filesystem::remove(particles);
}

// Gadget-2/3 HDF5 stores u = v_pec / sqrt(a) and says nothing: read as peculiar, u sqrt(a).
TEST(PeculiarVelocities, GadgetHdf5WithoutAttributesStoresU) {
  const std::string path = write_snapshot("phew-units-u.hdf5", 32.0, 1.0, true);
  const auto r = open_snapshot({path});
  FieldSelection f;
  f.velocities = true;
  const ParticleSet p = read_particles(*r, {0, 1}, 0, 12, f);
  EXPECT_EQ(p.velocity[0], 10.0 * 0.5);  // sqrt(0.25)
  EXPECT_EQ(p.velocity[12], -20.0 * 0.5);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace phew::particles
