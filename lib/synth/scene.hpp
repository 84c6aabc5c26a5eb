// A scene: what synth-particles makes. Halos (NFW, Plummer, Hernquist), backgrounds (a uniform box, a
// Zel'dovich-displaced lattice), global settings (box, cosmology, seed, extra datasets) and optionally a
// sequence in time. Read from JSON (a scene file or a built-in scene) and checked here, so that every
// mistake is one clear usage error naming the key, before anything is computed or written.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace phew::synth {

enum class ComponentModel { nfw, plummer, hernquist, uniform, zeldovich };
enum class Spectrum { cdm, power_law };
enum class SequenceMode { none, ballistic, restricted };

std::string to_string(ComponentModel m);
std::string to_string(SequenceMode m);

struct Component {
  std::string name;
  ComponentModel model = ComponentModel::nfw;
  std::uint64_t particles = 0;
  int type = 1;  // the Gadget PartType its particles are written as (0..5): 4 for a stellar component
  // Halos. mass: NFW M200 (within r200); Plummer, Hernquist: total of the untapered model. 1e10 Msun.
  double mass = 0;
  double concentration = 0;                         // NFW: r200 / r_s
  double scale_radius = 0;                          // Plummer, Hernquist: a (length units)
  double truncation = 0;                            // taper start: NFW in r200 (default 1), others in a (0 = none)
  double decay = 0.1;                               // taper decay radius in units of the taper start
  std::array<double, 3> position{}, velocity{};     // as given: relative to the host when there is one
  int host = -1;                                    // index of the halo this one sits in, -1 = none
  std::array<double, 3> center{}, bulk_velocity{};  // resolved: absolute position and velocity at t = 0
  // Backgrounds. mass: total (0 = Omega_m rho_crit V in a cosmological scene).
  double size = 0;                 // uniform in an open scene: side of the cube centred on `position`
  double velocity_dispersion = 0;  // uniform: 1-D Gaussian velocity dispersion, km/s
  double sigma8 = 0.8;             // zeldovich: linear rms in 8 Mpc/h spheres at z = 0
  Spectrum spectrum = Spectrum::cdm;
  double index = 1;  // zeldovich: n_s (cdm) or the power-law slope n of P(k) ~ k^n

  bool is_halo() const {
    return model == ComponentModel::nfw || model == ComponentModel::plummer || model == ComponentModel::hernquist;
  }
  std::uint64_t lattice_side() const;  // zeldovich: cube root of particles
};

struct Sequence {
  SequenceMode mode = SequenceMode::none;
  int snapshots = 1;
  double interval_myr = 0;         // time between outputs
  double accuracy = 0.02;          // restricted: time step = accuracy * local dynamical time
  bool dynamical_friction = true;  // restricted: Chandrasekhar drag on halo centres
  double coulomb_log = 0;          // 0 = ln(1 + M_host / M_satellite)
};

struct Scene {
  std::uint64_t seed = 1;
  double box = 0;  // periodic box side; 0 = open boundaries (BoxSize 0)
  bool cosmological = false;
  double omega_m = 0.3, omega_lambda = 0.7, hubble = 0.7;  // hubble also sets rho_crit for M200 in physical scenes
  double redshift = 0;
  double overdensity = 200;  // M200 = mass within r200 where the mean density is 200 rho_crit(z=0)
  bool potential = false, acceleration = false;
  bool double_precision = false;
  std::vector<Component> components;
  Sequence sequence;

  std::uint64_t total_particles() const;
  int snapshots() const { return sequence.mode == SequenceMode::none ? 1 : sequence.snapshots; }
  double scale_factor() const { return cosmological ? 1.0 / (1.0 + redshift) : 1.0; }
  // rho_crit at z = 0 in the scene's units: (1e10 Msun)/kpc^3 with H0 = 100 hubble km/s/Mpc, or
  // (1e10 Msun/h)/(kpc/h)^3 in a cosmological scene.
  double critical_density() const;
};

// Checks a scene given as JSON and resolves defaults and hosts. `where` names the source in messages
// ("scene.json", "built-in scene collision"). Throws Error(usage) naming the component and key.
Scene parse_scene(const nlohmann::json& j, const std::string& where);
// The resolved scene, every key explicit; parse_scene(scene_to_json(s)) gives s back.
nlohmann::ordered_json scene_to_json(const Scene& s);

// Built-in scenes by name ("collision", "crossing", "merger"); nullopt for an unknown name.
std::optional<nlohmann::json> builtin_scene(const std::string& name);
std::vector<std::string> builtin_scene_names();

// "262144", "64^3" -> count. Throws Error(usage) naming `what`.
std::uint64_t parse_particle_count(const std::string& text, const std::string& what);

}  // namespace phew::synth
