#include <phew/synth/synthesis.hpp>

#include <phew/core/log.hpp>
#include <phew/core/units.hpp>
#include <phew/mpi/agree.hpp>

namespace phew::synth {
namespace {

struct SceneUnits {
  std::string length, mass, velocity;
};
SceneUnits units_of(const Scene& s) {
  // The truth's velocities are peculiar, like every velocity column phew writes.
  if (s.cosmological) return {"kpc/h", "1e10 Msun/h", core::units::kPeculiarKmPerS};
  return {"kpc", "1e10 Msun", core::units::kPeculiarKmPerS};
}

void log_components(const std::vector<ComponentTruth>& truth, const HaloSet& halos) {
  for (std::size_t c = 0; c < truth.size(); ++c) {
    const auto& t = truth[c];
    if (t.halo) {
      core::log::info(
          "{} ({}): {} particles, M200 {:.6g}, r200 {:.4g}, r_s {:.4g}, total mass {:.6g}, half-mass radius {:.4g}",
          t.name, t.model, core::log::thousands(static_cast<long long>(t.n_particles)), t.m200, t.r200, t.scale_radius,
          t.mass, t.half_mass_radius);
      if (halos.df(c).negative_nodes() > 0)
        core::log::warn(
            "{}: f(E) came out negative at {} grid energies (set to 0): the model is not quite in equilibrium", t.name,
            halos.df(c).negative_nodes());
    } else {
      core::log::info("{} ({}): {} particles, mass {:.6g}", t.name, t.model,
                      core::log::thousands(static_cast<long long>(t.n_particles)), t.mass);
    }
  }
}

// The Gadget header of a scene's snapshot at `time` (Gadget's Time: a, or internal time units).
particles::GadgetHeader header_of(const Scene& s, const std::vector<ComponentTruth>& truth, double time) {
  particles::GadgetHeader h;
  const SceneUnits u = units_of(s);
  // One particle mass for all: in the MassTable, as Gadget does, and no Masses dataset.
  bool equal = true;
  for (const auto& t : truth) equal = equal && t.particle_mass == truth.front().particle_mass;
  h.type = 1;
  h.particle_mass = equal ? truth.front().particle_mass : 0.0;
  h.box_size = s.box;
  h.time = time;
  h.redshift = s.cosmological ? s.redshift : 0.0;
  // A non-cosmological run: Omega0 = 0 (no comoving coordinates) and HubbleParam = 1, so that Gadget's
  // implicit 1/h in the units is 1.
  h.omega0 = s.cosmological ? s.omega_m : 0.0;
  h.omega_lambda = s.cosmological ? s.omega_lambda : 0.0;
  h.hubble_param = s.cosmological ? s.hubble : 1.0;
  h.double_precision = s.double_precision;
  h.potential = s.potential;
  h.acceleration = s.acceleration;
  h.length_units = u.length;
  h.velocity_units = s.cosmological ? std::string(core::units::kKmPerS) + " (u = v/sqrt(a))"
                                    : core::units::kKmPerS;  // as Gadget stores them
  h.mass_units = u.mass;
  h.potential_units = core::units::kKmPerSSquared;
  h.acceleration_units = std::string(core::units::kKmPerSSquared) + "/" + u.length;
  return h;
}

}  // namespace

particles::GadgetParticles SynthSnapshot::particles() const {
  particles::GadgetParticles p;
  if (sampled) {
    p.position = sampled->position;
    p.velocity = sampled->velocity;
    p.mass = sampled->mass;
  }
  p.id = id;
  p.potential = potential;
  p.acceleration = acceleration;
  p.type = type;
  return p;
}

Synthesis::Synthesis(const Scene& scene, const mpi::Comm& comm, const core::PhaseReport& phase)
    : scene_(scene), comm_(comm), phase_(phase), scene_json_(scene_to_json(scene).dump()) {
  core::enter(phase_, "model");
  mpi::agree(comm_, [&] {
    halos_ = std::make_unique<HaloSet>(scene_);
    truth_ = describe(scene_, *halos_);
    track_ = centre_track(scene_, *halos_, truth_);
  });
  log_components(truth_, *halos_);
  core::enter(phase_, "sample");
  mpi::agree(comm_, [&] {
    if (!comm_.root()) return;
    particles_ = sample(scene_, *halos_, truth_);
    if (scene_.snapshots() > 1) evolution_ = std::make_unique<Evolution>(scene_, *halos_, particles_, track_);
  });
}

Synthesis::~Synthesis() = default;

SynthSnapshot Synthesis::snapshot(int s, const std::string& name) {
  const auto si = static_cast<std::size_t>(s);
  if (s > 0) {
    core::enter(phase_, "evolve");
    mpi::agree(comm_, [&] {
      if (comm_.root()) evolution_->advance();
    });
  }
  core::enter(phase_, "write");
  SynthSnapshot out;
  const std::uint64_t n = comm_.root() ? particles_.size() : 0;
  std::vector<std::int8_t> bound;
  mpi::agree(comm_, [&] {
    if (!comm_.root()) return;
    const auto& centres = track_.center[si];
    if (scene_.potential) {
      out.potential.resize(n);
      for (std::size_t i = 0; i < n; ++i) out.potential[i] = halos_->potential(&particles_.position[3 * i], centres);
    }
    if (scene_.acceleration) {
      out.acceleration.resize(3 * n);
      for (std::size_t i = 0; i < n; ++i) {
        const Vec3 a = halos_->acceleration(&particles_.position[3 * i], centres);
        for (std::size_t d = 0; d < 3; ++d) out.acceleration[3 * i + d] = a[d];
      }
    }
    bound = bound_flags(particles_, *halos_, centres, track_.velocity[si], scene_.scale_factor());
  });
  const double time = scene_.cosmological ? scene_.scale_factor() : track_.time[si];
  out.header = header_of(scene_, truth_, time);
  out.sampled = comm_.root() ? &particles_ : nullptr;
  out.id.resize(n);
  for (std::uint64_t i = 0; i < n; ++i) out.id[i] = i + 1;
  const bool typed =
      std::any_of(scene_.components.begin(), scene_.components.end(), [](const Component& c) { return c.type != 1; });
  if (typed) {
    out.type.resize(n);
    for (std::uint64_t i = 0; i < n; ++i)
      out.type[i] =
          static_cast<std::uint8_t>(scene_.components[static_cast<std::size_t>(particles_.component[i])].type);
  }

  model::Truth& t = out.truth;
  const SceneUnits u = units_of(scene_);
  t.meta = {name,
            s,
            time,
            track_.time[si] * time_unit_myr(),
            scene_.cosmological ? scene_.redshift : 0.0,
            scene_.seed,
            to_string(scene_.sequence.mode),
            scene_json_,
            u.length,
            u.mass,
            u.velocity,
            {},
            {},
            scene_.overdensity,
            scene_.critical_density()};
  for (const auto& c : truth_) {
    t.meta.names.push_back(c.name);
    t.meta.models.push_back(c.model);
  }
  for (std::uint64_t i = 0; i < n; ++i) t.particles.push_back({i + 1, particles_.component[i], bound[i]});
  if (comm_.root())
    for (std::size_t c = 0; c < truth_.size(); ++c) {
      const ComponentTruth& x = truth_[c];
      t.components.push_back({static_cast<std::int64_t>(x.n_particles), x.first_id, x.halo, x.parent, x.particle_mass,
                              x.mass, x.m200, x.r200, x.concentration, x.scale_radius, x.truncation_radius,
                              x.decay_radius, x.half_mass_radius, track_.center[si][c], track_.velocity[si][c]});
    }
  for (std::size_t i = 0; i < track_.time.size(); ++i) {
    t.track.time.push_back(track_.time[i]);
    t.track.time_myr.push_back(track_.time[i] * time_unit_myr());
    for (std::size_t c = 0; c < truth_.size(); ++c)
      for (std::size_t d = 0; d < 3; ++d) {
        t.track.center.push_back(track_.center[i][c][d]);
        t.track.velocity.push_back(track_.velocity[i][c][d]);
      }
  }
  return out;
}

}  // namespace phew::synth
