// Particle sets for the unbind tests: halos sampled from their distribution functions by lib/synth,
// uniform spheres, and a byte image of a result (for the order-independence checks).
#pragma once

#include <phew/synth/eddington.hpp>
#include <phew/synth/profiles.hpp>
#include <phew/synth/random.hpp>
#include <phew/unbind/unbind.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

namespace phew::unbind::test {

using Vec = std::array<double, 3>;

struct Cloud {
  std::vector<std::uint64_t> id;
  std::vector<double> x, v, m;

  std::size_t size() const { return m.size(); }
  void add(std::uint64_t i, const Vec& pos, const Vec& vel, double mass) {
    id.push_back(i);
    x.insert(x.end(), pos.begin(), pos.end());
    v.insert(v.end(), vel.begin(), vel.end());
    m.push_back(mass);
  }
  void append(const Cloud& o) {
    id.insert(id.end(), o.id.begin(), o.id.end());
    x.insert(x.end(), o.x.begin(), o.x.end());
    v.insert(v.end(), o.v.begin(), o.v.end());
    m.insert(m.end(), o.m.begin(), o.m.end());
  }
  Vec pos(std::size_t i) const { return {x[3 * i], x[3 * i + 1], x[3 * i + 2]}; }
  Vec vel(std::size_t i) const { return {v[3 * i], v[3 * i + 1], v[3 * i + 2]}; }
  ObjectParticles view() const { return {id, x, v, m, {}}; }
  // The same particles in the order perm (perm[k] = the particle put k-th).
  Cloud permuted(const std::vector<std::size_t>& perm) const {
    Cloud c;
    for (const std::size_t i : perm) c.add(id[i], pos(i), vel(i), m[i]);
    return c;
  }
};

// n particles of a spherical halo in equilibrium (isotropic, from f(E) by lib/synth), IDs first_id...,
// equal masses adding up to the model's whole mass, around `centre` moving with `bulk`.
inline Cloud sample_halo(const synth::ProfileSpec& spec, std::size_t n, std::uint64_t seed, std::uint64_t first_id,
                         const Vec& centre = {0, 0, 0}, const Vec& bulk = {0, 0, 0}) {
  const synth::Profile profile(spec);
  const synth::DistributionFunction df(profile);
  synth::Rng radius(seed, 0, synth::kRadius), direction(seed, 0, synth::kDirection), speed(seed, 0, synth::kVelocity);
  const double mp = profile.total_mass() / static_cast<double>(n);
  Cloud c;
  for (std::size_t k = 0; k < n; ++k) {
    const double r = profile.radius_of_mass(radius.uniform() * profile.total_mass());
    const Vec u = direction.direction();
    const double s = df.sample_speed(r, speed);
    const Vec w = direction.direction();
    c.add(first_id + k, {centre[0] + r * u[0], centre[1] + r * u[1], centre[2] + r * u[2]},
          {bulk[0] + s * w[0], bulk[1] + s * w[1], bulk[2] + s * w[2]}, mp);
  }
  return c;
}

inline synth::ProfileSpec plummer(double mass, double b, double G = 1) {
  synth::ProfileSpec s;
  s.model = synth::ProfileModel::plummer;
  s.mass = mass;
  s.scale_radius = b;
  s.G = G;
  return s;
}

// A deterministic permutation of 0..n-1 (Fisher-Yates on synth's generator).
inline std::vector<std::size_t> shuffled(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> p(n);
  std::iota(p.begin(), p.end(), std::size_t{0});
  synth::Rng rng(seed, 0, synth::kUniform);
  for (std::size_t i = n; i > 1; --i) std::swap(p[i - 1], p[rng.bits() % i]);
  return p;
}

// Every field of a summary as bytes (doubles bit for bit).
inline void put_bytes(std::vector<unsigned char>& out, const void* p, std::size_t n) {
  const auto* c = static_cast<const unsigned char*>(p);
  out.insert(out.end(), c, c + n);
}
inline std::vector<unsigned char> bytes_of(const ObjectSummary& s) {
  std::vector<unsigned char> b;
  auto put = [&](const auto& v) { put_bytes(b, &v, sizeof(v)); };
  put(s.n_particles), put(s.n_fixed), put(s.n_removed), put(s.n_received), put(s.iterations), put(s.converged);
  put(s.dissolved), put(s.threshold);
  const Properties& p = s.properties;
  put(p.n_bound), put(p.n_bound_inclusive), put(p.mass), put(p.mass_inclusive), put(p.centre), put(p.centre_of_mass);
  put(p.bulk_velocity), put(p.vrms), put(p.vmax), put(p.rmax), put(p.angular_momentum), put(p.kinetic);
  put(p.potential), put(p.virial_ratio), put(p.spin_peebles), put(p.spin_bullock), put(p.delta_vir);
  for (const grid::Overdensity* o : {&p.vir, &p.c200, &p.m200, &p.c500})
    put(o->radius), put(o->mass), put(o->n_particles);
  put(p.rs_klypin), put(p.concentration_klypin), put(p.rs_fit), put(p.concentration_fit), put(p.b_to_a);
  put(p.c_to_a), put(p.major_axis), put(p.xoff);
  put_bytes(b, p.most_bound_ids.data(), p.most_bound_ids.size() * sizeof(std::uint64_t));
  return b;
}

}  // namespace phew::unbind::test
