// Gravity on 1-4 ranks gives the same bits as on one: the distributed FFT, the mesh field sampled
// anywhere a rank may sample it, and forests built from the cubes each rank holds.
#include <phew/gravity/distributed_profile.hpp>
#include <phew/gravity/fft3d.hpp>
#include <phew/gravity/forest.hpp>
#include <phew/gravity/long_range.hpp>
#include <phew/gravity/spherical_profile.hpp>

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <map>
#include <random>

namespace phew::gravity {
namespace {

// Made after MPI_Init (by the test main), not at static initialisation.
struct Comms {
  mpi::Comm world, self{MPI_COMM_SELF};
};
const Comms& comms() {
  static const Comms c;
  return c;
}

// Clustered particles in [0, L)^3: half in three Gaussian clumps, half uniform; every rank makes the same.
std::vector<Source> particles(std::size_t n, double L, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, L);
  std::normal_distribution<double> g(0, 0.04 * L);
  const double centres[3][3] = {
      {0.2 * L, 0.5 * L, 0.5 * L}, {0.55 * L, 0.3 * L, 0.9 * L}, {0.97 * L, 0.8 * L, 0.1 * L}};
  std::vector<Source> s(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t d = 0; d < 3; ++d) {
      const double x = i % 2 ? u(rng) : centres[i / 2 % 3][d] + g(rng);
      s[i].x[d] = x - L * std::floor(x / L);
    }
    s[i].m = 1.0 + 0.1 * static_cast<double>(i % 7);
    s[i].id = 1000 + (i * 7919) % n;  // IDs not in input order
  }
  return s;
}

TEST(SlabFftMpi, SameBitsAsOneRank) {
  const mpi::Comm &world = comms().world, &self = comms().self;
  // Non-square and square planes: one rank transposes the latter in place.
  for (const std::array<std::int64_t, 3> n : {std::array<std::int64_t, 3>{12, 10, 9}, {10, 10, 9}}) {
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> f(static_cast<std::size_t>(n[0] * n[1] * n[2]));
    for (double& v : f) v = u(rng);
    const SlabFft serial(n, self), parallel(n, world, 2);
    const auto& xs = parallel.x_slabs();
    const auto plane = static_cast<std::size_t>(n[1] * n[2]);
    const std::vector<double> mine(f.begin() + static_cast<std::ptrdiff_t>(xs.begin(world.rank()) * plane),
                                   f.begin() + static_cast<std::ptrdiff_t>(xs.end(world.rank()) * plane));
    const auto spec = parallel.forward(mine);
    const auto spec_all = serial.forward(f);
    const auto row = static_cast<std::size_t>(n[0] * (n[2] / 2 + 1));  // [kx][kz] per ky
    const auto& ys = parallel.y_slabs();
    for (std::size_t i = 0; i < spec.size(); ++i)
      ASSERT_EQ(spec[i], spec_all[static_cast<std::size_t>(ys.begin(world.rank())) * row + i]) << i;
    const auto back = parallel.backward(spec);
    const auto back_all = serial.backward(spec_all);
    for (std::size_t i = 0; i < back.size(); ++i)
      ASSERT_EQ(back[i], back_all[static_cast<std::size_t>(xs.begin(world.rank())) * plane + i]) << i;
  }
}

TEST(LongRangeFieldMpi, SameBitsAsOneRankWhereverARankSamples) {
  const mpi::Comm &world = comms().world, &self = comms().self;
  const double L = 10, reach = 1.3;
  const auto src = particles(6000, L, 7);
  std::vector<double> pos, mass;
  for (const Source& s : src) {
    pos.insert(pos.end(), s.x, s.x + 3);
    mass.push_back(s.m);
  }
  // This rank's contiguous share, in order (as read_share gives it).
  const std::size_t n = src.size(), r = static_cast<std::size_t>(world.rank()),
                    p = static_cast<std::size_t>(world.size());
  const std::size_t b = n * r / p, e = n * (r + 1) / p;
  const std::vector<double> my_pos(pos.begin() + 3 * static_cast<std::ptrdiff_t>(b),
                                   pos.begin() + 3 * static_cast<std::ptrdiff_t>(e));
  const std::vector<double> my_mass(mass.begin() + static_cast<std::ptrdiff_t>(b),
                                    mass.begin() + static_cast<std::ptrdiff_t>(e));
  const grid::GridGeometry mesh{{32, 32, 32}, {0, 0, 0}, {L, L, L}, true};
  const LongRangeField parallel(mesh, 1.0, 1.25 * L / 32, my_pos, my_mass, reach, world, 2);  // threads too
  const LongRangeField serial(mesh, 1.0, 1.25 * L / 32, pos, mass, reach, self);
  const auto& slabs = parallel.slabs();
  if (slabs.planes(world.rank()) == 0) return;
  const double lo = static_cast<double>(slabs.begin(world.rank())) * L / 32,
               hi = static_cast<double>(slabs.end(world.rank())) * L / 32;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (int t = 0; t < 500; ++t) {
    const double x[3] = {lo - reach + (hi - lo + 2 * reach) * u(rng), L * u(rng), L * u(rng)};
    double pa = 0, aa[3], ps = 0, as[3];
    parallel.sample(x, pa, aa);
    serial.sample(x, ps, as);
    ASSERT_EQ(pa, ps);
    for (int d = 0; d < 3; ++d) ASSERT_EQ(aa[d], as[d]);
  }
}

// Group-walk results by particle ID for the sources with lo <= x < hi.
std::map<std::uint64_t, std::array<double, 4>> by_groups(const Forest& f, const std::vector<Source>& src, double lo,
                                                         double hi, const LongRangeField* mesh = nullptr) {
  std::map<std::uint64_t, std::array<double, 4>> out;
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i].x[0] < lo || src[i].x[0] >= hi || out.count(src[i].id)) continue;
    f.accumulate_group(i, [&](std::size_t k, const double*, double p, const double* a) {
      std::array<double, 4> v{p, a[0], a[1], a[2]};
      if (mesh) {
        double pl = 0, al[3];
        mesh->sample(src[k].x, pl, al);
        v = {p + pl, a[0] + al[0], a[1] + al[1], a[2] + al[2]};
      }
      out[src[k].id] = v;
    });
  }
  return out;
}

void expect_same_where_both(const std::map<std::uint64_t, std::array<double, 4>>& a,
                            const std::map<std::uint64_t, std::array<double, 4>>& b) {
  std::size_t n = 0;
  for (const auto& [id, v] : a) {
    auto it = b.find(id);
    if (it == b.end()) continue;
    ASSERT_EQ(v, it->second) << "particle " << id;
    ++n;
  }
  EXPECT_GT(n, 0u);
}

// The sources of the cubes meeting held_x, in a rank-dependent order (the forest must not care).
std::vector<Source> held_sources(const std::vector<Source>& all, const grid::GridGeometry& box, std::int64_t cubes,
                                 std::array<double, 2> held_x) {
  std::vector<Source> out;
  const double w = box.extent[0] / static_cast<double>(cubes);
  for (const Source& s : all) {
    const std::int64_t cx =
        grid::fold_index(static_cast<std::int64_t>(std::floor((s.x[0] - box.origin[0]) / w)), cubes, box.periodic);
    if (Forest::cube_meets(box, w, cx, held_x)) out.push_back(s);
  }
  std::reverse(out.begin(), out.end());
  std::rotate(
      out.begin(),
      out.begin() + static_cast<std::ptrdiff_t>(out.size() * static_cast<std::size_t>(comms().world.rank()) / 5),
      out.end());
  return out;
}

TEST(ForestMpi, PeriodicShortRangeSameBitsFromTheCubesARankHolds) {
  const mpi::Comm& world = comms().world;
  const double L = 10;
  const auto src = particles(8000, L, 9);
  const grid::GridGeometry box{{1, 1, 1}, {0, 0, 0}, {L, L, L}, true};
  const double r_split = 0.4, w = L / 5;  // 5 cubes of 2 >= r_cut = 1.8
  const double lo = L * world.rank() / world.size(), hi = L * (world.rank() + 1) / world.size();
  const std::array<double, 2> held{lo - w, hi + w};
  const Forest parallel(box, {5, 5, 5}, held, held_sources(src, box, 5, held), PairForce(1, 0.01, r_split), {0.5, 8});
  // (held_sources is deterministic: `mine` below is the same list the forest was built from.)
  const Forest serial(box, {5, 5, 5}, {0, L}, src, PairForce(1, 0.01, r_split), {0.5, 8});
  const auto mine = held_sources(src, box, 5, held);
  expect_same_where_both(by_groups(parallel, mine, lo, hi), by_groups(serial, src, lo, hi));
  for (const Source& s : src) {
    if (s.x[0] < lo || s.x[0] >= hi) continue;
    double pa = 0, aa[3] = {0, 0, 0}, ps = 0, as[3] = {0, 0, 0};
    parallel.accumulate(s.x, pa, aa);
    serial.accumulate(s.x, ps, as);
    ASSERT_EQ(pa, ps);
    for (int d = 0; d < 3; ++d) ASSERT_EQ(aa[d], as[d]);
  }
}

TEST(ForestMpi, OpenBoxSameBitsWithSharedCubeMoments) {
  const mpi::Comm &world = comms().world, &self = comms().self;
  const double L = 10, theta = 0.5;
  const auto src = particles(8000, L, 13);
  const grid::GridGeometry box{{1, 1, 1}, {0, 0, 0}, {L, L, L}, false};
  const double w = L / 8;
  const double lo = L * world.rank() / world.size(), hi = L * (world.rank() + 1) / world.size();
  const std::array<double, 2> held{lo - w / theta - w, hi + w / theta + w};
  Forest parallel(box, {8, 8, 8}, held, held_sources(src, box, 8, held), PairForce(1, 0.01), {theta, 8});
  parallel.share_cube_moments(world, [&](std::int64_t key) {
    const double centre = (static_cast<double>(key / 64) + 0.5) * w;
    return centre >= lo && centre < hi;
  });
  Forest serial(box, {8, 8, 8}, {-1e300, 1e300}, src, PairForce(1, 0.01), {theta, 8});
  serial.share_cube_moments(self, [](std::int64_t) { return true; });
  expect_same_where_both(by_groups(parallel, held_sources(src, box, 8, held), lo, hi), by_groups(serial, src, lo, hi));
  for (const Source& s : src) {
    if (s.x[0] < lo || s.x[0] >= hi) continue;
    double pa = 0, aa[3] = {0, 0, 0}, ps = 0, as[3] = {0, 0, 0};
    parallel.accumulate(s.x, pa, aa);
    serial.accumulate(s.x, ps, as);
    ASSERT_EQ(pa, ps);
    for (int d = 0; d < 3; ++d) ASSERT_EQ(aa[d], as[d]);
  }
}

// A set spread over the ranks in no order gives SphericalProfile's bits: every potential, U, the total
// mass and Phi(r) (at members' radii too, where the ties of `<=` fall), with radii tied in value (a
// lattice about the centre), members at the centre, and entries that are not members.
TEST(DistributedSphericalProfileMpi, SameBitsAsTheSerialProfile) {
  const mpi::Comm& world = comms().world;
  for (const std::size_t n : {std::size_t{0}, std::size_t{2}, std::size_t{7}, std::size_t{3000}}) {
    for (const double eps : {0.0, 0.03}) {
      std::mt19937_64 rng(17 + n);
      std::normal_distribution<double> g(0, 1);
      const std::array<double, 3> centre{0.25, -0.5, 1.0};
      std::vector<double> x(3 * n), m(n);
      std::vector<std::uint64_t> key(n);
      for (std::size_t i = 0; i < n; ++i) {
        // A third on a lattice of spacing 1/4 about the centre (equal radii, some at the centre itself).
        for (std::size_t d = 0; d < 3; ++d)
          x[3 * i + d] = i % 3 == 0 ? centre[d] + 0.25 * static_cast<double>(static_cast<int>(rng() % 5) - 2)
                                    : centre[d] + g(rng) / (1 + 0.1 * static_cast<double>(i % 11));
        m[i] = 0.5 + 0.01 * static_cast<double>(rng() % 97);
        key[i] = 1000 + 3 * i;  // ascending with the index: ties fall alike in both
      }
      std::vector<std::size_t> all, mine;  // every fifth entry is no member
      for (std::size_t i = 0; i < n; ++i) {
        if (i % 5 == 4) continue;
        all.push_back(i);
        if (static_cast<int>((i * 2654435761u) % 7) % world.size() == world.rank()) mine.push_back(i);
      }
      const SphericalProfile serial(x, m, all, centre, 1.7, eps);
      const DistributedSphericalProfile spread(world, x, m, key, mine, centre, 1.7, eps);
      std::vector<double> want(n, -1), got(n, -1);
      serial.potentials(want);
      spread.potentials(got);
      for (const std::size_t i : mine)
        ASSERT_EQ(std::bit_cast<std::uint64_t>(got[i]), std::bit_cast<std::uint64_t>(want[i])) << i;
      EXPECT_EQ(spread.size(), all.size());
      EXPECT_EQ(std::bit_cast<std::uint64_t>(spread.total_mass()), std::bit_cast<std::uint64_t>(serial.total_mass()));
      EXPECT_EQ(std::bit_cast<std::uint64_t>(spread.potential_energy()),
                std::bit_cast<std::uint64_t>(serial.potential_energy()));
      // Values per member carried into the run's order: each run member's own (its key, its x).
      std::vector<double> values;
      for (const std::size_t i : mine) {
        values.push_back(static_cast<double>(key[i]));
        values.push_back(x[3 * i]);
      }
      const std::vector<double> carried = spread.carry(values, 2);
      ASSERT_EQ(carried.size(), 2 * spread.run_keys().size());
      for (std::size_t k = 0; k < spread.run_keys().size(); ++k) {
        const std::uint64_t kk = spread.run_keys()[k];
        ASSERT_EQ(carried[2 * k], static_cast<double>(kk));
        ASSERT_EQ(carried[2 * k + 1], x[3 * ((kk - 1000) / 3)]);
      }
      std::vector<double> radii{0.0, 0.25, 0.5, 1e-3, 1e9};
      for (std::size_t k = 0; k < serial.size(); k += 97) radii.push_back(serial.radius()[k]);
      for (const double r : radii)
        EXPECT_EQ(std::bit_cast<std::uint64_t>(spread.at_radius(r)), std::bit_cast<std::uint64_t>(serial.at_radius(r)))
            << "n " << n << " r " << r;
    }
  }
}

}  // namespace
}  // namespace phew::gravity
