// From a scene to particles: the analytic halo models (profile, distribution function, Jeans
// dispersion), the particles of every component at t = 0, and what the truth file records about each
// component. Particles come in component order; particle i has ID i + 1.
#pragma once

#include <phew/synth/eddington.hpp>
#include <phew/synth/profiles.hpp>
#include <phew/synth/scene.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace phew::synth {

using Vec3 = std::array<double, 3>;

// G in kpc (km/s)^2 / (1e10 Msun): the value phew's Units give (h cancels in h-scaled units).
double gravitational_constant();
// One internal time unit, kpc / (km/s), in Myr.
double time_unit_myr();

// The analytic halos of a scene, one per halo component (none for backgrounds).
class HaloSet {
 public:
  explicit HaloSet(const Scene& scene);  // builds profiles and f(E); throws Error(usage) for bad halos

  std::size_t size() const { return halos_.size(); }  // = number of components
  bool is_halo(std::size_t c) const { return halos_[c].profile != nullptr; }
  const Profile& profile(std::size_t c) const { return *halos_[c].profile; }
  const DistributionFunction& df(std::size_t c) const { return *halos_[c].df; }
  const JeansDispersion& jeans(std::size_t c) const { return *halos_[c].jeans; }
  double m200(std::size_t c) const { return halos_[c].m200; }
  double r200(std::size_t c) const { return halos_[c].r200; }
  double box() const { return box_; }
  double smallest_scale_radius() const;

  // Separation x - c, through the nearest periodic image in a periodic box.
  Vec3 separation(const double* x, const Vec3& c) const;
  // Potential (velocity^2) and acceleration (velocity^2 / length) at x of every halo, centred at
  // `centers` (one per component; backgrounds ignored). Not collective.
  double potential(const double* x, const std::vector<Vec3>& centers) const;
  Vec3 acceleration(const double* x, const std::vector<Vec3>& centers) const;

 private:
  struct Halo {
    std::unique_ptr<Profile> profile;
    std::unique_ptr<DistributionFunction> df;
    std::unique_ptr<JeansDispersion> jeans;
    double m200 = 0, r200 = 0;
  };
  std::vector<Halo> halos_;
  double box_ = 0;
};

// What the truth file says about one component (lengths, masses, velocities in the scene's units).
struct ComponentTruth {
  std::string name, model;
  bool halo = false;
  int parent = -1;  // the host's component index, -1 for none
  std::uint64_t n_particles = 0, first_id = 0;
  double particle_mass = 0, mass = 0;  // mass = n_particles * particle_mass (a halo's whole tapered model)
  double m200 = 0, r200 = 0, concentration = 0, scale_radius = 0;  // 0 where they do not apply
  double truncation_radius = 0, decay_radius = 0, half_mass_radius = 0;
  Vec3 center{}, velocity{};  // at t = 0; velocity is the peculiar bulk velocity
};

// Particles of one snapshot. Velocities are as Gadget stores them (u = v_pec / sqrt(a)).
struct Particles {
  std::vector<double> position, velocity;  // [n][3]
  std::vector<double> mass;                // [n]
  std::vector<std::int32_t> component;     // [n], index into the scene's components

  std::size_t size() const { return mass.size(); }
};

// Bytes per particle a realisation needs (particles, plus the Zel'dovich FFT buffers).
double realization_bytes(const Scene& scene);

// What the truth file records about each component at t = 0, without sampling anything (cheap, so
// every rank can know it). Not collective.
std::vector<ComponentTruth> describe(const Scene& scene, const HaloSet& halos);

// Samples every component at t = 0. Deterministic: each component draws from its own streams of
// (scene.seed, component index). Not collective.
Particles sample(const Scene& scene, const HaloSet& halos, const std::vector<ComponentTruth>& truth);

// Velocity of halo particles relative to their halo and their energy in its own potential: 1 where
// E = |v - V|^2/2 + Phi(|x - c|) < 0 (bound to its halo), 0 otherwise and for backgrounds.
std::vector<std::int8_t> bound_flags(const Particles& p, const HaloSet& halos, const std::vector<Vec3>& centers,
                                     const std::vector<Vec3>& velocities, double scale_factor);

}  // namespace phew::synth
