// synth: profiles, Eddington inversion, sampling (enclosed mass, velocity dispersion, virial ratio),
// the Zel'dovich box, scenes and determinism. Each statistical test uses a fixed seed and a tolerance
// that the right sampler passes and a wrong one (shown next to it) fails.
#include <phew/core/error.hpp>
#include <phew/synth/eddington.hpp>
#include <phew/synth/profiles.hpp>
#include <phew/synth/random.hpp>
#include <phew/synth/realize.hpp>
#include <phew/synth/scene.hpp>
#include <phew/synth/zeldovich.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

namespace phew::synth {
namespace {

using Json = nlohmann::json;
constexpr double kPi = std::numbers::pi;

Scene one_halo(const Json& component, std::uint64_t seed = 7) {
  return parse_scene(Json{{"seed", seed}, {"components", Json::array({component})}}, "test");
}

// Radii and velocities of a sampled single-halo scene, relative to its centre.
struct Sample {
  std::vector<double> r, vr2, vt2, x, v;
};
Sample sample_halo(const Scene& scene, const HaloSet& halos) {
  const auto truth = describe(scene, halos);
  const Particles p = sample(scene, halos, truth);
  Sample s;
  s.x = p.position;
  s.v = p.velocity;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double* x = &p.position[3 * i];
    const double* v = &p.velocity[3 * i];
    const double r = std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    const double vr = (x[0] * v[0] + x[1] * v[1] + x[2] * v[2]) / r;
    s.r.push_back(r);
    s.vr2.push_back(vr * vr);
    s.vt2.push_back(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] - vr * vr);
  }
  return s;
}

// Kolmogorov-Smirnov distance between the sampled radii and the model's M(<r)/M.
double ks_distance(std::vector<double> r, const Profile& model) {
  std::sort(r.begin(), r.end());
  const double n = static_cast<double>(r.size());
  double d = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const double F = model.enclosed_mass(r[i]) / model.total_mass();
    d = std::max({d, std::abs(F - static_cast<double>(i) / n), std::abs(F - static_cast<double>(i + 1) / n)});
  }
  return d;
}

// Largest relative deviation, over 10 radial bins of equal counts, of <v_r^2> and <v_t^2>/2 from the
// Jeans dispersion averaged over the same particles, with velocities scaled by `scale`.
double worst_dispersion(const Sample& s, const JeansDispersion& jeans, double scale) {
  std::vector<std::size_t> order(s.r.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return s.r[a] < s.r[b]; });
  const std::size_t bins = 10, per = order.size() / bins;
  double worst = 0;
  for (std::size_t b = 0; b < bins; ++b) {
    double vr = 0, vt = 0, model = 0;
    for (std::size_t k = b * per; k < (b + 1) * per; ++k) {
      vr += s.vr2[order[k]] * scale * scale;
      vt += 0.5 * s.vt2[order[k]] * scale * scale;
      model += jeans.sigma2(s.r[order[k]]);
    }
    worst = std::max({worst, std::abs(vr / model - 1), std::abs(vt / model - 1)});
  }
  return worst;
}

// 2K / |W| with W = sum m x . a (the Clausius virial, = the potential energy of a self-gravitating halo).
double virial_ratio(const Sample& s, const HaloSet& halos, double scale) {
  double k = 0, w = 0;
  const std::vector<Vec3> centre{{0, 0, 0}};
  for (std::size_t i = 0; i < s.r.size(); ++i) {
    const Vec3 a = halos.acceleration(&s.x[3 * i], centre);
    for (std::size_t d = 0; d < 3; ++d) {
      k += 0.5 * s.v[3 * i + d] * s.v[3 * i + d] * scale * scale;
      w += s.x[3 * i + d] * a[d];
    }
  }
  return 2 * k / std::abs(w);
}

TEST(SynthRandom, StreamsAreReproducibleAndIndependent) {
  Rng a(5, 1, kRadius), b(5, 1, kRadius), c(5, 2, kRadius), d(5, 1, kVelocity);
  for (int i = 0; i < 100; ++i) {
    const double x = a.uniform();
    EXPECT_EQ(x, b.uniform());
    EXPECT_NE(x, c.uniform());
    EXPECT_NE(x, d.uniform());
  }
  Rng g(9, 0, kNoise);
  double s1 = 0, s2 = 0, s4 = 0, umin = 1, umax = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double z = g.normal();
    s1 += z;
    s2 += z * z;
    s4 += z * z * z * z;
    const double u = g.uniform();
    umin = std::min(umin, u);
    umax = std::max(umax, u);
  }
  EXPECT_NEAR(s1 / n, 0, 0.01);
  EXPECT_NEAR(s2 / n, 1, 0.01);
  EXPECT_NEAR(s4 / n, 3, 0.06);
  EXPECT_GE(umin, 0.0);
  EXPECT_LT(umax, 1.0);
}

TEST(SynthProfiles, MassPotentialAndInverseAgree) {
  const double G = gravitational_constant();
  for (const ProfileSpec& spec :
       {nfw_from_m200(1.0, 10.0, 1.36e-8, 200, 1.0, 0.1, G), ProfileSpec{ProfileModel::plummer, 2.0, 1.5, 0, 0, G},
        ProfileSpec{ProfileModel::hernquist, 1.0, 3.0, 20, 2, G}}) {
    const Profile p(spec);
    SCOPED_TRACE(to_string(spec.model));
    // M(<r) = int 4 pi r^2 rho (Simpson in ln r) and dPhi/dr = G M / r^2, inside and in the taper.
    for (double r : {0.01, 0.3, 2.0, 10.0, 25.0, 40.0, 60.0}) {
      const int n = 20000;
      const double lo = std::log(1e-9), hi = std::log(r), h = (hi - lo) / n;
      double m = 0;
      for (int i = 0; i <= n; ++i) {
        const double x = std::exp(lo + i * h);
        m += (i == 0 || i == n ? 1 : (i % 2 ? 4 : 2)) * 4 * kPi * x * x * x * p.density(x);
      }
      m *= h / 3;
      EXPECT_NEAR(p.enclosed_mass(r) / m, 1.0, 1e-6) << "r = " << r;
      const double dr = 1e-5 * r;
      const double dphi = (p.potential(r + dr) - p.potential(r - dr)) / (2 * dr);
      EXPECT_NEAR(dphi / (G * p.enclosed_mass(r) / (r * r)), 1.0, 1e-6) << "r = " << r;
      // (In the taper M(<r) is nearly flat, so r is known from M only to ~1e-12.)
      EXPECT_NEAR(p.radius_of_mass(p.enclosed_mass(r)) / r, 1.0, 1e-10) << "r = " << r;
    }
    EXPECT_NEAR(p.potential(1e6 * p.outer_radius()) * 1e6 * p.outer_radius() / (-G * p.total_mass()), 1.0, 1e-9);
  }
  // NFW: M(<r200) = M200 when the taper starts at r200; Plummer's closed forms.
  const ProfileSpec nfw = nfw_from_m200(1.0, 10.0, 1.36e-8, 200, 1.0, 0.1, G);
  EXPECT_NEAR(Profile(nfw).enclosed_mass(nfw_r200(1.0, 1.36e-8, 200)), 1.0, 1e-12);
  const Profile pl(ProfileSpec{ProfileModel::plummer, 2.0, 1.5, 0, 0, G});
  EXPECT_NEAR(pl.potential(1.5), -G * 2.0 / (1.5 * std::sqrt(2.0)), 1e-9);
  EXPECT_NEAR(pl.half_mass_radius(), 1.5 / std::sqrt(std::pow(2.0, 2.0 / 3.0) - 1), 1e-12);
}

TEST(SynthProfiles, RejectsBadParameters) {
  EXPECT_THROW(Profile(ProfileSpec{ProfileModel::plummer, -1.0, 1.0, 0, 0, 1}), core::Error);
  EXPECT_THROW(Profile(ProfileSpec{ProfileModel::hernquist, 1.0, 0.0, 0, 0, 1}), core::Error);
  EXPECT_THROW(Profile(ProfileSpec{ProfileModel::nfw, 1.0, 1.0, 0, 0, 1}), core::Error);  // NFW needs a truncation
}

TEST(SynthEddington, PlummerMatchesTheAnalyticDistributionFunction) {
  const double G = gravitational_constant(), M = 1.0, a = 2.0;
  const Profile p(ProfileSpec{ProfileModel::plummer, M, a, 0, 0, G});
  const DistributionFunction df(p);
  EXPECT_EQ(df.negative_nodes(), 0);
  for (double r : {0.01, 0.5, 2.0, 8.0, 50.0}) {
    const double E = -0.6 * p.potential(r);
    // Binney & Tremaine (2008) eq. 4.83: f = 24 sqrt(2) / (7 pi^3) a^2 / (G^5 M^4) E^(7/2).
    const double exact =
        24 * std::sqrt(2.0) / (7 * kPi * kPi * kPi) * a * a / (std::pow(G, 5) * std::pow(M, 4)) * std::pow(E, 3.5);
    EXPECT_NEAR(df.f(E) / exact, 1.0, 1e-3) << "r = " << r;
  }
}

TEST(SynthEddington, DistributionFunctionsGiveBackTheirDensity) {
  const double G = gravitational_constant();
  for (const ProfileSpec& spec :
       {nfw_from_m200(1.0, 20.0, 1.36e-8, 200, 1.0, 0.1, G), nfw_from_m200(0.5, 2.0, 1.36e-8, 200, 1.0, 0.1, G),
        ProfileSpec{ProfileModel::hernquist, 1.0, 3.0, 0, 0, G}}) {
    const Profile p(spec);
    const DistributionFunction df(p);
    SCOPED_TRACE(to_string(spec.model));
    EXPECT_EQ(df.negative_nodes(), 0);
    for (double x : {1e-3, 0.05, 0.5, 2.0, 8.0})
      EXPECT_NEAR(df.density_from_f(x * spec.scale_radius) / p.density(x * spec.scale_radius), 1.0, 5e-3)
          << "r/a = " << x;
  }
}

// The enclosed-mass profile of the sample matches the model (KS at the 0.1% level), and the same test
// rejects the sample against a wrong model of the same mass (concentration 8 instead of 10, or a
// Hernquist sphere with the Plummer's half-mass radius).
TEST(SynthSampling, EnclosedMassMatchesTheModel) {
  const std::size_t n = 100000;
  const double critical = 1.95 / std::sqrt(static_cast<double>(n));  // KS, p = 0.001
  {
    const Scene s = one_halo({{"model", "nfw"}, {"particles", n}, {"mass", 1.0}, {"concentration", 10.0}});
    const HaloSet halos(s);
    const Sample smp = sample_halo(s, halos);
    EXPECT_LT(ks_distance(smp.r, halos.profile(0)), critical);
    const Scene wrong = one_halo({{"model", "nfw"}, {"particles", n}, {"mass", 1.0}, {"concentration", 8.0}});
    EXPECT_GT(ks_distance(smp.r, HaloSet(wrong).profile(0)), critical);
  }
  {
    const Scene s = one_halo({{"model", "plummer"}, {"particles", n}, {"mass", 1.0}, {"scale_radius", 1.0}});
    const HaloSet halos(s);
    const Sample smp = sample_halo(s, halos);
    EXPECT_LT(ks_distance(smp.r, halos.profile(0)), critical);
    // Hernquist with r_half = (1 + sqrt 2) a equal to Plummer's 1.305 a.
    const double a = halos.profile(0).half_mass_radius() / (1 + std::sqrt(2.0));
    const Scene wrong = one_halo({{"model", "hernquist"}, {"particles", n}, {"mass", 1.0}, {"scale_radius", a}});
    EXPECT_NEAR(HaloSet(wrong).profile(0).half_mass_radius(), halos.profile(0).half_mass_radius(), 1e-9);
    EXPECT_GT(ks_distance(smp.r, HaloSet(wrong).profile(0)), critical);
  }
}

// Velocities: the dispersion profile follows the isotropic Jeans solution within 5% in every bin of
// 10^4 particles (statistical error 1.4%), and the halo is virialised, 2K/|W| = 1 within 2%. Velocities
// 5% too fast (10% in sigma^2) fail both.
TEST(SynthSampling, VelocitiesAreInEquilibrium) {
  for (const Json& c : {Json{{"model", "nfw"}, {"particles", 100000}, {"mass", 1.0}, {"concentration", 10.0}},
                        Json{{"model", "hernquist"},
                             {"particles", 100000},
                             {"mass", 1.0},
                             {"scale_radius", 2.0},
                             {"truncation", 30.0}}}) {
    SCOPED_TRACE(c.dump());
    const Scene s = one_halo(c, 11);
    const HaloSet halos(s);
    const Sample smp = sample_halo(s, halos);
    EXPECT_LT(worst_dispersion(smp, halos.jeans(0), 1.0), 0.05);
    EXPECT_GT(worst_dispersion(smp, halos.jeans(0), 1.05), 0.05);
    EXPECT_NEAR(virial_ratio(smp, halos, 1.0), 1.0, 0.02);
    EXPECT_GT(std::abs(virial_ratio(smp, halos, 1.05) - 1.0), 0.02);
  }
}

TEST(SynthSampling, SameSeedSameBytesOtherSeedOtherParticles) {
  const Json scene = {
      {"seed", 3},
      {"box", 500.0},
      {"components",
       {{{"name", "host"}, {"model", "nfw"}, {"particles", 3000}, {"mass", 1.0}, {"concentration", 12.0}},
        {{"name", "sub"},
         {"model", "plummer"},
         {"particles", 500},
         {"mass", 0.05},
         {"scale_radius", 0.5},
         {"host", "host"},
         {"position", {20.0, 0.0, 0.0}},
         {"velocity", {0.0, 30.0, 0.0}}},
        {{"model", "uniform"}, {"particles", 2000}, {"mass", 0.5}, {"velocity_dispersion", 10.0}}}}};
  const Scene s = parse_scene(scene, "test");
  EXPECT_EQ(s.components[1].center[0], 270.0);  // relative to the host at the box centre
  EXPECT_EQ(s.components[1].bulk_velocity[1], 30.0);
  const HaloSet halos(s);
  const auto truth = describe(s, halos);
  const Particles a = sample(s, halos, truth), b = sample(s, halos, truth);
  ASSERT_EQ(a.size(), 5500u);
  EXPECT_EQ(std::memcmp(a.position.data(), b.position.data(), a.position.size() * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(a.velocity.data(), b.velocity.data(), a.velocity.size() * sizeof(double)), 0);
  for (double x : a.position) {
    EXPECT_GE(x, 0.0);
    EXPECT_LT(x, 500.0);
  }
  EXPECT_EQ(truth[1].parent, 0);
  EXPECT_EQ(truth[2].first_id, 3501u);
  Json other = scene;
  other["seed"] = 4;
  const Scene s4 = parse_scene(other, "test");
  const Particles c = sample(s4, halos, describe(s4, halos));
  EXPECT_NE(a.position[0], c.position[0]);
  // Changing one component leaves the others' particles alone (independent streams).
  other = scene;
  other["components"][2]["particles"] = 10;
  const Scene s10 = parse_scene(other, "test");
  const Particles d = sample(s10, halos, describe(s10, halos));
  EXPECT_EQ(std::memcmp(a.position.data(), d.position.data(), 3 * 3500 * sizeof(double)), 0);
}

TEST(SynthZeldovich, GrowthAndNormalisation) {
  EXPECT_NEAR(growth_factor(1.0, 0.3, 0.7), 1.0, 1e-12);
  EXPECT_NEAR(growth_factor(0.5, 1.0, 0.0), 0.5, 1e-6);  // Einstein-de Sitter: D = a, f = 1
  EXPECT_NEAR(growth_rate(0.5, 1.0, 0.0), 1.0, 1e-6);
  EXPECT_NEAR(growth_rate(1.0, 0.3, 0.7), std::pow(0.3, 0.55), 0.01);
  for (Spectrum sp : {Spectrum::cdm, Spectrum::power_law}) {
    ZeldovichSpec z;
    z.spectrum = sp;
    z.index = sp == Spectrum::cdm ? 1.0 : -1.5;
    z.redshift = 1.0;
    EXPECT_NEAR(PowerSpectrum(z).sigma(8000.0) / (0.8 * growth_factor(0.5, 0.3, 0.7)), 1.0, 1e-4);
  }
}

TEST(SynthZeldovich, FieldHasThePowerAndParticlesFollowIt) {
  ZeldovichSpec z;
  z.n_side = 32;
  z.box = 200000.0;
  z.sigma8 = 0.8;
  // The variance of the grid field is (1/V) sum_k P(k) over the grid's modes.
  const PowerSpectrum power(z);
  double expected = 0;
  const double dk = 2 * kPi / z.box;
  for (int i = -16; i < 16; ++i)
    for (int j = -16; j < 16; ++j)
      for (int k = -16; k < 16; ++k)
        if (i || j || k) expected += power(dk * std::sqrt(double(i * i + j * j + k * k)));
  expected /= z.box * z.box * z.box;
  Rng rng(1, 0, kNoise);
  const std::vector<double> delta = linear_density(z, rng);
  double var = 0;
  for (double d : delta) var += d * d;
  var /= static_cast<double>(delta.size());
  EXPECT_NEAR(var / expected, 1.0, 0.05);

  // Velocities are a H f psi / sqrt(a): parallel to the displacement from the lattice site.
  std::vector<double> x, v;
  Rng rng2(1, 0, kNoise);
  const double rms = zeldovich_lattice(z, rng2, x, v);
  ASSERT_EQ(x.size(), 3u * 32 * 32 * 32);
  EXPECT_GT(rms, 100.0);
  const double cell = z.box / 32;
  double ratio = 0;
  for (std::size_t p = 0; p < 32 * 32 * 32; ++p) {
    const std::size_t lattice[3] = {p / 1024, (p / 32) % 32, p % 32};
    for (std::size_t d = 0; d < 3; ++d) {
      EXPECT_GE(x[3 * p + d], 0.0);
      ASSERT_LT(x[3 * p + d], z.box);
      double psi = x[3 * p + d] - (static_cast<double>(lattice[d]) + 0.5) * cell;
      psi -= z.box * std::nearbyint(psi / z.box);
      if (std::abs(psi) > 0.1 * rms) {
        const double r = v[3 * p + d] / psi;
        if (ratio == 0) ratio = r;
        ASSERT_NEAR(r / ratio, 1.0, 1e-6);
      }
    }
  }
  EXPECT_NEAR(ratio, 0.1 * growth_rate(1.0, 0.3, 0.7), 1e-6);  // a = 1: H0 f, H0 = 0.1 km/s per kpc/h
}

TEST(SynthScene, ErrorsNameTheKey) {
  auto message = [](const Json& j) {
    try {
      parse_scene(j, "scene.json");
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::usage);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const Json nfw = {{"model", "nfw"}, {"particles", 10}, {"mass", 1.0}, {"concentration", 5.0}};
  auto with = [&](const char* key, const Json& value) {
    Json c = nfw;
    if (value.is_null())
      c.erase(key);
    else
      c[key] = value;
    return Json{{"components", Json::array({c})}};
  };
  EXPECT_EQ(message(Json{{"components", Json::array({nfw})}}), "no error");
  EXPECT_EQ(message(with("mass", nullptr)), "scene.json: component 0: missing key \"mass\"");
  EXPECT_EQ(message(with("mass", -1.0)), "scene.json: component 0: \"mass\" must be positive, got -1");
  EXPECT_EQ(message(with("concentration", 0.0)), "scene.json: component 0: \"concentration\" must be positive, got 0");
  EXPECT_EQ(message(with("particles", 0)), "scene.json: component 0: \"particles\" must be at least 1, got 0");
  EXPECT_EQ(message(with("model", "king")),
            "scene.json: component 0: unknown model \"king\" (nfw, plummer, hernquist, uniform, zeldovich)");
  EXPECT_EQ(message(with("concentation", 3.0)), "scene.json: component 0: unknown key \"concentation\"");
  EXPECT_EQ(message(with("host", "nobody")),
            "scene.json: component 0: host \"nobody\" is not an earlier halo component");
  EXPECT_EQ(message(Json{{"components", Json::array()}}), "scene.json: \"components\" must be a non-empty array");
  EXPECT_EQ(message(Json::object()), "scene.json: missing key \"components\"");
  EXPECT_EQ(message(Json{{"components", Json::array({nfw})}, {"sequence", {{"mode", "ballistic"}}}}),
            "scene.json: sequence: missing key \"snapshots\"");
  EXPECT_EQ(message(Json{{"box", 1000},
                         {"cosmology", Json::object()},
                         {"components", {{{"model", "zeldovich"}, {"particles", 1001}}}}}),
            "scene.json: component 0: a zeldovich lattice needs a cube number of particles (e.g. \"64^3\"), got 1001");
  EXPECT_EQ(message(Json{{"components", {{{"model", "zeldovich"}, {"particles", "8^3"}}}}}),
            "scene.json: component 0: a zeldovich background needs a cosmological scene (give \"cosmology\")");
  EXPECT_EQ(parse_particle_count("64^3", "x"), 262144u);
  EXPECT_THROW(parse_particle_count("64^2", "x"), core::Error);
  EXPECT_THROW(parse_particle_count("-5", "x"), core::Error);
}

TEST(SynthScene, BuiltinScenesParseAndRoundTrip) {
  for (const auto& name : builtin_scene_names()) {
    const auto j = builtin_scene(name);
    ASSERT_TRUE(j) << name;
    const Scene s = parse_scene(*j, name);
    const Scene back = parse_scene(Json::parse(scene_to_json(s).dump()), name);
    EXPECT_EQ(scene_to_json(back).dump(), scene_to_json(s).dump());
  }
  const Scene gt = parse_scene(*builtin_scene("collision"), "collision");
  ASSERT_EQ(gt.components.size(), 2u);
  EXPECT_EQ(gt.components[1].center[1], 180.0);
  EXPECT_EQ(gt.components[1].bulk_velocity[0], -353.0);
  EXPECT_EQ(gt.sequence.snapshots, 61);
  EXPECT_NEAR(gt.sequence.interval_myr * (gt.sequence.snapshots - 1), 447.0, 1e-9);
  EXPECT_FALSE(builtin_scene("nonsense"));
}

}  // namespace
}  // namespace phew::synth
