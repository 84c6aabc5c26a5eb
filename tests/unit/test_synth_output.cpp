// synth-particles: options to scenes, output names, and the snapshot and truth files read back through
// phew's own snapshot reader.
#include <phew/core/error.hpp>
#include <phew/io/h5.hpp>
#include <phew/io/truth_file.hpp>
#include <phew/snapshot/gadget_writer.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/snapshot/open.hpp>
#include <phew/synth/realize.hpp>
#include <phew/synth/synthesis.hpp>
#include "synth_particles.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace phew {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path temp_dir() {
  const fs::path d = fs::temp_directory_path() / ("phew-synth-test-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

core::ErrorKind failure(const tools::SynthOptions& o, std::string* message = nullptr) {
  try {
    scene_from_options(o);
  } catch (const core::Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  return core::ErrorKind::internal;  // no error
}

TEST(SynthOptions, ModelsScenesAndErrors) {
  tools::SynthOptions o;
  o.model = "nfw";
  o.particles = "5000";
  o.mass = "2";
  o.concentration = "7";
  o.position = "1,2,3";
  o.seed = "42";
  o.potential = true;
  synth::Scene s = scene_from_options(o);
  ASSERT_EQ(s.components.size(), 1u);
  EXPECT_EQ(s.components[0].particles, 5000u);
  EXPECT_EQ(s.components[0].mass, 2.0);
  EXPECT_EQ(s.components[0].center[2], 3.0);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_TRUE(s.potential);
  EXPECT_FALSE(s.cosmological);

  tools::SynthOptions z;
  z.model = "zeldovich";
  z.particles = "16^3";
  s = scene_from_options(z);
  EXPECT_TRUE(s.cosmological);
  EXPECT_EQ(s.box, 100000.0);
  EXPECT_EQ(s.components[0].lattice_side(), 16u);

  tools::SynthOptions b;
  b.model = "collision";
  b.snapshots = "3";
  b.particles = "100";
  s = scene_from_options(b);
  EXPECT_EQ(s.snapshots(), 3);
  EXPECT_EQ(s.total_particles(), 200u);

  std::string msg;
  tools::SynthOptions bad = o;
  bad.mass = "-1";
  EXPECT_EQ(failure(bad, &msg), core::ErrorKind::usage);
  EXPECT_EQ(msg, "command line: component 0 (\"nfw\"): \"mass\" must be positive, got -1");
  bad = o;
  bad.particles = "0";
  EXPECT_EQ(failure(bad), core::ErrorKind::usage);
  bad = o;
  bad.concentration = "-3";
  EXPECT_EQ(failure(bad), core::ErrorKind::usage);
  bad = o;
  bad.position = "1,2";
  EXPECT_EQ(failure(bad), core::ErrorKind::usage);
  bad = o;
  bad.model = "king";
  EXPECT_EQ(failure(bad, &msg), core::ErrorKind::usage);
  EXPECT_NE(msg.find("unknown model 'king'"), std::string::npos);
  bad = o;
  bad.model = "no/such/scene.json";
  EXPECT_EQ(failure(bad), core::ErrorKind::io);
  bad = b;
  bad.mass = "3";
  EXPECT_EQ(failure(bad), core::ErrorKind::usage);  // --mass is for one model, not a scene
  bad = o;
  bad.interval = "5";
  EXPECT_EQ(failure(bad), core::ErrorKind::usage);  // --interval needs a sequence

  const fs::path dir = temp_dir();
  std::ofstream(dir / "missing.json") << R"({"components": [{"model": "plummer", "particles": 10, "mass": 1}]})";
  bad = tools::SynthOptions{};
  bad.model = (dir / "missing.json").string();
  EXPECT_EQ(failure(bad, &msg), core::ErrorKind::usage);
  EXPECT_EQ(msg, bad.model + ": component 0: missing key \"scale_radius\"");
  std::ofstream(dir / "broken.json") << R"({"components": [)";
  bad.model = (dir / "broken.json").string();
  EXPECT_EQ(failure(bad), core::ErrorKind::usage);
  fs::remove_all(dir);
}

TEST(SynthOutput, Names) {
  auto one = tools::output_names("out/halo.hdf5", 1);
  EXPECT_EQ(one.snapshots, std::vector<std::string>{"out/halo.hdf5"});
  EXPECT_EQ(one.truths, std::vector<std::string>{"out/halo.truth.h5"});
  auto seq = tools::output_names("out/snap", 3);
  EXPECT_EQ(seq.snapshots, (std::vector<std::string>{"out/snap_000.hdf5", "out/snap_001.hdf5", "out/snap_002.hdf5"}));
  EXPECT_EQ(seq.truths[2], "out/snap_002.truth.h5");
  EXPECT_EQ(tools::output_names("out/snap.hdf5", 1001).snapshots.back(), "out/snap_1000.hdf5");
}

struct Written {
  std::unique_ptr<synth::Synthesis> synthesis;
  synth::SynthSnapshot snap;
  const synth::Particles& p() const { return *snap.sampled; }
};

// Writes a scene's first snapshot and truth file as the tool does.
Written write(const Json& j, const std::string& snap, const std::string& truth_path) {
  Written w;
  const mpi::Comm comm;
  w.synthesis = std::make_unique<synth::Synthesis>(synth::parse_scene(j, "test"), comm);
  w.snap = w.synthesis->snapshot(0, fs::path(snap).filename().string());
  {
    io::File f = io::File::create(snap, comm);
    snapshot::write_gadget_hdf5(f, w.snap.header, w.snap.particles(), comm);
  }
  {
    io::File f = io::File::create(truth_path, comm);
    io::write_truth(f, w.snap.truth, comm);
  }
  return w;
}

TEST(SynthOutput, HalosReadBackThroughTheSnapshotReader) {
  const fs::path dir = temp_dir();
  const std::string snap = (dir / "halos.hdf5").string(), truth = (dir / "halos.truth.h5").string();
  const Written w =
      write(Json{{"potential", true},
                 {"acceleration", true},
                 {"precision", "float64"},
                 {"components",
                  {{{"name", "big"}, {"model", "nfw"}, {"particles", 2000}, {"mass", 1.0}, {"concentration", 10.0}},
                   {{"name", "small"},
                    {"model", "plummer"},
                    {"particles", 500},
                    {"mass", 0.1},
                    {"scale_radius", 1.0},
                    {"host", "big"},
                    {"position", {30.0, 0.0, 0.0}}}}}},
            snap, truth);
  const auto reader = snapshot::open_snapshot({snap});
  const particles::SnapshotInfo& info = reader->info();
  EXPECT_EQ(info.format, "gadget-hdf5");
  EXPECT_EQ(info.total(1), 2500u);
  EXPECT_FALSE(info.periodic);
  EXPECT_FALSE(info.comoving);
  EXPECT_TRUE(info.has_potential);
  EXPECT_TRUE(info.has_acceleration);
  EXPECT_EQ(info.mass_table[1], 0.0);  // two particle masses: a Masses dataset
  particles::FieldSelection all{true, true, true, true};
  const particles::ParticleSet p = read_particles(*reader, {1}, 0, 2500, all);
  for (std::size_t i = 0; i < 2500; ++i) {
    EXPECT_EQ(p.id[i], i + 1);
    EXPECT_EQ(p.mass[i], w.p().mass[i]);
    EXPECT_EQ(p.potential[i], w.snap.potential[i]);
    for (std::size_t d = 0; d < 3; ++d) {
      ASSERT_EQ(p.position[3 * i + d], w.p().position[3 * i + d]);
      ASSERT_EQ(p.velocity[3 * i + d], w.p().velocity[3 * i + d]);
      ASSERT_EQ(p.acceleration[3 * i + d], w.snap.acceleration[3 * i + d]);
    }
  }
  const io::File t = io::File::open_read(truth);
  const auto comp = t.read<std::int32_t>("/particles/component");
  EXPECT_EQ(comp[1999], 0);
  EXPECT_EQ(comp[2000], 1);
  EXPECT_EQ(t.read<std::int32_t>("/components/parent"), (std::vector<std::int32_t>{-1, 0}));
  EXPECT_EQ(t.read<double>("/components/center")[3], 30.0);
  EXPECT_EQ(t.read_attribute_string("/components", "names"), R"(["big","small"])");
  EXPECT_NEAR(t.read<double>("/components/m200")[0], 1.0, 1e-3);  // the Plummer adds a little inside r200
  EXPECT_EQ(t.read_attribute_string("/", "snapshot"), "halos.hdf5");
  const model::Truth back = io::read_truth(t);
  EXPECT_EQ(back.meta.names, (std::vector<std::string>{"big", "small"}));
  EXPECT_EQ(back.meta.scene, w.snap.truth.meta.scene);
  ASSERT_EQ(back.particles.size(), 2500u);
  EXPECT_EQ(back.particles[2499].id, 2500u);
  EXPECT_EQ(back.components[1].center, w.snap.truth.components[1].center);
  EXPECT_EQ(back.track.center, w.snap.truth.track.center);
  fs::remove_all(dir);
}

TEST(SynthOutput, CosmologicalBoxReadsBackPeriodic) {
  const fs::path dir = temp_dir();
  const std::string snap = (dir / "box.hdf5").string(), truth = (dir / "box.truth.h5").string();
  const Written w = write(Json{{"box", 50000.0},
                               {"cosmology", {{"omega_m", 0.3}, {"omega_lambda", 0.7}, {"hubble", 0.7}}},
                               {"redshift", 1.0},
                               {"components", {{{"model", "zeldovich"}, {"particles", "16^3"}}}}},
                          snap, truth);
  const auto reader = snapshot::open_snapshot({snap});
  const particles::SnapshotInfo& info = reader->info();
  EXPECT_TRUE(info.periodic);
  EXPECT_TRUE(info.comoving);
  ASSERT_TRUE(info.cosmology);
  EXPECT_EQ(info.cosmology->hubble_param, 0.7);
  EXPECT_EQ(info.time, 0.5);
  EXPECT_EQ(info.box_size[0], 50000.0);
  // One particle mass in the MassTable: Omega_m rho_crit of the box.
  EXPECT_NEAR(info.mass_table[1] * 4096 / (info.cosmology->critical_density(1.0, info.units) * std::pow(50000.0, 3)),
              0.3, 1e-3);
  const particles::ParticleSet p = read_particles(*reader, {1}, 0, 4096, particles::FieldSelection{});
  for (double x : p.position) {
    EXPECT_GE(x, 0.0);
    EXPECT_LT(x, 50000.0);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace phew
