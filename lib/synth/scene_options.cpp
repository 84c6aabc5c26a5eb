#include <phew/synth/scene_options.hpp>

#include <phew/core/error.hpp>
#include <phew/core/files.hpp>
#include <phew/core/parse.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace phew::synth {
namespace {

using Json = nlohmann::json;

const std::vector<std::string> kModels = {"nfw", "plummer", "hernquist", "uniform", "zeldovich"};

double number(const std::string& text, const std::string& option) { return core::parse_number<double>(text, option); }

// "x,y,z" as a JSON list of exactly `count` numbers.
Json numbers(const std::string& text, const std::string& option, std::size_t count) {
  return Json(core::parse_list<double>(text, option, count));
}

bool is_model(const std::string& m) { return std::find(kModels.begin(), kModels.end(), m) != kModels.end(); }

// One model from the per-model options, with defaults that make `synth-particles nfw -o x.hdf5` work.
Json single_model_scene(const SceneOptions& o) {
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
  if (!o.position.empty()) c["position"] = numbers(o.position, "--position", 3);
  if (!o.velocity.empty()) c["velocity"] = numbers(o.velocity, "--velocity", 3);
  if (halo) {
    if (!c.contains("mass")) c["mass"] = 1.0;
    if (m == "nfw" && !c.contains("concentration")) c["concentration"] = 10.0;
    if (m != "nfw" && !c.contains("scale_radius")) c["scale_radius"] = 1.0;
  }

  Json s = {{"components", Json::array({c})}};
  const bool cosmological = m == "zeldovich" || !o.cosmology.empty() || !o.redshift.empty();
  if (cosmological) {
    const Json cp = o.cosmology.empty() ? Json::array({0.3, 0.7, 0.7}) : numbers(o.cosmology, "--cosmology", 3);
    s["cosmology"] = {{"omega_m", cp[0]}, {"omega_lambda", cp[1]}, {"hubble", cp[2]}};
    if (!o.redshift.empty()) s["redshift"] = number(o.redshift, "--redshift");
  }
  if (!o.box.empty())
    s["box"] = number(o.box, "--box");
  else if (m == "uniform" || m == "zeldovich")
    s["box"] = cosmological ? 100000.0 : 1000.0;
  if (m == "uniform" && !cosmological && !c.contains("mass")) s["components"][0]["mass"] = 1.0;
  return s;
}

// Options that describe one model make no sense with a scene: refuse them rather than ignore them.
void refuse_model_options(const SceneOptions& o) {
  const std::pair<const std::string*, const char*> model_only[] = {{&o.mass, "--mass"},
                                                                   {&o.concentration, "--concentration"},
                                                                   {&o.scale_radius, "--scale-radius"},
                                                                   {&o.truncation, "--truncation"},
                                                                   {&o.decay, "--decay"},
                                                                   {&o.position, "--position"},
                                                                   {&o.velocity, "--velocity"},
                                                                   {&o.box, "--box"},
                                                                   {&o.cosmology, "--cosmology"},
                                                                   {&o.redshift, "--redshift"},
                                                                   {&o.sigma8, "--sigma8"},
                                                                   {&o.spectrum, "--spectrum"},
                                                                   {&o.index, "--index"},
                                                                   {&o.velocity_dispersion, "--velocity-dispersion"}};
  for (const auto& [value, name] : model_only)
    if (!value->empty())
      throw core::Error::usage("{} describes a single model; with the scene '{}' set it in a scene file instead", name,
                               o.model);
}

Json read_scene_file(const std::string& path) {
  core::check_readable_file(path);
  std::ifstream in(path);
  if (!in) throw core::Error::io("{}: cannot read the scene file", path);
  try {
    return Json::parse(in);
  } catch (const Json::parse_error& e) {
    throw core::Error::usage("{}: not valid JSON ({})", path, e.what());
  }
}

void apply_global_options(const SceneOptions& o, Json& s) {
  if (!o.seed.empty()) {
    s["seed"] = core::parse_number<std::uint64_t>(o.seed, "--seed");
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
    if (!s.contains("sequence"))
      throw core::Error::usage("--{} needs a sequence: give --mode ballistic or restricted", key);
    s["sequence"][key] = number(*value, std::string("--") + key);
  }
}

}  // namespace

Scene scene_from_options(const SceneOptions& o, std::string* scene_file) {
  Json j;
  std::string where;
  if (is_model(o.model)) {
    j = single_model_scene(o);
    where = "command line";
  } else if (auto builtin = builtin_scene(o.model)) {
    refuse_model_options(o);
    j = *builtin;
    where = "built-in scene " + o.model;
  } else if (std::filesystem::is_regular_file(o.model)) {
    refuse_model_options(o);
    j = read_scene_file(o.model);
    where = o.model;
    if (scene_file) *scene_file = o.model;
  } else if (o.model.size() > 5 && o.model.ends_with(".json")) {
    throw core::Error::io("{}: no such scene file", o.model);
  } else {
    throw core::Error::usage(
        "unknown model '{}' (nfw, plummer, hernquist, uniform, zeldovich, a built-in scene: collision, crossing, "
        "merger, or a scene file NAME.json)",
        o.model);
  }
  if (!is_model(o.model) && !o.particles.empty() && j.is_object() && j.contains("components") &&
      j["components"].is_array()) {
    const std::uint64_t n = parse_particle_count(o.particles, "--particles");
    for (auto& c : j["components"])
      if (c.is_object()) c["particles"] = n;
  }
  if (j.is_object()) apply_global_options(o, j);
  Scene s = parse_scene(j, where);
  if (s.total_particles() > 0xFFFFFFFFull)
    throw core::Error::usage("{}: {} particles: one snapshot file holds at most 4,294,967,295", where,
                             s.total_particles());
  return s;
}

}  // namespace phew::synth
