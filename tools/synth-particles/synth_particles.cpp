#include "synth_particles.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "mpi/agree.hpp"
#include "synth/realize.hpp"
#include "synth/sequence.hpp"
#include "synth_output.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <memory>

namespace phew {
namespace {

using Json = nlohmann::json;

const std::vector<std::string> kModels = {"nfw", "plummer", "hernquist", "uniform", "zeldovich"};

double number(const std::string& text, const std::string& option) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v))
    throw Error::usage("{} '{}': expected a number", option, text);
  return v;
}

Json numbers(const std::string& text, const std::string& option, std::size_t count, const char* form) {
  Json out = Json::array();
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, end - pos);
    double v = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size())
      throw Error::usage("{} '{}': expected {}", option, text, form);
    out.push_back(v);
    pos = end + 1;
  }
  if (out.size() != count) throw Error::usage("{} '{}': expected {}", option, text, form);
  return out;
}

bool is_model(const std::string& m) { return std::find(kModels.begin(), kModels.end(), m) != kModels.end(); }

// One model from the per-model options, with defaults that make `synth-particles nfw -o x.hdf5` work.
Json single_model_scene(const SynthOptions& o) {
  const std::string& m = o.model;
  const bool halo = m == "nfw" || m == "plummer" || m == "hernquist";
  Json c = {{"name", m}, {"model", m}};
  const char* default_particles = halo ? "10000" : m == "uniform" ? "32768" : "64^3";
  c["particles"] = synth::parse_particle_count(o.particles.empty() ? default_particles : o.particles, "--particles");
  auto put = [&](const char* key, const std::string& text, const std::string& option) {
    if (!text.empty()) c[key] = number(text, option);
  };
  put("mass", o.mass, "--mass");
  put("concentration", o.concentration, "--concentration");
  put("scale_radius", o.scale_radius, "--scale-radius");
  put("truncation", o.truncation, "--truncation");
  put("decay", o.decay, "--decay");
  put("velocity_dispersion", o.velocity_dispersion, "--velocity-dispersion");
  put("sigma8", o.sigma8, "--sigma8");
  put("index", o.index, "--index");
  if (!o.spectrum.empty()) c["spectrum"] = o.spectrum;
  if (!o.position.empty()) c["position"] = numbers(o.position, "--position", 3, "x,y,z");
  if (!o.velocity.empty()) c["velocity"] = numbers(o.velocity, "--velocity", 3, "vx,vy,vz");
  if (halo) {
    if (!c.contains("mass")) c["mass"] = 1.0;
    if (m == "nfw" && !c.contains("concentration")) c["concentration"] = 10.0;
    if (m != "nfw" && !c.contains("scale_radius")) c["scale_radius"] = 1.0;
  }

  Json s = {{"components", Json::array({c})}};
  const bool cosmological = m == "zeldovich" || !o.cosmology.empty() || !o.redshift.empty();
  if (cosmological) {
    const Json cp = o.cosmology.empty() ? Json::array({0.3, 0.7, 0.7})
                                        : numbers(o.cosmology, "--cosmology", 3, "omega_m,omega_lambda,h");
    s["cosmology"] = {{"omega_m", cp[0]}, {"omega_lambda", cp[1]}, {"hubble", cp[2]}};
    if (!o.redshift.empty()) s["redshift"] = number(o.redshift, "--redshift");
  }
  if (!o.box.empty()) s["box"] = number(o.box, "--box");
  else if (m == "uniform" || m == "zeldovich") s["box"] = cosmological ? 100000.0 : 1000.0;
  if (m == "uniform" && !cosmological && !c.contains("mass")) s["components"][0]["mass"] = 1.0;
  return s;
}

// Options that describe one model make no sense with a scene: refuse them rather than ignore them.
void refuse_model_options(const SynthOptions& o) {
  const std::pair<const std::string*, const char*> model_only[] = {
      {&o.mass, "--mass"},       {&o.concentration, "--concentration"}, {&o.scale_radius, "--scale-radius"},
      {&o.truncation, "--truncation"}, {&o.decay, "--decay"},         {&o.position, "--position"},
      {&o.velocity, "--velocity"}, {&o.box, "--box"},                 {&o.cosmology, "--cosmology"},
      {&o.redshift, "--redshift"}, {&o.sigma8, "--sigma8"},           {&o.spectrum, "--spectrum"},
      {&o.index, "--index"},       {&o.velocity_dispersion, "--velocity-dispersion"}};
  for (const auto& [value, name] : model_only)
    if (!value->empty())
      throw Error::usage("{} describes a single model; with the scene '{}' set it in a scene file instead", name, o.model);
}

Json read_scene_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error::io("{}: cannot read the scene file", path);
  try {
    return Json::parse(in);
  } catch (const Json::parse_error& e) {
    throw Error::usage("{}: not valid JSON ({})", path, e.what());
  }
}

void apply_global_options(const SynthOptions& o, Json& s) {
  if (!o.seed.empty()) {
    std::uint64_t seed = 0;
    const auto [ptr, ec] = std::from_chars(o.seed.data(), o.seed.data() + o.seed.size(), seed);
    if (ec != std::errc() || ptr != o.seed.data() + o.seed.size())
      throw Error::usage("--seed '{}': expected a whole number >= 0", o.seed);
    s["seed"] = seed;
  }
  if (o.potential) s["potential"] = true;
  if (o.acceleration) s["acceleration"] = true;
  if (!o.precision.empty()) s["precision"] = o.precision;
  if (!o.mode.empty()) {
    if (!s.contains("sequence") || !s["sequence"].is_object()) s["sequence"] = Json::object();
    s["sequence"]["mode"] = o.mode;
  }
  const std::pair<const std::string*, const char*> seq[] = {
      {&o.snapshots, "snapshots"}, {&o.interval, "interval"}, {&o.accuracy, "accuracy"}};
  for (const auto& [value, key] : seq) {
    if (value->empty()) continue;
    if (!s.contains("sequence")) throw Error::usage("--{} needs a sequence: give --mode ballistic or restricted", key);
    s["sequence"][key] = number(*value, std::string("--") + key);
  }
}

}  // namespace

void declare_synth_options(CLI::App& app, SynthOptions& o) {
  app.add_option("model", o.model,
                 "What to make: a model (nfw, plummer, hernquist, uniform, zeldovich), a built-in scene "
                 "(collision, crossing, merger) or a JSON scene file")
      ->required();
  app.add_option("-n,--particles", o.particles, "Particles: N or K^3 (per component with a scene; default 10000 for a halo, 32768 uniform, 64^3 zeldovich)");
  app.add_option("--mass", o.mass, "Mass in 1e10 Msun: NFW M200, Plummer/Hernquist total, background total (default 1)");
  app.add_option("--concentration", o.concentration, "NFW concentration r200/r_s (default 10)");
  app.add_option("--scale-radius", o.scale_radius, "Plummer/Hernquist scale radius a in kpc (default 1)");
  app.add_option("--truncation", o.truncation, "Start of the exponential taper: NFW in r200 (default 1), others in a (default 0 = none)");
  app.add_option("--decay", o.decay, "Decay length of the taper in units of its start (default 0.1)");
  app.add_option("--position", o.position, "Halo centre x,y,z (default the box centre, or 0)");
  app.add_option("--velocity", o.velocity, "Halo bulk velocity vx,vy,vz in km/s (default 0)");
  app.add_option("--box", o.box, "Periodic box side (kpc, or kpc/h with a cosmology); default none for halos");
  app.add_option("--cosmology", o.cosmology, "omega_m,omega_lambda,h: a cosmological box in kpc/h (default 0.3,0.7,0.7 for zeldovich)");
  app.add_option("--redshift", o.redshift, "Redshift of a cosmological box (default 0)");
  app.add_option("--sigma8", o.sigma8, "zeldovich: sigma8 at z = 0 (default 0.8)");
  app.add_option("--spectrum", o.spectrum, "zeldovich: cdm (BBKS) or power_law (default cdm)");
  app.add_option("--index", o.index, "zeldovich: spectral index n_s (cdm, default 1) or power-law slope (default -2)");
  app.add_option("--velocity-dispersion", o.velocity_dispersion, "uniform: 1-D velocity dispersion in km/s (default 0)");
  app.add_option("--seed", o.seed, "Random seed (default 1, or the scene's)");
  app.add_flag("--potential", o.potential, "Write PartType1/Potential: the analytic potential of the halos");
  app.add_flag("--acceleration", o.acceleration, "Write PartType1/Acceleration: the analytic acceleration of the halos");
  app.add_option("--precision", o.precision, "float32 (default, as Gadget) or float64 for the particle data");
  app.add_option("--mode", o.mode, "Make a sequence: ballistic or restricted (N-body in the halos' potentials)");
  app.add_option("--snapshots", o.snapshots, "Snapshots in the sequence, including the first");
  app.add_option("--interval", o.interval, "Time between snapshots in Myr");
  app.add_option("--accuracy", o.accuracy, "restricted: time step as a fraction of the local dynamical time (default 0.02)");
}

synth::Scene scene_from_options(const SynthOptions& o, std::string* scene_file) {
  Json j;
  std::string where;
  if (is_model(o.model)) {
    j = single_model_scene(o);
    where = "command line";
  } else if (auto builtin = synth::builtin_scene(o.model)) {
    refuse_model_options(o);
    j = *builtin;
    where = "built-in scene " + o.model;
  } else if (std::filesystem::is_regular_file(o.model)) {
    refuse_model_options(o);
    j = read_scene_file(o.model);
    where = o.model;
    if (scene_file) *scene_file = o.model;
  } else if (o.model.size() > 5 && o.model.ends_with(".json")) {
    throw Error::io("{}: no such scene file", o.model);
  } else {
    throw Error::usage("unknown model '{}' (nfw, plummer, hernquist, uniform, zeldovich, a built-in scene: collision, crossing, "
                       "merger, or a scene file NAME.json)",
                       o.model);
  }
  if (!is_model(o.model) && !o.particles.empty() && j.is_object() && j.contains("components") && j["components"].is_array()) {
    const std::uint64_t n = synth::parse_particle_count(o.particles, "--particles");
    for (auto& c : j["components"])
      if (c.is_object()) c["particles"] = n;
  }
  if (j.is_object()) apply_global_options(o, j);
  synth::Scene s = synth::parse_scene(j, where);
  if (s.total_particles() > 0xFFFFFFFFull)
    throw Error::usage("{}: {} particles: one snapshot file holds at most 4,294,967,295", where, s.total_particles());
  return s;
}

void run_synth_particles(const SynthOptions& opt, Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  ctx.phase("scene");
  synth::Scene scene;
  std::string scene_file;
  mpi::agree(comm, [&] { scene = scene_from_options(opt, &scene_file); });
  const int n_snap = scene.snapshots();
  const OutputNames names = output_names(ctx.output(), n_snap);
  const std::uint64_t n = scene.total_particles();

  // Rank 0 makes the particles (the others only take part in the collective writes), so only its
  // memory matters: the particles, FFT buffers and the write buffers.
  const double bytes = synth::realization_bytes(scene) + 48.0 * static_cast<double>(n) +
                       (scene.potential ? 8.0 : 0.0) * static_cast<double>(n) + (scene.acceleration ? 24.0 : 0.0) * static_cast<double>(n);
  mpi::agree(comm, [&] {
    if (comm.root()) check_memory(bytes, available_memory_bytes(), fmt::format("{} particles", log::thousands(static_cast<long long>(n))));
  });

  const std::string scene_text = synth::scene_to_json(scene).dump();
  auto& m = ctx.manifest();
  m.parameter("scene", synth::scene_to_json(scene));
  m.parameter("outputs", names.snapshots);
  mpi::agree(comm, [&] {
    if (comm.root() && !scene_file.empty()) m.add_input(manifest::external_input(scene_file, "scene"));
  });

  ctx.phase("model");
  std::unique_ptr<synth::HaloSet> halos;
  std::vector<synth::ComponentTruth> truth;
  synth::CentreTrack track;
  mpi::agree(comm, [&] {
    halos = std::make_unique<synth::HaloSet>(scene);
    truth = synth::describe(scene, *halos);
    track = synth::centre_track(scene, *halos, truth);
  });
  for (std::size_t c = 0; c < truth.size(); ++c) {
    const auto& t = truth[c];
    if (t.halo) {
      log::info("{} ({}): {} particles, M200 {:.6g}, r200 {:.4g}, r_s {:.4g}, total mass {:.6g}, half-mass radius {:.4g}",
                t.name, t.model, log::thousands(static_cast<long long>(t.n_particles)), t.m200, t.r200, t.scale_radius,
                t.mass, t.half_mass_radius);
      if (halos->df(c).negative_nodes() > 0)
        log::warn("{}: f(E) came out negative at {} grid energies (set to 0): the model is not quite in equilibrium",
                  t.name, halos->df(c).negative_nodes());
    } else {
      log::info("{} ({}): {} particles, mass {:.6g}", t.name, t.model, log::thousands(static_cast<long long>(t.n_particles)), t.mass);
    }
  }

  ctx.phase("sample");
  synth::Particles particles;
  std::unique_ptr<synth::Evolution> evolution;
  mpi::agree(comm, [&] {
    if (!comm.root()) return;
    particles = synth::sample(scene, *halos, truth);
    if (n_snap > 1) evolution = std::make_unique<synth::Evolution>(scene, *halos, particles, track);
  });

  m.summary("n_particles", n);
  m.summary("n_components", truth.size());
  m.summary("n_snapshots", n_snap);
  nlohmann::ordered_json comps = nlohmann::ordered_json::array();
  for (const auto& t : truth)
    comps.push_back({{"name", t.name}, {"model", t.model}, {"n_particles", t.n_particles}, {"mass", t.mass}, {"m200", t.m200}});
  m.summary("components", comps);

  for (int s = 0; s < n_snap; ++s) {
    const auto si = static_cast<std::size_t>(s);
    if (s > 0) {
      ctx.phase("evolve");
      mpi::agree(comm, [&] {
        if (comm.root()) evolution->advance();
      });
    }
    ctx.phase("write");
    std::vector<double> potential, acceleration;
    std::vector<std::int8_t> bound;
    mpi::agree(comm, [&] {
      if (!comm.root()) return;
      const auto& centres = track.center[si];
      if (scene.potential) {
        potential.resize(n);
        for (std::size_t i = 0; i < n; ++i) potential[i] = halos->potential(&particles.position[3 * i], centres);
      }
      if (scene.acceleration) {
        acceleration.resize(3 * n);
        for (std::size_t i = 0; i < n; ++i) {
          const synth::Vec3 a = halos->acceleration(&particles.position[3 * i], centres);
          for (std::size_t d = 0; d < 3; ++d) acceleration[3 * i + d] = a[d];
        }
      }
      bound = synth::bound_flags(particles, *halos, centres, track.velocity[si], scene.scale_factor());
    });

    SnapshotMeta meta;
    meta.index = s;
    meta.n = n;
    meta.time = scene.cosmological ? scene.scale_factor() : track.time[si];
    meta.time_myr = track.time[si] * synth::time_unit_myr();
    meta.scene = &scene;
    meta.truth = &truth;
    meta.track = &track;
    meta.scene_json = scene_text;
    meta.snapshot_name = std::filesystem::path(names.snapshots[si]).filename().string();
    m.summary("snapshot_index", s);
    m.summary("time_myr", meta.time_myr);
    {
      io::AtomicOutput out(names.snapshots[si], comm);
      io::File f = io::File::create(out.temp_path(), comm);
      write_gadget_snapshot(f, meta, particles, potential, acceleration);
      ctx.finish_output(f, out, "snapshot");
    }
    {
      io::AtomicOutput out(names.truths[si], comm);
      io::File f = io::File::create(out.temp_path(), comm);
      write_truth(f, meta, particles, bound);
      ctx.finish_output(f, out, "truth");
    }
  }
  if (evolution)
    log::verbose("restricted N-body: {} particle steps, {} capped at the shortest step", evolution->stats().particle_steps,
                 evolution->stats().capped);
}

}  // namespace phew
