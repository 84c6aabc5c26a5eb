#include <phew/synth/realize.hpp>

#include <phew/core/error.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/particles/particle_set.hpp>
#include <phew/synth/random.hpp>
#include <phew/synth/zeldovich.hpp>

#include <cmath>
#include <numbers>

namespace phew::synth {
namespace {

constexpr double kPi = std::numbers::pi;

// r200 of a sampled model: where the mean enclosed density falls to overdensity * rho_crit (bisection
// in ln r; the mean density of these profiles falls monotonically). 0 when it never gets that dense.
double radius_200(const Profile& p, double critical_density, double overdensity) {
  auto excess = [&](double r) {
    return p.enclosed_mass(r) / (4.0 / 3.0 * kPi * r * r * r) - overdensity * critical_density;
  };
  double lo = p.inner_radius(), hi = p.outer_radius();
  if (excess(lo) <= 0) return 0;
  if (excess(hi) > 0) return hi;
  for (int it = 0; it < 200 && hi - lo > 1e-14 * hi; ++it) {
    const double mid = std::sqrt(lo * hi);
    (excess(mid) > 0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

double gravitational_constant() {
  particles::Units u;
  u.h_scaled = false;
  return u.gravitational_constant();
}

double time_unit_myr() {
  const particles::Units u;
  return u.length_cm / u.velocity_cm_per_s / 3.15576e13;  // Julian Myr
}

HaloSet::HaloSet(const Scene& scene) : halos_(scene.components.size()), box_(scene.box) {
  const double G = gravitational_constant(), rho_c = scene.critical_density();
  for (std::size_t i = 0; i < scene.components.size(); ++i) {
    const Component& c = scene.components[i];
    if (!c.is_halo()) continue;
    ProfileSpec spec;
    if (c.model == ComponentModel::nfw) {
      spec = nfw_from_m200(c.mass, c.concentration, rho_c, scene.overdensity, c.truncation, c.decay, G);
    } else {
      spec.model = c.model == ComponentModel::plummer ? ProfileModel::plummer : ProfileModel::hernquist;
      spec.mass = c.mass;
      spec.scale_radius = c.scale_radius;
      spec.truncation_radius = c.truncation * c.scale_radius;
      spec.decay_radius = c.decay * spec.truncation_radius;
      spec.G = G;
    }
    Halo& h = halos_[i];
    h.profile = std::make_unique<Profile>(spec);
    h.df = std::make_unique<DistributionFunction>(*h.profile);
    h.jeans = std::make_unique<JeansDispersion>(*h.profile);
    h.r200 = radius_200(*h.profile, rho_c, scene.overdensity);
    h.m200 = h.r200 > 0 ? h.profile->enclosed_mass(h.r200) : 0.0;
  }
}

double HaloSet::smallest_scale_radius() const {
  double s = INFINITY;
  for (const auto& h : halos_)
    if (h.profile) s = std::min(s, h.profile->spec().scale_radius);
  return s;
}

Vec3 HaloSet::separation(const double* x, const Vec3& c) const {
  Vec3 d{x[0] - c[0], x[1] - c[1], x[2] - c[2]};
  if (box_ > 0)
    for (double& v : d) v -= box_ * std::nearbyint(v / box_);
  return d;
}

double HaloSet::potential(const double* x, const std::vector<Vec3>& centers) const {
  double phi = 0;
  for (std::size_t h = 0; h < halos_.size(); ++h) {
    if (!halos_[h].profile) continue;
    const Vec3 d = separation(x, centers[h]);
    phi += halos_[h].profile->potential(std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
  }
  return phi;
}

Vec3 HaloSet::acceleration(const double* x, const std::vector<Vec3>& centers) const {
  Vec3 a{0, 0, 0};
  for (std::size_t h = 0; h < halos_.size(); ++h) {
    if (!halos_[h].profile) continue;
    const Vec3 d = separation(x, centers[h]);
    const double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (r2 == 0) continue;  // the force of a spherical halo vanishes at its centre
    const double r = std::sqrt(r2);
    const Profile& p = *halos_[h].profile;
    const double g = -p.spec().G * p.enclosed_mass(r) / (r2 * r);
    for (int k = 0; k < 3; ++k) a[static_cast<std::size_t>(k)] += g * d[static_cast<std::size_t>(k)];
  }
  return a;
}

double realization_bytes(const Scene& scene) {
  double bytes = 0;
  for (const auto& c : scene.components) {
    bytes += 60.0 * static_cast<double>(c.particles);  // position, velocity, mass, component
    if (c.model == ComponentModel::zeldovich) bytes += kZeldovichBytesPerParticle * static_cast<double>(c.particles);
  }
  return bytes;
}

std::vector<ComponentTruth> describe(const Scene& scene, const HaloSet& halos) {
  std::vector<ComponentTruth> out;
  std::uint64_t first = 0;
  const double rho_c = scene.critical_density();
  for (std::size_t i = 0; i < scene.components.size(); ++i) {
    const Component& c = scene.components[i];
    ComponentTruth t;
    t.name = c.name;
    t.model = to_string(c.model);
    t.halo = c.is_halo();
    t.parent = c.host;
    t.n_particles = c.particles;
    t.first_id = first + 1;
    t.center = c.center;
    t.velocity = c.bulk_velocity;
    if (c.is_halo()) {
      const Profile& prof = halos.profile(i);
      t.mass = prof.total_mass();
      t.m200 = halos.m200(i);
      t.r200 = halos.r200(i);
      t.concentration = c.model == ComponentModel::nfw ? c.concentration : 0.0;
      t.scale_radius = prof.spec().scale_radius;
      t.truncation_radius = prof.spec().truncation_radius;
      t.decay_radius = prof.spec().decay_radius;
      t.half_mass_radius = prof.half_mass_radius();
    } else {
      // A background without a mass holds the cosmic matter density of its volume.
      const double side = c.model == ComponentModel::uniform ? c.size : scene.box;
      t.mass = c.mass > 0 ? c.mass : scene.omega_m * rho_c * side * side * side;
    }
    t.particle_mass = t.mass / static_cast<double>(c.particles);
    first += c.particles;
    out.push_back(t);
  }
  return out;
}

Particles sample(const Scene& scene, const HaloSet& halos, const std::vector<ComponentTruth>& truth) {
  Particles p;
  const std::uint64_t total = scene.total_particles();
  p.position.reserve(3 * total);
  p.velocity.reserve(3 * total);
  p.mass.reserve(total);
  p.component.reserve(total);
  const double inv_sqrt_a = 1.0 / std::sqrt(scene.scale_factor());

  for (std::size_t i = 0; i < scene.components.size(); ++i) {
    const Component& c = scene.components[i];
    const std::uint64_t n = c.particles;
    if (c.is_halo()) {
      // Radius by inverting M(<r) exactly, an isotropic direction, a speed from f(E) at that radius and
      // an isotropic velocity direction: each from its own stream.
      const Profile& prof = halos.profile(i);
      const DistributionFunction& df = halos.df(i);
      Rng radius(scene.seed, i, kRadius), direction(scene.seed, i, kDirection), speed(scene.seed, i, kVelocity);
      const double m_total = prof.total_mass();
      for (std::uint64_t k = 0; k < n; ++k) {
        const double r = prof.radius_of_mass(radius.uniform() * m_total);
        const Vec3 u = direction.direction();
        const double v = df.sample_speed(r, speed);
        const Vec3 w = direction.direction();
        for (std::size_t d = 0; d < 3; ++d) {
          p.position.push_back(grid::wrap_position(c.center[d] + r * u[d], scene.box));
          p.velocity.push_back((c.bulk_velocity[d] + v * w[d]) * inv_sqrt_a);
        }
      }
    } else if (c.model == ComponentModel::uniform) {
      Rng place(scene.seed, i, kUniform), speed(scene.seed, i, kVelocity);
      for (std::uint64_t k = 0; k < 3 * n; ++k)
        p.position.push_back(grid::wrap_position(c.center[k % 3] - 0.5 * c.size + c.size * place.uniform(), scene.box));
      for (std::uint64_t k = 0; k < 3 * n; ++k)
        p.velocity.push_back(c.velocity_dispersion * speed.normal() * inv_sqrt_a);
    } else {
      ZeldovichSpec z;
      z.n_side = c.lattice_side();
      z.box = scene.box;
      z.sigma8 = c.sigma8;
      z.spectrum = c.spectrum;
      z.index = c.index;
      z.omega_m = scene.omega_m;
      z.omega_lambda = scene.omega_lambda;
      z.hubble = scene.hubble;
      z.redshift = scene.redshift;
      Rng noise(scene.seed, i, kNoise);
      zeldovich_lattice(z, noise, p.position, p.velocity);
    }
    p.mass.insert(p.mass.end(), n, truth[i].particle_mass);
    p.component.insert(p.component.end(), n, static_cast<std::int32_t>(i));
  }
  return p;
}

std::vector<std::int8_t> bound_flags(const Particles& p, const HaloSet& halos, const std::vector<Vec3>& centers,
                                     const std::vector<Vec3>& velocities, double scale_factor) {
  std::vector<std::int8_t> out(p.size(), 0);
  const double sqrt_a = std::sqrt(scale_factor);
  for (std::size_t i = 0; i < p.size(); ++i) {
    const auto c = static_cast<std::size_t>(p.component[i]);
    if (!halos.is_halo(c)) continue;
    const Vec3 d = halos.separation(&p.position[3 * i], centers[c]);
    double v2 = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      const double v = p.velocity[3 * i + k] * sqrt_a - velocities[c][k];
      v2 += v * v;
    }
    const double e = 0.5 * v2 + halos.profile(c).potential(std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
    out[i] = e < 0 ? 1 : 0;
  }
  return out;
}

}  // namespace phew::synth
