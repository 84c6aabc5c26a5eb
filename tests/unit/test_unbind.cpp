// lib/unbind's unbinding: against a serial direct-summation reference written here (tree and profile
// modes, saddle threshold, Hubble flow, periodic wrap), a subhalo crossed by host particles through the
// hierarchy, dissolution, bad links, and identical bytes whatever the order of the particles.
#include <phew/core/error.hpp>
#include <phew/unbind/hierarchy.hpp>
#include <phew/unbind/unbind.hpp>
#include "unbind_samples.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

namespace phew::unbind::test {
namespace {

// The reference: the whole unbinding by direct summation, as docs/unbind-method.md defines it, with
// the density peak as the centre. Physical separations a * (x - peak) through the nearest image,
// velocities v + H a (x - peak); every pass takes the bound set's mean velocity and the potential of
// the bound set (or of every particle, `of_all`) at each bound particle, and removes those whose
// energy is not below the threshold (0, or the spherical potential of that set at a * saddle_radius
// from the peak).
struct Reference {
  std::vector<char> bound;
  std::vector<double> energy, phi;
};

Reference reference_unbind(const Cloud& c, const Frame& f, const Vec& peak, double saddle_radius, bool of_all) {
  const std::size_t n = c.size();
  const double a = f.scale_factor, eps = a * f.softening;
  std::vector<Vec> x(n), u(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t d = 0; d < 3; ++d) {
      double dx = c.x[3 * i + d] - peak[d];
      if (f.box.periodic) dx -= f.box.extent[d] * std::round(dx / f.box.extent[d]);
      x[i][d] = a * dx;
      u[i][d] = c.v[3 * i + d] + f.hubble * a * dx;
    }
  Reference r{std::vector<char>(n, 1), std::vector<double>(n, 0), std::vector<double>(n, 0)};
  for (;;) {
    double M = 0;
    Vec V{0, 0, 0};
    for (std::size_t i = 0; i < n; ++i)
      if (r.bound[i]) {
        M += c.m[i];
        for (std::size_t d = 0; d < 3; ++d) V[d] += c.m[i] * u[i][d];
      }
    for (double& w : V) w /= M;
    double threshold = 0;
    if (saddle_radius > 0) {
      const double R = a * saddle_radius;
      for (std::size_t j = 0; j < n; ++j)
        if (r.bound[j] || of_all) {
          const double rj = std::hypot(x[j][0], x[j][1], x[j][2]);
          threshold -= f.G * c.m[j] / std::sqrt(std::max(rj, R) * std::max(rj, R) + eps * eps);
        }
    }
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < n; ++i) {
      if (!r.bound[i]) continue;
      double phi = 0;
      for (std::size_t j = 0; j < n; ++j)
        if (j != i && (r.bound[j] || of_all)) {
          const double d2 = (x[i][0] - x[j][0]) * (x[i][0] - x[j][0]) + (x[i][1] - x[j][1]) * (x[i][1] - x[j][1]) +
                            (x[i][2] - x[j][2]) * (x[i][2] - x[j][2]);
          phi -= f.G * c.m[j] / std::sqrt(d2 + eps * eps);
        }
      const double k = 0.5 * ((u[i][0] - V[0]) * (u[i][0] - V[0]) + (u[i][1] - V[1]) * (u[i][1] - V[1]) +
                              (u[i][2] - V[2]) * (u[i][2] - V[2]));
      r.phi[i] = phi;
      r.energy[i] = k + phi;
      if (!(r.energy[i] < threshold)) out.push_back(i);
    }
    if (out.empty()) return r;
    for (const std::size_t i : out) r.bound[i] = 0;
  }
}

// A small object: a Plummer sphere (M = 1, b = 1) of n particles plus n/4 field particles spread
// uniformly over a cube of side 8 with Gaussian velocities of dispersion 0.5, all of one mass, around
// `centre`. Some field particles are bound, most are not.
Cloud small_object(std::size_t n, std::uint64_t seed, const Vec& centre) {
  Cloud c = sample_halo(plummer(1, 1), n, seed, 1, centre);
  synth::Rng rng(seed, 1, synth::kUniform);
  for (std::size_t k = 0; k < n / 4; ++k) {
    const Vec x{centre[0] + 8 * rng.uniform() - 4, centre[1] + 8 * rng.uniform() - 4,
                centre[2] + 8 * rng.uniform() - 4};
    c.add(n + 1 + k, x, {0.5 * rng.normal(), 0.5 * rng.normal(), 0.5 * rng.normal()}, c.m[0]);
  }
  return c;
}

struct Comparison {
  std::size_t differ = 0, worst_index = 0;
  double worst_margin = 0;  // largest |E_ref / Phi_ref| among the particles classified differently
  double energy_error = 0;  // largest |E - E_ref| / |Phi_ref| over the particles bound in both
  double mass_ref = 0, mass = 0;
};

Comparison compare(const Cloud& c, const Reference& ref, const ObjectResult& r) {
  Comparison cmp;
  for (std::size_t i = 0; i < c.size(); ++i) {
    cmp.mass_ref += ref.bound[i] ? c.m[i] : 0;
    cmp.mass += r.bound[i] ? c.m[i] : 0;
    if ((ref.bound[i] != 0) != (r.bound[i] != 0)) {
      ++cmp.differ;
      cmp.worst_margin = std::max(cmp.worst_margin, std::abs(ref.energy[i] / ref.phi[i]));
    } else if (ref.bound[i]) {
      cmp.energy_error = std::max(cmp.energy_error, std::abs(r.energy[i] - ref.energy[i]) / std::abs(ref.phi[i]));
    }
  }
  return cmp;
}

TEST(Unbind, TreeModeAgreesWithDirectSummationReference) {
  // Four objects: open box; a cosmological frame (a = 0.5, H = 0.3, softening) across a periodic
  // boundary; the same in the potential of every particle given, and with a saddle threshold.
  struct Case {
    const char* name;
    Frame frame;
    Vec centre;
    double saddle;
    bool of_all;
  };
  Frame open;
  Frame cosmo;
  cosmo.box = {{0, 0, 0}, {40, 40, 40}, true};
  cosmo.scale_factor = 0.5;
  cosmo.hubble = 0.3;
  cosmo.G = 0.5;  // physical lengths are halved: G = a keeps the potential of the comoving object as deep
  cosmo.softening = 0.05;
  const Case cases[] = {{"open", open, {0, 0, 0}, 0, false},
                        {"cosmological, periodic", cosmo, {0.5, 39.8, 20}, 0, false},
                        {"potential of all", cosmo, {0.5, 39.8, 20}, 0, true},
                        {"saddle, potential of all", cosmo, {0.5, 39.8, 20}, 1.5, true}};
  std::uint64_t seed = 51;
  for (const Case& cs : cases) {
    Cloud c = small_object(800, seed++, cs.centre);
    for (double& x : c.x) x = grid::wrap_position(x, cs.frame.box.periodic ? 40.0 : 0.0);
    const auto t0 = std::chrono::steady_clock::now();
    const Reference ref = reference_unbind(c, cs.frame, cs.centre, cs.saddle, cs.of_all);
    const double t_ref = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ObjectSpec spec;
    spec.peak = cs.centre;
    spec.saddle_radius = cs.saddle;
    // Tree mode forced to the tree (direct_below = 0), then with its default: direct summation here.
    Params tree;
    tree.potential = PotentialMode::tree;
    tree.direct_below = 0;
    tree.min_bound = 1;
    tree.saddle = true;
    tree.potential_of_all = cs.of_all;
    Params direct = tree;
    direct.direct_below = Params{}.direct_below;
    const ObjectResult rt = unbind_object(c.view(), spec, cs.frame, tree);
    const ObjectResult rd = unbind_object(c.view(), spec, cs.frame, direct);
    const Comparison ct = compare(c, ref, rt), cd = compare(c, ref, rd);
    std::printf(
        "%s: reference bound %.4f (%.2f s); tree %.4f, %zu differ (|E/Phi| <= %.3g), E within %.2g |Phi|; "
        "direct %.4f, %zu differ, E within %.2g |Phi|\n",
        cs.name, ct.mass_ref, t_ref, ct.mass, ct.differ, ct.worst_margin, ct.energy_error, cd.mass, cd.differ,
        cd.energy_error);
    EXPECT_GT(ct.mass_ref, cs.saddle > 0 ? 0.3 : 0.5) << cs.name;
    EXPECT_LT(ct.mass_ref, 1.2) << cs.name;
    // Tree: at most 0.5% of the particles classified differently, each within 2% of the threshold,
    // and energies within 1% of |Phi| where both bind.
    EXPECT_LE(ct.differ, c.size() / 200) << cs.name;
    EXPECT_LT(ct.worst_margin, 0.02) << cs.name;
    EXPECT_LT(ct.energy_error, 0.01) << cs.name;
    // Direct summation: the reference's answer, up to the order of the sums.
    EXPECT_EQ(cd.differ, 0u) << cs.name;
    EXPECT_LT(cd.energy_error, 1e-9) << cs.name;
  }
}

TEST(Unbind, ProfileModeAgreesLooselyOnSphericalObjects) {
  // The spherical potential is exact for a spherical object only on average: on a Plummer sphere with
  // field particles, the bound mass within 2% of the reference's, each differing particle within 10%
  // of |Phi| of the threshold, energies of the particles bound in both within 10% of |Phi|.
  for (const std::uint64_t seed : {61, 62}) {
    const Cloud c = small_object(1000, seed, {0, 0, 0});
    const Reference ref = reference_unbind(c, {}, {0, 0, 0}, 0, false);
    const ObjectResult r = unbind_object(c.view(), {}, {}, {});
    const Comparison cmp = compare(c, ref, r);
    std::printf(
        "profile vs reference (seed %llu): bound %.4f vs %.4f, %zu differ (|E/Phi| <= %.3g), E within %.2g |Phi|\n",
        static_cast<unsigned long long>(seed), cmp.mass, cmp.mass_ref, cmp.differ, cmp.worst_margin, cmp.energy_error);
    EXPECT_NEAR(cmp.mass / cmp.mass_ref, 1.0, 0.02);
    EXPECT_LT(cmp.worst_margin, 0.1);
    EXPECT_LT(cmp.energy_error, 0.1);
  }
}

TEST(Unbind, SaddleThresholdBindsLess) {
  // RAMSES' choice: the potential of every particle given, energies below Phi(r_saddle).
  const Cloud c = small_object(1000, 71, {0, 0, 0});
  Params p;
  p.potential_of_all = true;
  const ObjectResult plain = unbind_object(c.view(), {}, {}, p);
  ObjectSpec spec;
  spec.saddle_radius = 2.0;
  p.saddle = true;
  const ObjectResult saddle = unbind_object(c.view(), spec, {}, p);
  p.saddle = false;
  const ObjectResult off = unbind_object(c.view(), spec, {}, p);

  EXPECT_LT(saddle.summary.threshold, 0);
  EXPECT_EQ(plain.summary.threshold, 0);
  EXPECT_LT(saddle.summary.properties.n_bound, plain.summary.properties.n_bound);
  // The sphere's particles that cannot climb to 2 b in its analytic potential, E < Phi(2) = -1/sqrt 5
  // (the field particles' potential is nearly flat inside 2 b and shifts both sides alike).
  std::size_t expected = 0;
  for (std::size_t i = 0; i < 1000; ++i) {
    const Vec x = c.pos(i), v = c.vel(i);
    expected +=
        0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) - 1 / std::sqrt(1 + x[0] * x[0] + x[1] * x[1] + x[2] * x[2]) <
        -1 / std::sqrt(5.0);
  }
  std::printf("saddle at 2 b: %lld bound (%zu expected), %lld without\n",
              static_cast<long long>(saddle.summary.properties.n_bound), expected,
              static_cast<long long>(plain.summary.properties.n_bound));
  EXPECT_NEAR(static_cast<double>(saddle.summary.properties.n_bound), static_cast<double>(expected),
              0.05 * static_cast<double>(expected));
  EXPECT_EQ(off.bound, plain.bound);
  for (std::size_t i = 0; i < c.size(); ++i)
    if (saddle.bound[i]) {
      ASSERT_LT(saddle.energy[i], saddle.summary.threshold);
    }
}

// A host (Plummer M = 1, b = 1, 50,000 particles) and a subhalo (Plummer M = 0.02, b = 0.05, 1,000
// particles of the same mass) at (1, 0, 0) on a circular orbit; the host particles within 0.25 of the
// subhalo are given to it, as a watershed would.
struct SubhaloScene {
  Cloud c;
  std::vector<std::int64_t> object;
  std::vector<ObjectSpec> objects{2};
  Vec sub_centre{1, 0, 0}, sub_velocity{0, 0, 0};
  std::size_t n_host = 50000;
};

SubhaloScene subhalo_scene() {
  SubhaloScene s;
  const double vc = std::sqrt(1.0 / std::pow(2.0, 1.5));  // sqrt(G M r^2 / (r^2 + b^2)^3/2) at r = 1
  s.sub_velocity = {0, vc, 0};
  s.c = sample_halo(plummer(1, 1), s.n_host, 81, 1);
  s.c.append(sample_halo(plummer(0.02, 0.05), 1000, 82, 100001, s.sub_centre, s.sub_velocity));
  for (std::size_t i = 0; i < s.c.size(); ++i) {
    const Vec x = s.c.pos(i);
    const double d = std::hypot(x[0] - 1, x[1], x[2]);
    s.object.push_back(i >= s.n_host || d < 0.25 ? 1 : 0);
  }
  s.objects[0] = {-1, {0, 0, 0}, 0};
  s.objects[1] = {0, s.sub_centre, 0};
  return s;
}

TEST(Unbind, SubhaloKeepsItsParticlesAndPassesHostParticlesUp) {
  const SubhaloScene s = subhalo_scene();
  const auto t0 = std::chrono::steady_clock::now();
  const HierarchyResult h = unbind_hierarchy({s.c.id, s.c.x, s.c.v, s.c.m, s.object}, s.objects, {}, {});
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::size_t sub_bound = 0, crossing = 0, fast = 0, fast_to_host = 0, slow_kept = 0;
  for (std::size_t i = 0; i < s.c.size(); ++i) {
    if (i >= s.n_host) {
      sub_bound += h.bound_to[i] == 1 ? 1 : 0;
      continue;
    }
    if (s.object[i] != 1) continue;
    ++crossing;
    // Speed relative to the subhalo against the escape speed from its own (analytic) potential, with
    // a margin for the host particles that stay bound to it.
    const Vec x = s.c.pos(i), v = s.c.vel(i);
    const double d = std::hypot(x[0] - 1, x[1], x[2]);
    const double rel = std::hypot(v[0] - s.sub_velocity[0], v[1] - s.sub_velocity[1], v[2] - s.sub_velocity[2]);
    const double escape = std::sqrt(2 * 0.02 / std::sqrt(d * d + 0.05 * 0.05));
    if (rel > 1.2 * escape) {
      ++fast;
      fast_to_host += h.bound_to[i] == 0 ? 1 : 0;
    } else {
      slow_kept += h.bound_to[i] == 1 ? 1 : 0;
    }
  }
  const Properties& host = h.objects[0].properties;
  const Properties& sub = h.objects[1].properties;
  std::printf(
      "subhalo: %zu / 1000 own bound; %zu host particles crossing, %zu fast, %zu of them to the host, %zu slow "
      "kept; host %lld own bound (received %lld), inclusive mass %.4f; %.2f s\n",
      sub_bound, crossing, fast, fast_to_host, slow_kept, static_cast<long long>(host.n_bound),
      static_cast<long long>(h.objects[0].n_received), host.mass_inclusive, t);
  EXPECT_GE(sub_bound, 990u);
  EXPECT_GT(fast, 50u);
  EXPECT_EQ(fast_to_host, fast);
  EXPECT_GE(h.objects[0].n_received, static_cast<std::int64_t>(fast));
  EXPECT_EQ(h.n_passed, h.objects[0].n_received);
  EXPECT_NEAR(sub.mass, 0.02, 0.02 * 0.02 + 2e-5 * static_cast<double>(slow_kept));
  EXPECT_NEAR(host.mass_inclusive, 1.02, 0.01);
  EXPECT_NEAR(host.mass_inclusive, host.mass + sub.mass, 1e-12);
  EXPECT_EQ(h.n_assigned, static_cast<std::int64_t>(s.c.size()));
  EXPECT_EQ(h.n_bound + h.n_unbound, h.n_assigned);
  EXPECT_LT(std::hypot(sub.centre[0] - 1, sub.centre[1], sub.centre[2]), 1e-12);  // the peak
}

TEST(Unbind, SmallObjectsDissolveIntoTheirParent) {
  // Five particles given to a sub-object of a Plummer sphere: fewer than min_bound, all go to the host.
  Cloud c = sample_halo(plummer(1, 1), 2000, 91, 1);
  std::vector<std::int64_t> object(c.size(), 0);
  for (std::size_t i = 0; i < 5; ++i) object[i] = 1;
  const std::vector<ObjectSpec> objects{{-1, {0, 0, 0}, 0}, {0, c.pos(0), 0}};
  const HierarchyResult h = unbind_hierarchy({c.id, c.x, c.v, c.m, object}, objects, {}, {});
  EXPECT_TRUE(h.objects[1].dissolved);
  EXPECT_EQ(h.n_dissolved, 1);
  EXPECT_EQ(h.objects[1].properties.n_bound, 0);
  EXPECT_EQ(h.objects[0].n_received, 5);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_NE(h.bound_to[i], 1);
}

TEST(Unbind, BadLinksAndDuplicateIdsAreInputErrors) {
  const Cloud c = sample_halo(plummer(1, 1), 100, 92, 1);
  const std::vector<std::int64_t> object(c.size(), 0);
  const std::vector<ObjectSpec> cycle{{1, {0, 0, 0}, 0}, {0, {0, 0, 0}, 0}};
  auto kind = [](const auto& f) {
    try {
      f();
    } catch (const core::Error& e) {
      return e.kind();
    }
    return core::ErrorKind::internal;
  };
  EXPECT_EQ(kind([&] { unbind_hierarchy({c.id, c.x, c.v, c.m, object}, cycle, {}, {}); }), core::ErrorKind::input);
  const std::vector<ObjectSpec> out_of_range{{5, {0, 0, 0}, 0}};
  EXPECT_EQ(kind([&] {
              unbind_hierarchy({c.id, c.x, c.v, c.m, object}, out_of_range, {}, {});
            }),
            core::ErrorKind::input);
  Cloud twice = c;
  twice.id[7] = twice.id[3];
  EXPECT_EQ(kind([&] { unbind_object(twice.view(), {}, {}, {}); }), core::ErrorKind::input);
  EXPECT_EQ(parse_centre_kind("shrinking-sphere"), CentreKind::shrinking_sphere);
  EXPECT_EQ(kind([] { parse_potential_mode("exact"); }), core::ErrorKind::usage);
}

// Per-ID bytes of an object's result: bound flags and energies.
std::map<std::uint64_t, std::pair<std::uint8_t, std::uint64_t>> by_id(const Cloud& c, const ObjectResult& r) {
  std::map<std::uint64_t, std::pair<std::uint8_t, std::uint64_t>> m;
  for (std::size_t i = 0; i < c.size(); ++i) {
    std::uint64_t bits;
    std::memcpy(&bits, &r.energy[i], sizeof bits);
    m[c.id[i]] = {r.bound[i], bits};
  }
  return m;
}

TEST(Unbind, ShuffledInputGivesIdenticalBytes) {
  const Cloud c = small_object(3000, 101, {0, 0, 0});
  Frame f;
  f.critical_density = 3e-4;
  f.omega_m = 1;
  f.softening = 0.01;
  const auto perm = shuffled(c.size(), 102);
  const Cloud s = c.permuted(perm);
  for (const CentreKind centre : {CentreKind::peak, CentreKind::most_bound, CentreKind::potential_minimum,
                                  CentreKind::shrinking_sphere, CentreKind::centre_of_mass})
    for (const PotentialMode mode : {PotentialMode::profile, PotentialMode::tree}) {
      Params p;
      p.centre = centre;
      p.potential = mode;
      p.direct_below = 1000;  // the tree
      const ObjectResult a = unbind_object(c.view(), {}, f, p), b = unbind_object(s.view(), {}, f, p);
      const std::string what = to_string(mode) + ", " + to_string(centre);
      EXPECT_EQ(bytes_of(a.summary), bytes_of(b.summary)) << what;
      EXPECT_EQ(by_id(c, a), by_id(s, b)) << what;
      EXPECT_TRUE(std::isfinite(a.summary.properties.spin_bullock)) << what;
    }
  // The hierarchy, particles shuffled.
  const SubhaloScene scene = subhalo_scene();
  const auto hp = shuffled(scene.c.size(), 103);
  const Cloud hs = scene.c.permuted(hp);
  std::vector<std::int64_t> hobj;
  for (const std::size_t i : hp) hobj.push_back(scene.object[i]);
  const HierarchyResult ha =
      unbind_hierarchy({scene.c.id, scene.c.x, scene.c.v, scene.c.m, scene.object}, scene.objects, f, {});
  const HierarchyResult hb = unbind_hierarchy({hs.id, hs.x, hs.v, hs.m, hobj}, scene.objects, f, {});
  for (std::size_t o = 0; o < 2; ++o) EXPECT_EQ(bytes_of(ha.objects[o]), bytes_of(hb.objects[o]));
  for (std::size_t k = 0; k < hp.size(); ++k) {
    ASSERT_EQ(hb.bound_to[k], ha.bound_to[hp[k]]);
    ASSERT_EQ(std::memcmp(&hb.energy[k], &ha.energy[hp[k]], sizeof(double)), 0);
  }
}

// unbind_hierarchy calls `copied` once, after which it reads no position, velocity, mass or type: a
// callback that spoils them all (as letting them go would) changes nothing in the result.
TEST(Unbind, HierarchyReadsNoArrayAfterCopied) {
  const SubhaloScene scene = subhalo_scene();
  Frame f;
  f.softening = 0.01;
  Params params;
  params.types = {0};  // the per-type properties read the types too
  params.apertures = {0.5};
  const std::vector<std::uint8_t> types(scene.c.size(), 0);
  const HierarchyResult plain =
      unbind_hierarchy({scene.c.id, scene.c.x, scene.c.v, scene.c.m, scene.object, types}, scene.objects, f, params);
  Cloud c = scene.c;
  std::vector<std::uint8_t> type = types;
  int calls = 0;
  const auto spoil = [&] {
    ++calls;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::fill(c.x.begin(), c.x.end(), nan);
    std::fill(c.v.begin(), c.v.end(), nan);
    std::fill(c.m.begin(), c.m.end(), nan);
    std::fill(type.begin(), type.end(), std::uint8_t{7});
  };
  const HierarchyResult spoiled =
      unbind_hierarchy({c.id, c.x, c.v, c.m, scene.object, type, spoil}, scene.objects, f, params);
  EXPECT_EQ(calls, 1);
  for (std::size_t o = 0; o < scene.objects.size(); ++o) {
    EXPECT_EQ(bytes_of(plain.objects[o]), bytes_of(spoiled.objects[o])) << "object " << o;
    const TypeProperties &a = plain.objects[o].properties.by_type.at(0),
                         &b = spoiled.objects[o].properties.by_type.at(0);
    EXPECT_EQ(a.n_bound, b.n_bound) << "object " << o;
    EXPECT_EQ(std::memcmp(&a.half_mass_radius, &b.half_mass_radius, sizeof(double)), 0) << "object " << o;
    EXPECT_EQ(std::memcmp(&a.velocity_dispersion, &b.velocity_dispersion, sizeof(double)), 0) << "object " << o;
    EXPECT_EQ(a.aperture_mass, b.aperture_mass) << "object " << o;
  }
  EXPECT_EQ(plain.bound_to, spoiled.bound_to);
  ASSERT_EQ(plain.energy.size(), spoiled.energy.size());
  EXPECT_EQ(std::memcmp(plain.energy.data(), spoiled.energy.data(), plain.energy.size() * sizeof(double)), 0);
  EXPECT_GT(plain.objects[1].properties.n_bound, 100);  // the subhalo is there to be unbound first
}

// An object given as a subset of a bigger set of arrays (ObjectParticles::subset, as unbind_hierarchy
// gives each object the halo's arrays) is unbound as the same particles copied out in that order.
TEST(Unbind, SubsetOfBiggerArraysGivesIdenticalBytes) {
  const Cloud object = small_object(2000, 111, {0, 0, 0});
  Cloud others = small_object(700, 112, {0.3, 0, 0});
  for (std::uint64_t& i : others.id) i += 1'000'000;  // IDs of their own
  // The halo's arrays: the object's particles and the others, shuffled together.
  Cloud both = object;
  both.append(others);
  const auto mix = shuffled(both.size(), 113);
  const Cloud halo = both.permuted(mix);
  // The object's entries in the halo, in an order of their own, and its particles copied in that order;
  // some of them fixed (a sub-object's bound particles).
  std::vector<std::size_t> subset;
  for (std::size_t k = 0; k < mix.size(); ++k)
    if (mix[k] < object.size()) subset.push_back(k);
  const auto order = shuffled(subset.size(), 114);
  std::vector<std::size_t> entries, copied;
  for (const std::size_t k : order) {
    entries.push_back(subset[k]);
    copied.push_back(mix[subset[k]]);
  }
  const Cloud alone = object.permuted(copied);
  std::vector<std::uint8_t> fixed_halo(halo.size(), 0), fixed_alone(alone.size(), 0);
  for (std::size_t k = 0; k < entries.size(); k += 7) fixed_halo[entries[k]] = fixed_alone[k] = 1;
  Frame f;
  f.critical_density = 3e-4;
  f.omega_m = 1;
  f.softening = 0.01;
  for (const PotentialMode mode : {PotentialMode::profile, PotentialMode::tree}) {
    Params p;
    p.centre = CentreKind::shrinking_sphere;
    p.potential = mode;
    p.direct_below = 1000;  // the tree
    const ObjectResult a = unbind_object({halo.id, halo.x, halo.v, halo.m, fixed_halo, {}, entries}, {}, f, p);
    const ObjectResult b = unbind_object({alone.id, alone.x, alone.v, alone.m, fixed_alone}, {}, f, p);
    EXPECT_EQ(bytes_of(a.summary), bytes_of(b.summary)) << to_string(mode);
    ASSERT_EQ(a.bound.size(), entries.size());
    EXPECT_EQ(a.bound, b.bound) << to_string(mode);
    EXPECT_EQ(std::memcmp(a.energy.data(), b.energy.data(), a.energy.size() * sizeof(double)), 0) << to_string(mode);
    EXPECT_GT(a.summary.properties.n_bound, 1000) << to_string(mode);
  }
  // An entry beyond the arrays is a caller's error, not a read past them.
  const std::vector<std::size_t> beyond{0, halo.size()};
  try {
    unbind_object({halo.id, halo.x, halo.v, halo.m, {}, {}, beyond}, {}, f, {});
    ADD_FAILURE() << "an entry beyond the arrays was accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::internal);
  }
}

}  // namespace
}  // namespace phew::unbind::test
