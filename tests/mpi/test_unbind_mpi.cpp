// An object spread over 1-4 ranks (unbind_spread_object) gives unbind_object's bits: every bound flag
// and energy, the counts and every property (per type too), for each centre it takes, with the profile,
// tree or direct potential of the bound particles or of all, a saddle threshold, sub-objects' fixed particles, a scale factor and
// Hubble flow, shares of unequal sizes (one empty) in a shuffled order.
#include <phew/core/error.hpp>
#include <phew/gravity/distributed_profile.hpp>
#include <phew/gravity/spherical_profile.hpp>
#include <phew/grid/spherical_overdensity.hpp>
#include <phew/unbind/nfw.hpp>
#include <phew/unbind/properties.hpp>
#include <phew/unbind/shape.hpp>
#include <phew/unbind/spread.hpp>

#include "../unit/unbind_samples.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>

namespace phew::unbind {
namespace {

using test::Cloud;

// A Plummer sphere of 6000, a smaller one beside it, and 800 fast particles through both.
Cloud object() {
  Cloud c = test::sample_halo(test::plummer(1.0, 0.05), 6000, 11, 100000);
  c.append(test::sample_halo(test::plummer(0.05, 0.01), 700, 12, 200000, {0.12, 0.03, -0.02}, {0.4, 0, 0.1}));
  std::mt19937_64 rng(13);
  std::normal_distribution<double> g(0, 0.15);
  for (std::uint64_t k = 0; k < 800; ++k)
    c.add(300000 + 7 * k, {g(rng), g(rng), g(rng)}, {6 * g(rng), 6 * g(rng), 6 * g(rng)}, 1.0 / 6000);
  return c;
}

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

// Every property as bits, in one list (most-bound IDs and the per-type columns included).
std::vector<std::uint64_t> flat(const Properties& q) {
  std::vector<std::uint64_t> v{static_cast<std::uint64_t>(q.n_bound), static_cast<std::uint64_t>(q.n_bound_inclusive)};
  const auto add = [&](double x) { v.push_back(bits(x)); };
  const auto add3 = [&](const std::array<double, 3>& x) {
    for (const double c : x) add(c);
  };
  for (const double x : {q.mass, q.mass_inclusive, q.vrms, q.vmax, q.rmax, q.kinetic, q.potential, q.virial_ratio,
                         q.spin_peebles, q.spin_bullock, q.delta_vir, q.rs_klypin, q.concentration_klypin, q.rs_fit,
                         q.concentration_fit, q.b_to_a, q.c_to_a, q.xoff})
    add(x);
  for (const auto& x : {q.centre, q.centre_of_mass, q.most_bound_position, q.potential_minimum_position,
                        q.shrinking_sphere_centre, q.bulk_velocity, q.angular_momentum, q.major_axis})
    add3(x);
  for (const grid::Overdensity& o : {q.vir, q.c200, q.m200, q.c500}) {
    add(o.radius);
    add(o.mass);
    v.push_back(static_cast<std::uint64_t>(o.n_particles));
  }
  v.insert(v.end(), q.most_bound_ids.begin(), q.most_bound_ids.end());
  for (const auto* types : {&q.by_type, &q.by_type_inclusive})
    for (const TypeProperties& t : *types) {
      v.push_back(static_cast<std::uint64_t>(t.n_bound));
      for (const double x : {t.mass, t.half_mass_radius, t.velocity_dispersion}) add(x);
      for (const double x : t.aperture_mass) add(x);
    }
  return v;
}

TEST(UnbindSpreadMpi, SameBitsAsOneRank) {
  const mpi::Comm world;
  const Cloud all = object();
  const std::size_t n = all.size();
  // Fixed: the small sphere's first 300 (a sub-object's bound particles). Types: every third is type 4.
  std::vector<std::uint8_t> fixed(n, 0), type(n, 1);
  for (std::size_t i = 6000; i < 6300; ++i) fixed[i] = 1;
  for (std::size_t i = 0; i < n; i += 3) type[i] = 4;
  // The shares: ID order cut unevenly (rank r's share grows with r; the last of 4 ranks gets none).
  std::vector<std::size_t> by_id(n);
  std::iota(by_id.begin(), by_id.end(), std::size_t{0});
  std::sort(by_id.begin(), by_id.end(), [&](std::size_t a, std::size_t b) { return all.id[a] < all.id[b]; });
  const int ranks = world.size(), holders = ranks == 4 ? 3 : ranks;
  std::size_t weights = 0;
  for (int r = 0; r < holders; ++r) weights += static_cast<std::size_t>(r + 1);
  std::size_t begin = 0, end = 0;
  for (int r = 0, at = 0; r <= world.rank() && r < holders; ++r) {
    begin = static_cast<std::size_t>(at) * n / weights;
    at += r + 1;
    end = static_cast<std::size_t>(at) * n / weights;
  }
  if (world.rank() >= holders) begin = end = n;
  std::vector<std::size_t> mine(by_id.begin() + static_cast<std::ptrdiff_t>(begin),
                                by_id.begin() + static_cast<std::ptrdiff_t>(end));
  std::reverse(mine.begin(), mine.end());  // any order within a share
  Cloud share = all.permuted(mine);
  std::vector<std::uint8_t> share_fixed, share_type;
  for (const std::size_t i : mine) {
    share_fixed.push_back(fixed[i]);
    share_type.push_back(type[i]);
  }

  Frame frame;
  frame.scale_factor = 0.7;
  frame.hubble = 0.3;
  frame.softening = 0.004;
  frame.critical_density = 0.05;
  frame.omega_m = 0.3;
  frame.omega_lambda = 0.7;
  ObjectSpec spec;
  spec.peak = {0.001, -0.002, 0.0005};
  spec.saddle_radius = 0.2;
  // The tree potential: every rank walks the gathered set's tree for its block (and sums directly
  // below direct_below: variant 4); its centres from the energies too. Fewer variants: a walk per pass.
  struct Case {
    PotentialMode potential;
    CentreKind centre;
    std::vector<int> variants;
  };
  std::vector<Case> cases;
  for (const CentreKind c : {CentreKind::shrinking_sphere, CentreKind::peak, CentreKind::centre_of_mass})
    cases.push_back({PotentialMode::profile, c, {0, 1, 2, 3}});
  cases.push_back({PotentialMode::tree, CentreKind::shrinking_sphere, {0, 2, 4}});
  cases.push_back({PotentialMode::tree, CentreKind::most_bound, {1}});
  cases.push_back({PotentialMode::tree, CentreKind::potential_minimum, {0, 3}});
  for (const auto& [potential, centre, variants] : cases) {
    for (const int variant : variants) {
      Params p;
      p.potential = potential;
      p.centre = centre;
      p.potential_of_all = variant == 1 || variant == 2;
      p.saddle = variant == 2;
      if (variant == 3) p.min_bound = 100000;  // dissolved
      if (variant == 4) p.direct_below = n + 1;
      p.types = {1, 4};
      p.apertures = {0.01, 0.05};
      SCOPED_TRACE(std::string(potential == PotentialMode::tree ? "tree " : "profile ") + to_string(centre) +
                   " variant " + std::to_string(variant));
      const ObjectResult want = unbind_object({all.id, all.x, all.v, all.m, fixed, type}, spec, frame, p);
      const ObjectResult got =
          unbind_spread_object(world, {share.id, share.x, share.v, share.m, share_fixed, share_type}, spec, frame, p);
      for (std::size_t k = 0; k < mine.size(); ++k) {
        ASSERT_EQ(got.bound[k], want.bound[mine[k]]) << "ID " << share.id[k];
        ASSERT_EQ(bits(got.energy[k]), bits(want.energy[mine[k]])) << "ID " << share.id[k];
      }
      const ObjectSummary &a = got.summary, &b = want.summary;
      EXPECT_EQ(a.n_particles, b.n_particles);
      EXPECT_EQ(a.n_fixed, b.n_fixed);
      EXPECT_EQ(a.n_removed, b.n_removed);
      EXPECT_EQ(a.iterations, b.iterations);
      EXPECT_EQ(a.converged, b.converged);
      EXPECT_EQ(a.dissolved, b.dissolved);
      EXPECT_EQ(bits(a.threshold), bits(b.threshold));
      EXPECT_GT(b.n_removed, 0);  // the fast ones go
      EXPECT_EQ(flat(a.properties), flat(b.properties));
      if (!b.dissolved) {  // the paths of every property taken
        EXPECT_TRUE(b.properties.vir.measured());
        EXPECT_TRUE(std::isfinite(b.properties.rs_fit) && std::isfinite(b.properties.b_to_a));
        EXPECT_EQ(b.properties.most_bound_ids.size(), p.n_most_bound);
        EXPECT_TRUE(std::isfinite(b.properties.by_type[1].half_mass_radius));
      }
    }
  }
}

TEST(UnbindSpreadMpi, SharesOutOfOrderRefused) {
  const mpi::Comm world;
  if (world.size() == 1) GTEST_SKIP() << "one share is always in order";
  const Cloud all = test::sample_halo(test::plummer(1.0, 0.05), 200, 3, 1000);
  // Every rank gives a tenth of the IDs from the top down: rank 1's are below rank 0's.
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < 10; ++i) mine.push_back(199 - 10 * static_cast<std::size_t>(world.rank()) - i);
  const Cloud share = all.permuted(mine);
  const auto spread = [&] { unbind_spread_object(world, {share.id, share.x, share.v, share.m, {}}, {}, {}, {}); };
  EXPECT_THROW(spread(), core::Error);
}

// The scans of the radius order (Vmax and its parabola, the outermost overdensity) over the runs of a
// profile spread over the ranks give their one-rank bits.
TEST(UnbindSpreadMpi, RadialScansSameBitsAsOneRank) {
  const mpi::Comm world;
  const Cloud all = test::sample_halo(test::plummer(1.0, 0.05), 5000, 21, 1);
  const std::size_t n = all.size();
  std::vector<std::size_t> every(n), mine;
  std::iota(every.begin(), every.end(), std::size_t{0});
  for (std::size_t i = 0; i < n; ++i)
    if (static_cast<int>(i % 5) % world.size() == world.rank()) mine.push_back(i);
  const std::array<double, 3> centre{0.001, 0, -0.002};
  const gravity::SphericalProfile serial(all.x, all.m, every, centre, 1.0, 0.0);
  const gravity::DistributedSphericalProfile spread(world, all.x, all.m, all.id, mine, centre, 1.0, 0.0);
  for (const std::size_t min_particles : {std::size_t{1}, std::size_t{50}, std::size_t{4000}}) {
    for (const double window : {0.0, 0.05, 0.5}) {
      const CircularVelocityPeak a =
          circular_velocity_peak(serial.radius(), serial.mass(), 1.0, min_particles, 0.002, window);
      const CircularVelocityPeak b = circular_velocity_peak(spread.run(), 1.0, min_particles, 0.002, window);
      EXPECT_EQ(bits(a.vmax), bits(b.vmax)) << min_particles << " " << window;
      EXPECT_EQ(bits(a.rmax), bits(b.rmax)) << min_particles << " " << window;
    }
  }
  for (const double outer : {0.05, 0.3, 2.0}) {
    for (const std::size_t inner : {std::size_t{0}, std::size_t{50}, std::size_t{1000}}) {
      const NfwFitParams fit{20, inner, 10, 0.001};
      EXPECT_EQ(bits(fit_nfw_scale_radius(serial.radius(), serial.mass(), outer, fit)),
                bits(fit_nfw_scale_radius(spread.run(), outer, fit)))
          << outer << " " << inner;
    }
  }
  EXPECT_TRUE(std::isfinite(fit_nfw_scale_radius(spread.run(), 0.3, NfwFitParams{})));  // a fit, not NaN alike
  for (const double target : {1.0, 100.0, 1e4, 1e12}) {
    const grid::Overdensity a = grid::outermost_overdensity(serial.radius(), serial.mass(), target, 20);
    const grid::Overdensity b = grid::outermost_overdensity(spread.run(), target, 20);
    EXPECT_EQ(bits(a.radius), bits(b.radius)) << target;
    EXPECT_EQ(bits(a.mass), bits(b.mass)) << target;
    EXPECT_EQ(a.n_particles, b.n_particles) << target;
  }
}

// The reduced inertia tensor's iterations over a set cut into blocks in order over the ranks give its
// one-rank bits.
TEST(UnbindSpreadMpi, ShapeSameBitsAsOneRank) {
  const mpi::Comm world;
  Cloud all = test::sample_halo(test::plummer(1.0, 0.05), 4000, 31, 1);
  for (std::size_t i = 0; i < all.size(); ++i) {  // a triaxial cloud
    all.x[3 * i] *= 1.6;
    all.x[3 * i + 2] *= 0.7;
  }
  const std::size_t n = all.size();
  std::vector<std::size_t> every(n);
  std::iota(every.begin(), every.end(), std::size_t{0});
  const std::size_t begin = n * static_cast<std::size_t>(world.rank()) / static_cast<std::size_t>(world.size()),
                    end = n * static_cast<std::size_t>(world.rank() + 1) / static_cast<std::size_t>(world.size());
  const std::vector<double> x(all.x.begin() + static_cast<std::ptrdiff_t>(3 * begin),
                              all.x.begin() + static_cast<std::ptrdiff_t>(3 * end));
  const std::vector<double> m(all.m.begin() + static_cast<std::ptrdiff_t>(begin),
                              all.m.begin() + static_cast<std::ptrdiff_t>(end));
  std::vector<std::size_t> mine(end - begin);
  std::iota(mine.begin(), mine.end(), std::size_t{0});
  for (const double radius : {0.02, 0.1, 0.5}) {
    const Shape a = reduced_inertia_shape(all.x, all.m, every, radius, 100, 1e-3);
    const Shape b = reduced_inertia_shape(world, x, m, mine, radius, 100, 1e-3);
    EXPECT_EQ(bits(a.b_to_a), bits(b.b_to_a)) << radius;
    EXPECT_EQ(bits(a.c_to_a), bits(b.c_to_a)) << radius;
    for (std::size_t d = 0; d < 3; ++d) EXPECT_EQ(bits(a.major_axis[d]), bits(b.major_axis[d])) << radius;
    EXPECT_EQ(a.iterations, b.iterations);
    if (radius >= 0.1) {
      EXPECT_TRUE(std::isfinite(a.b_to_a) && a.b_to_a < 0.9) << radius;  // triaxial, as made
    }
  }
}

}  // namespace
}  // namespace phew::unbind
