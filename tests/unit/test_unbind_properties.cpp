// lib/unbind's properties against analytic answers: a Plummer sphere with fast intruders (bound mass,
// Vmax, Rmax, SO masses), a rigidly rotating uniform sphere (both spins), stretched spheres (axis
// ratios), an NFW halo of c = 10 (Klypin and fitted concentrations), and the helpers on exact input.
#include <phew/unbind/nfw.hpp>
#include <phew/unbind/properties.hpp>
#include <phew/unbind/shape.hpp>
#include <phew/unbind/unbind.hpp>
#include "unbind_samples.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>

namespace phew::unbind::test {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Plummer (G = M = b = 1): M(<r) = r^3 / (r^2 + 1)^3/2, Phi = -1 / sqrt(r^2 + 1).
double plummer_mass(double r) { return r * r * r / std::pow(r * r + 1, 1.5); }
// The radius inside which the mean density is `target`: 3 M(<r) / (4 pi r^3) = 3 / (4 pi (r^2 + 1)^3/2).
double plummer_so_radius(double target) {
  return std::sqrt(std::pow(3 / (4 * std::numbers::pi * target), 2.0 / 3) - 1);
}

TEST(UnbindProperties, PlummerSphereWithFastIntruders) {
  // 1e5 particles of a Plummer sphere from its f(E), and 1000 more drawn at the sphere's radii moving
  // at 1.5 times the local escape speed sqrt(2 |Phi(r)|) in random directions, of the same mass.
  const std::size_t n = 100000, n_fast = 1000;
  const auto t0 = Clock::now();
  Cloud c = sample_halo(plummer(1, 1), n, 11, 1);
  const double mp = c.m[0];
  {
    const synth::Profile prof(plummer(1, 1));
    synth::Rng radius(12, 0, synth::kRadius), direction(12, 0, synth::kDirection);
    for (std::size_t k = 0; k < n_fast; ++k) {
      const double r = prof.radius_of_mass(radius.uniform() * prof.total_mass());
      const Vec u = direction.direction(), w = direction.direction();
      const double s = 1.5 * std::sqrt(2 / std::sqrt(r * r + 1));
      c.add(n + 1 + k, {r * u[0], r * u[1], r * u[2]}, {s * w[0], s * w[1], s * w[2]}, mp);
    }
  }
  const double t_sample = seconds_since(t0);
  Frame f;
  f.critical_density = 3e-5;
  f.omega_m = 0.3;
  f.omega_lambda = 0.7;
  Params p;
  p.centre = CentreKind::shrinking_sphere;
  const auto t1 = Clock::now();
  const ObjectResult r = unbind_object(c.view(), {}, f, p);
  const double t_unbind = seconds_since(t1);
  std::printf("Plummer 1e5 + 1e3 fast: sampled in %.2f s, unbound and measured in %.2f s (%d passes)\n", t_sample,
              t_unbind, r.summary.iterations);
  const Properties& q = r.summary.properties;
  EXPECT_TRUE(r.summary.converged);
  for (std::size_t k = n; k < n + n_fast; ++k)
    ASSERT_EQ(r.bound[k], 0) << "fast particle " << c.id[k] << " stayed bound";
  EXPECT_NEAR(q.mass / 1.0, 1.0, 0.01);
  EXPECT_LT(std::hypot(q.centre[0], q.centre[1], q.centre[2]), 0.05);

  // Vmax^2 = 2 G M / (3 sqrt 3 b) at r = sqrt 2 b.
  EXPECT_NEAR(q.vmax / std::sqrt(2 / (3 * std::sqrt(3.0))), 1.0, 0.02);
  EXPECT_NEAR(q.rmax / std::sqrt(2.0), 1.0, 0.02);
  // SO masses of the bound particles: Delta_vir of Bryan & Norman at a = 1 (Omega_m = 0.3), 200c, 200m, 500c.
  const double x = 0.3 - 1, delta_vir = 18 * std::numbers::pi * std::numbers::pi + 82 * x - 39 * x * x;
  EXPECT_NEAR(q.delta_vir, delta_vir, 1e-9);
  const struct {
    const grid::Overdensity* o;
    double delta;
    const char* name;
  } so[] = {{&q.vir, delta_vir, "vir"}, {&q.c200, 200, "200c"}, {&q.m200, 200 * 0.3, "200m"}, {&q.c500, 500, "500c"}};
  for (const auto& s : so) {
    const double r_so = plummer_so_radius(s.delta * f.critical_density);
    ASSERT_TRUE(s.o->measured()) << s.name;
    EXPECT_NEAR(s.o->radius / r_so, 1.0, 0.02) << s.name;
    EXPECT_NEAR(s.o->mass / plummer_mass(r_so), 1.0, 0.02) << s.name;
  }
  EXPECT_EQ(q.most_bound_ids.size(), p.n_most_bound);
  EXPECT_NEAR(q.virial_ratio, 0.5, 0.02);  // an equilibrium: 2T + U = 0
}

// A uniform sphere (M = R = G = 1) rotating rigidly about z at angular velocity w, cold:
//   J = I w = (2/5) M R^2 w,  T = I w^2 / 2 = M R^2 w^2 / 5,  U = -(3/5) G M^2 / R,
//   Peebles: lambda = J |T + U|^1/2 / (G M^5/2);
//   Bullock: lambda' = J / (sqrt 2 M V R_vir), V^2 = G M / R_vir, all the mass inside R_vir, which is
//   where M alone has the mean density Delta_vir rho_c: R_vir = (3 M / (4 pi Delta rho_c))^1/3 = 1.5 R.
// Every particle is bound: (w R)^2 / 2 = 0.15 < |Phi(R)| = 1.
Cloud rotating_sphere(std::size_t n, double w) {
  Cloud c;
  synth::Rng rng(21, 0, synth::kUniform);
  while (c.size() < n) {
    const Vec x{2 * rng.uniform() - 1, 2 * rng.uniform() - 1, 2 * rng.uniform() - 1};
    if (x[0] * x[0] + x[1] * x[1] + x[2] * x[2] > 1) continue;
    c.add(c.size() + 1, x, {-w * x[1], w * x[0], 0}, 1.0 / static_cast<double>(n));
  }
  return c;
}

TEST(UnbindProperties, RigidlyRotatingSphereHasItsSpin) {
  const double w = std::sqrt(0.3);
  const Cloud c = rotating_sphere(20000, w);
  const double J = 0.4 * w, E = 0.2 * w * w - 0.6;
  const double peebles = J * std::sqrt(std::abs(E));
  const double delta = 18 * std::numbers::pi * std::numbers::pi;  // Omega_m = 1
  Frame f;
  f.omega_m = 1;
  f.critical_density = 3 / (4 * std::numbers::pi * delta * 1.5 * 1.5 * 1.5);
  const double bullock = J / (std::numbers::sqrt2 * std::sqrt(1.5));
  for (const PotentialMode mode : {PotentialMode::profile, PotentialMode::tree}) {
    Params p;
    p.potential = mode;
    p.centre = CentreKind::centre_of_mass;
    const auto t0 = Clock::now();
    const ObjectResult r = unbind_object(c.view(), {}, f, p);
    const Properties& q = r.summary.properties;
    std::printf("rotating sphere, %s: lambda %.4f (%.4f), lambda' %.4f (%.4f), %.2f s\n", to_string(mode).c_str(),
                q.spin_peebles, peebles, q.spin_bullock, bullock, seconds_since(t0));
    EXPECT_EQ(q.n_bound, 20000) << to_string(mode);
    EXPECT_NEAR(q.spin_peebles / peebles, 1.0, 0.05) << to_string(mode);
    EXPECT_NEAR(q.spin_bullock / bullock, 1.0, 0.05) << to_string(mode);
    EXPECT_NEAR(q.vir.radius, 1.5, 1e-9) << to_string(mode);
    EXPECT_NEAR(q.angular_momentum[2] / J, 1.0, 0.03);
  }
}

TEST(UnbindProperties, StretchedSpheresHaveTheirAxisRatios) {
  // A Plummer sphere stretched by (1, q, s) along rotated axes is stratified on similar ellipsoids:
  // its reduced inertia tensor inside any similar ellipsoid has axis ratios q and s exactly.
  const Cloud sphere = sample_halo(plummer(1, 1), 20000, 31, 1);
  const double ct = std::cos(0.4), st = std::sin(0.4);
  // The stretched x axis is rotated by 0.4 rad about z.
  const std::array<Vec, 3> axes{Vec{ct, st, 0}, Vec{-st, ct, 0}, Vec{0, 0, 1}};
  for (const Vec& ratios : {Vec{1, 0.5, 0.5}, Vec{1, 1, 0.4}, Vec{1, 0.7, 0.4}}) {
    Cloud c;
    for (std::size_t i = 0; i < sphere.size(); ++i) {
      const Vec x = sphere.pos(i);
      Vec y{0, 0, 0};
      for (std::size_t a = 0; a < 3; ++a)
        for (std::size_t d = 0; d < 3; ++d) y[d] += ratios[a] * x[a] * axes[a][d];
      c.add(sphere.id[i], y, {0, 0, 0}, sphere.m[i]);
    }
    Frame f;
    f.critical_density = 3e-4;
    f.omega_m = 1;
    const ObjectResult r = unbind_object(c.view(), {}, f, {});
    const Properties& q = r.summary.properties;
    std::printf("stretched (1, %.1f, %.1f): b/a %.4f, c/a %.4f, Rvir %.3f\n", ratios[1], ratios[2], q.b_to_a, q.c_to_a,
                q.vir.radius);
    EXPECT_NEAR(q.b_to_a / ratios[1], 1.0, 0.03);
    EXPECT_NEAR(q.c_to_a / ratios[2], 1.0, 0.03);
    if (ratios[1] < 0.9) {
      EXPECT_GT(std::abs(q.major_axis[0] * ct + q.major_axis[1] * st), 0.99);
    }
  }
}

TEST(UnbindProperties, NfwConcentrationBothWays) {
  // NFW with c = R200c / r_s = 10, M200c = 1, R200c = 1 (rho_c = 3 / (800 pi), G = 1), tapered beyond
  // 2 R200c; 1e5 particles from its f(E).
  const double rho_c = 3 / (800 * std::numbers::pi);
  const Cloud c = sample_halo(synth::nfw_from_m200(1, 10, rho_c, 200, 2, 0.1, 1), 100000, 41, 1);
  Frame f;
  f.critical_density = rho_c;
  f.omega_m = 0.3;
  f.omega_lambda = 0.7;
  const auto t0 = Clock::now();
  const ObjectResult r = unbind_object(c.view(), {}, f, {});
  const Properties& q = r.summary.properties;
  const double c_klypin = q.c200.radius / q.rs_klypin, c_fit = q.c200.radius / q.rs_fit;
  std::printf("NFW c = 10: Klypin %.3f, fit %.3f, M200c %.4f, %.2f s\n", c_klypin, c_fit, q.c200.mass,
              seconds_since(t0));
  EXPECT_NEAR(q.c200.mass, 1.0, 0.02);
  EXPECT_NEAR(q.c200.radius, 1.0, 0.01);
  EXPECT_NEAR(c_klypin / 10, 1.0, 0.05);
  EXPECT_NEAR(c_fit / 10, 1.0, 0.05);
  // Vmax = V200 sqrt(0.2162 c / mu(c)) at 2.1626 r_s.
  const double vmax = std::sqrt(0.21622 * 10 / nfw_mu(10));
  EXPECT_NEAR(q.vmax / vmax, 1.0, 0.01);
}

TEST(UnbindHelpers, KlypinInvertsItsRelation) {
  for (const double c : {3.0, 10.0, 40.0}) {
    const double ratio = std::sqrt(0.216 * c / nfw_mu(c));
    EXPECT_NEAR(klypin_concentration(ratio), c, 1e-8 * c);
  }
  EXPECT_TRUE(std::isnan(klypin_concentration(0.9)));  // Vmax below V_Delta: no NFW halo
}

TEST(UnbindHelpers, NfwFitOnExactShellMasses) {
  // "Particles" carrying the exact NFW mass of thin shells: the fit returns the scale radius.
  const double rs = 0.13, R = 1.3;
  std::vector<double> r, m;
  for (int k = 0; k < 20000; ++k) {
    const double lo = R * 1e-4 * std::pow(1e4, k / 20000.0), hi = R * 1e-4 * std::pow(1e4, (k + 1) / 20000.0);
    r.push_back(std::sqrt(lo * hi));
    m.push_back(nfw_mu(hi / rs) - nfw_mu(lo / rs));
  }
  EXPECT_NEAR(fit_nfw_scale_radius(r, m, R, {}) / rs, 1.0, 2e-3);
}

TEST(UnbindHelpers, EigenAndCircularVelocity) {
  // A rotation of diag(9, 4, 1).
  const double ct = std::cos(0.3), st = std::sin(0.3);
  const std::array<std::array<double, 3>, 3> m{{{9 * ct * ct + 4 * st * st, (9 - 4) * ct * st, 0},
                                                {(9 - 4) * ct * st, 9 * st * st + 4 * ct * ct, 0},
                                                {0, 0, 1}}};
  const Eigen3 e = symmetric_eigen(m);
  EXPECT_NEAR(e.value[0], 9, 1e-12);
  EXPECT_NEAR(e.value[1], 4, 1e-12);
  EXPECT_NEAR(e.value[2], 1, 1e-12);
  EXPECT_NEAR(std::abs(e.vector[0][0] * ct + e.vector[0][1] * st), 1, 1e-12);
  // Masses on a smooth Plummer curve: the parabola finds sqrt(2) and sqrt(2 / (3 sqrt 3)), up to the
  // bias of a parabola on the asymmetric peak over a 5% window (0.5% in Rmax, 1e-4 in Vmax).
  std::vector<double> r, mass;
  double before = 0;
  for (int k = 1; k <= 4000; ++k) {
    r.push_back(0.01 * k);
    mass.push_back(plummer_mass(0.01 * k) - before);
    before = plummer_mass(0.01 * k);
  }
  const CircularVelocityPeak pk = circular_velocity_peak(r, mass, 1, 1, 0, 0.05);
  EXPECT_NEAR(pk.rmax / std::sqrt(2.0), 1, 0.01);
  EXPECT_NEAR(pk.vmax / std::sqrt(2 / (3 * std::sqrt(3.0))), 1, 5e-4);
}

// The per-type properties from the bound flags and the centre, serially and directly: an independent
// reference for measure_by_type.
struct TypeReference {
  std::int64_t n = 0;
  double mass = 0, half_mass_radius = 0, dispersion = 0;
  std::vector<double> aperture;
};
TypeReference type_reference(const Cloud& c, const std::vector<std::uint8_t>& type, const std::vector<std::uint8_t>& in,
                             int want, const Vec& centre, const std::vector<double>& apertures) {
  TypeReference r;
  r.aperture.assign(apertures.size(), 0.0);
  std::vector<std::pair<double, double>> radius_mass;
  Vec mv{0, 0, 0};
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!in[i] || type[i] != want) continue;
    ++r.n;
    r.mass += c.m[i];
    const double d = std::hypot(c.x[3 * i] - centre[0], c.x[3 * i + 1] - centre[1], c.x[3 * i + 2] - centre[2]);
    radius_mass.emplace_back(d, c.m[i]);
    for (std::size_t k = 0; k < apertures.size(); ++k)
      if (d <= apertures[k]) r.aperture[k] += c.m[i];
    for (std::size_t a = 0; a < 3; ++a) mv[a] += c.m[i] * c.v[3 * i + a];
  }
  // M(<= r) linear between the particles' radii, from 0 at r = 0: where it reaches half.
  std::sort(radius_mass.begin(), radius_mass.end());
  double enclosed = 0, before = 0;
  for (const auto& [d, m] : radius_mass) {
    if (enclosed + m >= r.mass / 2) {
      r.half_mass_radius = before + (d - before) * (r.mass / 2 - enclosed) / m;
      break;
    }
    enclosed += m;
    before = d;
  }
  double s = 0;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (in[i] && type[i] == want)
      for (std::size_t a = 0; a < 3; ++a) s += c.m[i] * std::pow(c.v[3 * i + a] - mv[a] / r.mass, 2);
  r.dispersion = std::sqrt(s / (3 * r.mass));
  return r;
}

TEST(UnbindTypes, StellarHernquistSphereInsideAPlummerHalo) {
  // 40,000 dark-matter particles (type 1) of a Plummer sphere (M = 1, b = 1) and 20,000 stars (type 4) of
  // a Hernquist sphere (M = 0.05, a = 0.2) drawn from its own f(E): deeper in the joint well, every star
  // stays bound, and its half-mass radius is (1 + sqrt 2) a.
  Cloud c = sample_halo(plummer(1, 1), 40000, 21, 1);
  synth::ProfileSpec stars;
  stars.model = synth::ProfileModel::hernquist;
  stars.mass = 0.05;
  stars.scale_radius = 0.2;
  c.append(sample_halo(stars, 20000, 22, 100001));
  std::vector<std::uint8_t> type(c.size(), 1), fixed(c.size(), 0);
  std::fill(type.begin() + 40000, type.end(), std::uint8_t{4});
  // Every other star bound to a sub-object: in the inclusive columns, not the own ones.
  for (std::size_t i = 40000; i < c.size(); i += 2) fixed[i] = 1;
  Params p;
  p.centre = CentreKind::shrinking_sphere;
  p.types = {1, 4};
  p.apertures = {0.3, 1.0};
  const ObjectResult r = unbind_object({c.id, c.x, c.v, c.m, fixed, type}, {}, Frame{}, p);
  const Properties& q = r.summary.properties;
  ASSERT_EQ(q.by_type.size(), 2u);
  ASSERT_EQ(q.by_type_inclusive.size(), 2u);

  // The truth: every star bound, half of them own; the half-mass radius within sampling noise.
  EXPECT_EQ(q.by_type_inclusive[1].n_bound, 20000);
  EXPECT_EQ(q.by_type[1].n_bound, 10000);
  EXPECT_NEAR(q.by_type_inclusive[1].mass, 0.05, 1e-12);
  EXPECT_NEAR(q.by_type_inclusive[1].half_mass_radius / ((1 + std::numbers::sqrt2) * 0.2), 1, 0.03);
  EXPECT_NEAR(q.by_type[0].mass + q.by_type[1].mass, q.mass, 1e-10);  // summed in other orders
  EXPECT_NEAR(q.by_type_inclusive[0].mass + q.by_type_inclusive[1].mass, q.mass_inclusive, 1e-10);

  // Against the direct computation from the bound flags and the centre, own and inclusive.
  std::vector<std::uint8_t> own(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) own[i] = r.bound[i] && !fixed[i];
  for (const bool inclusive : {false, true}) {
    for (std::size_t t = 0; t < 2; ++t) {
      const TypeProperties& got = inclusive ? q.by_type_inclusive[t] : q.by_type[t];
      const TypeReference want = type_reference(c, type, inclusive ? r.bound : own, p.types[t], q.centre, p.apertures);
      SCOPED_TRACE(::testing::Message() << "type " << p.types[t] << (inclusive ? " inclusive" : " own"));
      EXPECT_EQ(got.n_bound, want.n);
      EXPECT_NEAR(got.mass / want.mass, 1, 1e-12);
      EXPECT_NEAR(got.half_mass_radius / want.half_mass_radius, 1, 1e-12);
      EXPECT_NEAR(got.velocity_dispersion / want.dispersion, 1, 1e-10);
      for (std::size_t k = 0; k < p.apertures.size(); ++k)
        EXPECT_NEAR(got.aperture_mass[k], want.aperture[k], 1e-12) << "aperture " << p.apertures[k];
    }
  }
  EXPECT_GT(q.by_type[0].aperture_mass[0], 0);
}

}  // namespace
}  // namespace phew::unbind::test
