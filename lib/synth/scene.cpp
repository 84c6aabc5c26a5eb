#include <phew/synth/scene.hpp>

#include <phew/core/error.hpp>
#include <phew/core/parse.hpp>
#include <phew/particles/particle_set.hpp>

#include <charconv>
#include <cmath>
#include <numbers>
#include <set>

namespace phew::synth {
namespace {

using Json = nlohmann::json;

// Reads the keys of one JSON object, remembering which were used so that a misspelt key is an error
// rather than silently ignored. Every message names the object (`label`) and the key.
class Keys {
 public:
  Keys(const Json& j, std::string label) : j_(j), label_(std::move(label)) {
    if (!j.is_object()) throw core::Error::usage("{}: expected a JSON object, found {}", label_, j.type_name());
  }
  bool has(const std::string& key) {
    used_.insert(key);
    return j_.contains(key);
  }
  [[noreturn]] void missing(const std::string& key) const {
    throw core::Error::usage("{}: missing key \"{}\"", label_, key);
  }
  const Json& get(const std::string& key) {
    if (!has(key)) missing(key);
    return j_.at(key);
  }
  double number(const std::string& key) {
    const Json& v = get(key);
    if (!v.is_number()) throw core::Error::usage("{}: \"{}\" must be a number, found {}", label_, key, v.dump());
    const double x = v.get<double>();
    if (!std::isfinite(x)) throw core::Error::usage("{}: \"{}\" must be finite", label_, key);
    return x;
  }
  double number(const std::string& key, double fallback) { return has(key) ? number(key) : fallback; }
  double positive(const std::string& key) {
    const double x = number(key);
    if (!(x > 0)) throw core::Error::usage("{}: \"{}\" must be positive, got {:g}", label_, key, x);
    return x;
  }
  double positive(const std::string& key, double fallback) { return has(key) ? positive(key) : fallback; }
  double non_negative(const std::string& key, double fallback) {
    const double x = number(key, fallback);
    if (!(x >= 0)) throw core::Error::usage("{}: \"{}\" must be >= 0, got {:g}", label_, key, x);
    return x;
  }
  bool boolean(const std::string& key, bool fallback) {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_boolean()) throw core::Error::usage("{}: \"{}\" must be true or false, found {}", label_, key, v.dump());
    return v.get<bool>();
  }
  std::string text(const std::string& key, const std::string& fallback) {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_string()) throw core::Error::usage("{}: \"{}\" must be a string, found {}", label_, key, v.dump());
    return v.get<std::string>();
  }
  std::array<double, 3> vec3(const std::string& key, std::array<double, 3> fallback) {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() || !v[2].is_number())
      throw core::Error::usage("{}: \"{}\" must be three numbers [x, y, z], found {}", label_, key, v.dump());
    std::array<double, 3> out{v[0].get<double>(), v[1].get<double>(), v[2].get<double>()};
    for (double x : out)
      if (!std::isfinite(x)) throw core::Error::usage("{}: \"{}\" must be finite", label_, key);
    return out;
  }
  // No key left unread: a typo ("concentation") is an error, not a default silently used.
  void finish() const {
    for (const auto& [key, value] : j_.items())
      if (!used_.count(key)) throw core::Error::usage("{}: unknown key \"{}\"", label_, key);
  }
  const std::string& label() const { return label_; }

 private:
  const Json& j_;
  std::string label_;
  std::set<std::string> used_;
};

std::optional<ComponentModel> model_from(const std::string& s) {
  if (s == "nfw") return ComponentModel::nfw;
  if (s == "plummer") return ComponentModel::plummer;
  if (s == "hernquist") return ComponentModel::hernquist;
  if (s == "uniform") return ComponentModel::uniform;
  if (s == "zeldovich") return ComponentModel::zeldovich;
  return std::nullopt;
}

std::uint64_t particles_from(const Json& v, const std::string& label) {
  if (v.is_number_integer() || v.is_number_unsigned()) {
    if (v.is_number_integer() && v.get<std::int64_t>() < 1)
      throw core::Error::usage("{}: \"particles\" must be at least 1, got {}", label, v.dump());
    return v.get<std::uint64_t>();
  }
  if (v.is_string()) return parse_particle_count(v.get<std::string>(), label + ": \"particles\"");
  throw core::Error::usage("{}: \"particles\" must be a whole number or \"K^3\", found {}", label, v.dump());
}

Component parse_component(const Json& j, std::size_t index, const std::string& where,
                          const std::vector<Component>& before, const Scene& scene) {
  std::string label = fmt::format("{}: component {}", where, index);
  if (j.is_object() && j.contains("name") && j.at("name").is_string())
    label += fmt::format(" (\"{}\")", j.at("name").get<std::string>());
  Keys k(j, label);
  Component c;
  const std::string model = k.text("model", "");
  if (model.empty()) k.missing("model");
  const auto m = model_from(model);
  if (!m)
    throw core::Error::usage("{}: unknown model \"{}\" (nfw, plummer, hernquist, uniform, zeldovich)", label, model);
  c.model = *m;
  c.name = k.text("name", fmt::format("{}{}", model, index));
  for (const auto& b : before)
    if (b.name == c.name) throw core::Error::usage("{}: name \"{}\" is used twice", label, c.name);
  c.particles = particles_from(k.get("particles"), label);
  const double type = k.number("type", 1);
  if (!(type >= 0 && type <= 5 && type == std::floor(type)))
    throw core::Error::usage("{}: \"type\" must be a Gadget particle type 0..5, got {:g}", label, type);
  c.type = static_cast<int>(type);

  const std::array<double, 3> centre = scene.box > 0
                                           ? std::array<double, 3>{scene.box / 2, scene.box / 2, scene.box / 2}
                                           : std::array<double, 3>{0, 0, 0};
  if (c.is_halo()) {
    c.mass = k.positive("mass");
    if (c.model == ComponentModel::nfw) {
      c.concentration = k.positive("concentration");
      c.truncation = k.positive("truncation", 1.0);
    } else {
      c.scale_radius = k.positive("scale_radius");
      c.truncation = k.non_negative("truncation", 0.0);
    }
    c.decay = k.positive("decay", 0.1);
    if (k.has("host")) {
      const Json& h = j.at("host");
      if (!h.is_string()) throw core::Error::usage("{}: \"host\" must be the name of an earlier halo component", label);
      const std::string host = h.get<std::string>();
      for (std::size_t i = 0; i < before.size(); ++i)
        if (before[i].name == host) c.host = static_cast<int>(i);
      if (c.host < 0 || !before[static_cast<std::size_t>(c.host)].is_halo())
        throw core::Error::usage("{}: host \"{}\" is not an earlier halo component", label, host);
    }
    c.position = k.vec3("position", c.host >= 0 ? std::array<double, 3>{0, 0, 0} : centre);
    c.velocity = k.vec3("velocity", {0, 0, 0});
    c.center = c.position;
    c.bulk_velocity = c.velocity;
    if (c.host >= 0) {
      const Component& h = before[static_cast<std::size_t>(c.host)];
      for (int d = 0; d < 3; ++d) {
        c.center[static_cast<std::size_t>(d)] += h.center[static_cast<std::size_t>(d)];
        c.bulk_velocity[static_cast<std::size_t>(d)] += h.bulk_velocity[static_cast<std::size_t>(d)];
      }
    }
  } else if (c.model == ComponentModel::uniform) {
    c.mass = scene.cosmological ? k.non_negative("mass", 0.0) : k.positive("mass");
    if (scene.box > 0) {
      c.size = scene.box;
      c.position = centre;
    } else {
      c.size = k.positive("size");
      c.position = k.vec3("position", {0, 0, 0});
    }
    c.center = c.position;
    c.velocity_dispersion = k.non_negative("velocity_dispersion", 0.0);
  } else {  // zeldovich
    if (!scene.cosmological)
      throw core::Error::usage("{}: a zeldovich background needs a cosmological scene (give \"cosmology\")", label);
    if (!(scene.box > 0))
      throw core::Error::usage("{}: a zeldovich background needs a periodic box (give \"box\")", label);
    c.mass = k.non_negative("mass", 0.0);
    c.sigma8 = k.positive("sigma8", 0.8);
    const std::string spectrum = k.text("spectrum", "cdm");
    if (spectrum == "cdm")
      c.spectrum = Spectrum::cdm;
    else if (spectrum == "power_law")
      c.spectrum = Spectrum::power_law;
    else
      throw core::Error::usage("{}: unknown spectrum \"{}\" (cdm or power_law)", label, spectrum);
    c.index = k.number("index", c.spectrum == Spectrum::cdm ? 1.0 : -2.0);
    if (c.spectrum == Spectrum::power_law && !(c.index > -3 && c.index < 0))
      throw core::Error::usage("{}: a power-law spectrum needs -3 < index < 0 (sigma8 must converge), got {:g}", label,
                               c.index);
    if (c.lattice_side() * c.lattice_side() * c.lattice_side() != c.particles)
      throw core::Error::usage("{}: a zeldovich lattice needs a cube number of particles (e.g. \"64^3\"), got {}",
                               label, c.particles);
    if (c.lattice_side() < 2) throw core::Error::usage("{}: a zeldovich lattice needs at least 2^3 particles", label);
    c.center = centre;
  }
  k.finish();
  return c;
}

Sequence parse_sequence(const Json& j, const std::string& where) {
  Keys k(j, where + ": sequence");
  Sequence s;
  const std::string mode = k.text("mode", "");
  if (mode.empty()) k.missing("mode");
  if (mode == "ballistic")
    s.mode = SequenceMode::ballistic;
  else if (mode == "restricted")
    s.mode = SequenceMode::restricted;
  else
    throw core::Error::usage("{}: sequence: unknown mode \"{}\" (ballistic or restricted)", where, mode);
  const double n = k.number("snapshots");
  if (!(n >= 1) || n != std::floor(n) || n > 100000)
    throw core::Error::usage("{}: sequence: \"snapshots\" must be a whole number from 1 to 100000, got {:g}", where, n);
  s.snapshots = static_cast<int>(n);
  s.interval_myr = s.snapshots > 1 ? k.positive("interval") : k.positive("interval", 1.0);
  s.accuracy = k.positive("accuracy", 0.02);
  if (s.accuracy > 0.5)
    throw core::Error::usage("{}: sequence: \"accuracy\" must be at most 0.5, got {:g}", where, s.accuracy);
  s.dynamical_friction = k.boolean("dynamical_friction", true);
  s.coulomb_log = k.non_negative("coulomb_log", 0.0);
  k.finish();
  return s;
}

constexpr double kKpcCm = 3.085678e21;
constexpr double kGravityCgs = 6.6743e-8;

}  // namespace

std::string to_string(ComponentModel m) {
  switch (m) {
    case ComponentModel::nfw:
      return "nfw";
    case ComponentModel::plummer:
      return "plummer";
    case ComponentModel::hernquist:
      return "hernquist";
    case ComponentModel::uniform:
      return "uniform";
    case ComponentModel::zeldovich:
      return "zeldovich";
  }
  return "?";
}

std::string to_string(SequenceMode m) {
  switch (m) {
    case SequenceMode::none:
      return "none";
    case SequenceMode::ballistic:
      return "ballistic";
    case SequenceMode::restricted:
      return "restricted";
  }
  return "?";
}

std::uint64_t Component::lattice_side() const {
  auto k = static_cast<std::uint64_t>(std::llround(std::cbrt(static_cast<double>(particles))));
  while (k * k * k > particles) --k;
  while ((k + 1) * (k + 1) * (k + 1) <= particles) ++k;
  return k;
}

std::uint64_t Scene::total_particles() const {
  std::uint64_t n = 0;
  for (const auto& c : components) n += c.particles;
  return n;
}

double Scene::critical_density() const {
  // 3 H0^2 / (8 pi G); in h-scaled units the h^2 is absorbed (h = 1 below).
  const double h = cosmological ? 1.0 : hubble;
  const double H0 = 100.0 * h * 1e5 / (1e3 * kKpcCm);  // 1/s
  const double rho_cgs = 3.0 * H0 * H0 / (8.0 * std::numbers::pi * kGravityCgs);
  const particles::Units u;  // kpc, 1e10 Msun
  return rho_cgs / (u.mass_g / (u.length_cm * u.length_cm * u.length_cm));
}

std::uint64_t parse_particle_count(const std::string& text, const std::string& what) {
  auto number = [&](std::string_view s) {
    try {
      return core::parse_number<std::uint64_t>(s, what);
    } catch (const core::Error&) {
      throw core::Error::usage("{} '{}': expected a whole number N or K^3", what, text);
    }
  };
  std::uint64_t n;
  const auto caret = text.find('^');
  if (caret == std::string::npos)
    n = number(text);
  else {
    if (text.substr(caret + 1) != "3")
      throw core::Error::usage("{} '{}': expected a whole number N or K^3", what, text);
    const std::uint64_t k = number(std::string_view(text).substr(0, caret));
    if (k > 2'000'000) throw core::Error::usage("{} '{}': too many particles", what, text);
    n = k * k * k;
  }
  if (n < 1) throw core::Error::usage("{} must be at least 1, got '{}'", what, text);
  return n;
}

Scene parse_scene(const nlohmann::json& j, const std::string& where) {
  Keys k(j, where);
  Scene s;
  if (k.has("seed")) {
    const Json& v = j.at("seed");
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      throw core::Error::usage("{}: \"seed\" must be a whole number >= 0, found {}", where, v.dump());
    s.seed = v.get<std::uint64_t>();
  }
  s.box = k.non_negative("box", 0.0);
  if (k.has("cosmology")) {
    Keys c(j.at("cosmology"), where + ": cosmology");
    s.cosmological = true;
    s.omega_m = c.positive("omega_m", 0.3);
    s.omega_lambda = c.non_negative("omega_lambda", 0.7);
    s.hubble = c.positive("hubble", 0.7);
    c.finish();
    if (k.has("hubble"))
      throw core::Error::usage("{}: give \"hubble\" inside \"cosmology\" in a cosmological scene", where);
    s.redshift = k.non_negative("redshift", 0.0);
    // a = 1/(1+z) underflows the growth factor long before 1e300 (NaN positions); no simulation starts
    // beyond z ~ 1e3.
    if (s.redshift > 1e4) throw core::Error::usage("{}: \"redshift\" {:g} is above 1e4", where, s.redshift);
  } else {
    s.hubble = k.positive("hubble", 0.7);
    if (k.has("redshift"))
      throw core::Error::usage("{}: \"redshift\" needs a cosmological scene (give \"cosmology\")", where);
  }
  s.overdensity = k.positive("overdensity", 200.0);
  s.potential = k.boolean("potential", false);
  s.acceleration = k.boolean("acceleration", false);
  const std::string precision = k.text("precision", "float32");
  if (precision != "float32" && precision != "float64")
    throw core::Error::usage("{}: \"precision\" must be \"float32\" or \"float64\", got \"{}\"", where, precision);
  s.double_precision = precision == "float64";

  const Json& comps = k.get("components");
  if (!comps.is_array() || comps.empty())
    throw core::Error::usage("{}: \"components\" must be a non-empty array", where);
  for (std::size_t i = 0; i < comps.size(); ++i)
    s.components.push_back(parse_component(comps[i], i, where, s.components, s));
  if (k.has("sequence")) {
    s.sequence = parse_sequence(j.at("sequence"), where);
    if (s.cosmological)
      throw core::Error::usage("{}: sequences are made in physical units: drop \"cosmology\" for a sequence", where);
  }
  k.finish();
  std::uint64_t total = 0;
  for (const auto& c : s.components) {
    if (total + c.particles < total || total + c.particles > (std::uint64_t{1} << 40))
      throw core::Error::usage("{}: too many particles in total", where);
    total += c.particles;
  }
  return s;
}

nlohmann::ordered_json scene_to_json(const Scene& s) {
  nlohmann::ordered_json j;
  j["seed"] = s.seed;
  j["box"] = s.box;
  if (s.cosmological) {
    j["cosmology"] = {{"omega_m", s.omega_m}, {"omega_lambda", s.omega_lambda}, {"hubble", s.hubble}};
    j["redshift"] = s.redshift;
  } else {
    j["hubble"] = s.hubble;
  }
  j["overdensity"] = s.overdensity;
  j["potential"] = s.potential;
  j["acceleration"] = s.acceleration;
  j["precision"] = s.double_precision ? "float64" : "float32";
  j["components"] = nlohmann::ordered_json::array();
  for (const auto& c : s.components) {
    nlohmann::ordered_json o;
    o["name"] = c.name;
    o["model"] = to_string(c.model);
    o["particles"] = c.particles;
    if (c.type != 1) o["type"] = c.type;  // dark matter unless said
    if (c.is_halo()) {
      o["mass"] = c.mass;
      if (c.model == ComponentModel::nfw)
        o["concentration"] = c.concentration;
      else
        o["scale_radius"] = c.scale_radius;
      o["truncation"] = c.truncation;
      o["decay"] = c.decay;
      if (c.host >= 0) o["host"] = s.components[static_cast<std::size_t>(c.host)].name;
      o["position"] = c.position;
      o["velocity"] = c.velocity;
    } else if (c.model == ComponentModel::uniform) {
      o["mass"] = c.mass;
      if (s.box == 0) {
        o["size"] = c.size;
        o["position"] = c.position;
      }
      o["velocity_dispersion"] = c.velocity_dispersion;
    } else {
      o["mass"] = c.mass;
      o["sigma8"] = c.sigma8;
      o["spectrum"] = c.spectrum == Spectrum::cdm ? "cdm" : "power_law";
      o["index"] = c.index;
    }
    j["components"].push_back(o);
  }
  if (s.sequence.mode != SequenceMode::none)
    j["sequence"] = {{"mode", to_string(s.sequence.mode)},
                     {"snapshots", s.sequence.snapshots},
                     {"interval", s.sequence.interval_myr},
                     {"accuracy", s.sequence.accuracy},
                     {"dynamical_friction", s.sequence.dynamical_friction},
                     {"coulomb_log", s.sequence.coulomb_log}};
  return j;
}

std::vector<std::string> builtin_scene_names() { return {"collision", "crossing", "merger"}; }

std::optional<nlohmann::json> builtin_scene(const std::string& name) {
  // Geda & Teyssier (2025), Table 1 and Sec. 5.1: a major NFW halo (1e10 Msun, c = 20) at rest and a
  // minor one (5e9 Msun, c = 2) at (160, 180, 0) kpc moving at (-353, -353, 0) km/s, 1e4 particles
  // each, outputs every 7.45 Myr for 447 Myr (61 snapshots, 60 steps).
  auto two_halos = [](const char* mode, int snapshots) {
    return Json{{"seed", 1},
                {"components",
                 {{{"name", "major"},
                   {"model", "nfw"},
                   {"particles", 10000},
                   {"mass", 1.0},
                   {"concentration", 20.0},
                   {"position", {0.0, 0.0, 0.0}},
                   {"velocity", {0.0, 0.0, 0.0}}},
                  {{"name", "minor"},
                   {"model", "nfw"},
                   {"particles", 10000},
                   {"mass", 0.5},
                   {"concentration", 2.0},
                   {"position", {160.0, 180.0, 0.0}},
                   {"velocity", {-353.0, -353.0, 0.0}}}}},
                {"sequence", {{"mode", mode}, {"snapshots", snapshots}, {"interval", 7.45}}}};
  };
  if (name == "collision") return two_halos("restricted", 61);
  // The same two halos, rigid, followed for twice as long so that the minor passes through the major
  // (closest approach, 14 kpc, at about 470 Myr) and out again.
  if (name == "crossing") return two_halos("ballistic", 121);
  // A bound satellite (3e9 Msun) on a slow orbit 40 kpc from a 1e10 Msun host: tides strip it and
  // dynamical friction brings it to the host's centre in about 1.5 Gyr.
  if (name == "merger")
    return Json{{"seed", 1},
                {"components",
                 {{{"name", "host"},
                   {"model", "nfw"},
                   {"particles", 10000},
                   {"mass", 1.0},
                   {"concentration", 10.0},
                   {"position", {0.0, 0.0, 0.0}}},
                  {{"name", "satellite"},
                   {"model", "nfw"},
                   {"particles", 10000},
                   {"mass", 0.3},
                   {"concentration", 10.0},
                   {"position", {40.0, 0.0, 0.0}},
                   {"velocity", {0.0, 15.0, 0.0}}}}},
                {"sequence", {{"mode", "restricted"}, {"snapshots", 41}, {"interval", 50.0}}}};
  return std::nullopt;
}

}  // namespace phew::synth
