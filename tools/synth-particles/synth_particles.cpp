#include "synth_particles.hpp"

#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>
#include <phew/io/truth_file.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/snapshot/gadget_writer.hpp>
#include <phew/synth/synthesis.hpp>

#include <CLI/CLI.hpp>

#include <filesystem>

namespace phew::tools {

void declare_synth_options(CLI::App& app, SynthOptions& o) {
  app.add_option("model", o.model,
                 "What to make: a model (nfw, plummer, hernquist, uniform, zeldovich), a built-in scene "
                 "(collision, crossing, merger) or a JSON scene file")
      ->required();
  app.add_option(
      "--particles", o.particles,
      "Particles: N or K^3 (per component with a scene; default 10000 for a halo, 32768 uniform, 64^3 zeldovich)");
  app.add_option("--mass", o.mass,
                 "Mass in 1e10 Msun: NFW M200, Plummer/Hernquist total, background total (default 1)");
  app.add_option("--concentration", o.concentration, "NFW concentration r200/r_s (default 10)");
  app.add_option("--scale-radius", o.scale_radius, "Plummer/Hernquist scale radius a in kpc (default 1)");
  app.add_option("--truncation", o.truncation,
                 "Start of the exponential taper: NFW in r200 (default 1), others in a (default 0 = none)");
  app.add_option("--decay", o.decay, "Decay length of the taper in units of its start (default 0.1)");
  app.add_option("--position", o.position, "Halo centre x,y,z (default the box centre, or 0)");
  app.add_option("--velocity", o.velocity, "Halo bulk velocity vx,vy,vz in km/s (default 0)");
  app.add_option("--box", o.box, "Periodic box side (kpc, or kpc/h with a cosmology); default none for halos");
  app.add_option("--cosmology", o.cosmology,
                 "omega_m,omega_lambda,h: a cosmological box in kpc/h (default 0.3,0.7,0.7 for zeldovich)");
  app.add_option("--redshift", o.redshift, "Redshift of a cosmological box (default 0)");
  app.add_option("--sigma8", o.sigma8, "zeldovich: sigma8 at z = 0 (default 0.8)");
  app.add_option("--spectrum", o.spectrum, "zeldovich: cdm (BBKS) or power_law (default cdm)");
  app.add_option("--index", o.index, "zeldovich: spectral index n_s (cdm, default 1) or power-law slope (default -2)");
  app.add_option("--velocity-dispersion", o.velocity_dispersion,
                 "uniform: 1-D velocity dispersion in km/s (default 0)");
  app.add_option("--seed", o.seed, "Random seed (default 1, or the scene's)");
  app.add_flag("--potential", o.potential, "Write PartType1/Potential: the analytic potential of the halos");
  app.add_flag("--acceleration", o.acceleration,
               "Write PartType1/Acceleration: the analytic acceleration of the halos");
  app.add_option("--precision", o.precision, "float32 (default, as Gadget) or float64 for the particle data");
  app.add_option("--mode", o.mode, "Make a sequence: ballistic or restricted (N-body in the halos' potentials)");
  app.add_option("--snapshots", o.snapshots, "Snapshots in the sequence, including the first");
  app.add_option("--interval", o.interval, "Time between snapshots in Myr");
  app.add_option("--accuracy", o.accuracy,
                 "restricted: time step as a fraction of the local dynamical time (default 0.02)");
}

SynthParams check_synth_options(const SynthOptions& opt) {
  SynthParams c;
  c.scene = synth::scene_from_options(opt, &c.scene_file);
  return c;
}

OutputNames output_names(const std::string& output, int snapshots) {
  std::string stem = output;
  for (const std::string suffix : {".hdf5", ".h5"})
    if (stem.ends_with(suffix)) {
      stem.resize(stem.size() - suffix.size());
      break;
    }
  OutputNames names;
  if (snapshots == 1) return {{output}, {stem + ".truth.h5"}};
  const int width = std::max(3, static_cast<int>(std::to_string(snapshots - 1).size()));
  for (int s = 0; s < snapshots; ++s) {
    const std::string base = fmt::format("{}_{:0{}}", stem, s, width);
    names.snapshots.push_back(base + ".hdf5");
    names.truths.push_back(base + ".truth.h5");
  }
  return names;
}

namespace {

// What the scene made, as every snapshot's manifest records it.
struct SceneRecord {
  std::uint64_t n_particles;
  int n_snapshots;
  const std::vector<synth::ComponentTruth>& components;
};
// Which snapshot a manifest belongs to.
struct SnapshotRecord {
  int index;
  double time_myr;
};

// clang-format off: one field per line
const manifest::Fields<SceneRecord> kSceneSummary =
    manifest::Fields<SceneRecord>()
        .field("n_particles", &SceneRecord::n_particles)
        .field("n_components", [](const SceneRecord& r) { return manifest::Json(r.components.size()); })
        .field("n_snapshots", &SceneRecord::n_snapshots)
        .field("components", [](const SceneRecord& r) {
          manifest::Json list = manifest::Json::array();
          for (const auto& t : r.components)
            list.push_back({{"name", t.name},
                            {"model", t.model},
                            {"n_particles", t.n_particles},
                            {"mass", t.mass},
                            {"m200", t.m200}});
          return list;
        });
const manifest::Fields<SnapshotRecord> kSnapshotSummary = manifest::Fields<SnapshotRecord>()
                                                              .field("snapshot_index", &SnapshotRecord::index)
                                                              .field("time_myr", &SnapshotRecord::time_myr);
// clang-format on

}  // namespace

void run_synth_particles(const SynthOptions& opt, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  ctx.phase("scene");
  SynthParams c;
  mpi::agree(comm, [&] { c = check_synth_options(opt); });
  const synth::Scene& scene = c.scene;
  const OutputNames names = output_names(ctx.output(), scene.snapshots());
  for (std::size_t s = 0; s < names.snapshots.size(); ++s)
    ctx.plan_output(names.snapshots[s]), ctx.plan_output(names.truths[s]);
  const std::uint64_t n = scene.total_particles();
  // Rank 0 makes the particles (the others only take part in the collective writes), so only its
  // memory matters: the particles, FFT buffers and the write buffers.
  const double bytes = synth::realization_bytes(scene) + 48.0 * static_cast<double>(n) +
                       (scene.potential ? 8.0 : 0.0) * static_cast<double>(n) +
                       (scene.acceleration ? 24.0 : 0.0) * static_cast<double>(n);
  ctx.on_root([&] {
    core::check_memory(bytes, core::available_memory_bytes(),
                       fmt::format("{} particles", core::log::thousands(static_cast<long long>(n))));
  });
  auto& m = ctx.manifest();
  m.parameter("scene", synth::scene_to_json(scene));
  m.parameter("outputs", names.snapshots);
  if (!c.scene_file.empty()) ctx.add_external_inputs({c.scene_file}, "scene");

  synth::Synthesis synthesis(scene, comm, [&](const std::string& phase) { ctx.phase(phase); });
  ctx.summary(kSceneSummary, SceneRecord{n, scene.snapshots(), synthesis.components()});

  for (int s = 0; s < scene.snapshots(); ++s) {
    const auto si = static_cast<std::size_t>(s);
    const synth::SynthSnapshot snap =
        synthesis.snapshot(s, std::filesystem::path(names.snapshots[si]).filename().string());
    ctx.summary(kSnapshotSummary, SnapshotRecord{s, snap.truth.meta.time_myr});
    ctx.write_output(names.snapshots[si], "snapshot",
                     [&](io::File& f) { snapshot::write_gadget_hdf5(f, snap.header, snap.particles(), comm); });
    ctx.write_output(names.truths[si], "truth", [&](io::File& f) { io::write_truth(f, snap.truth, comm); });
  }
  if (const synth::Evolution* e = synthesis.evolution())
    core::log::verbose("restricted N-body: {} particle steps, {} capped at the shortest step",
                       e->stats().particle_steps, e->stats().capped);
}

}  // namespace phew::tools
