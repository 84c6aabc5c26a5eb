// DTFE fields over ranks: block decomposition with ghost zones, then every schedule (none, model,
// dynamic) gives maps identical, byte for byte, to a serial computation of each field from all the
// particles; and the default margins, which may need wider ghost zones, are the serial ones too.
// Registered at 1, 2, 3 and 4 ranks.
#include <phew/dtfe/decomposition.hpp>
#include <phew/dtfe/field_runner.hpp>
#include <phew/grid/particle_index.hpp>
#include <phew/dtfe/surface_density.hpp>
#include <phew/dtfe/surface_maps.hpp>
#include <phew/mpi/comm.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

namespace phew::dtfe {
namespace {

constexpr double kBox = 10.0;

// Every rank makes the same particles: three Plummer-like blobs in a uniform background, wrapped.
void particles(std::vector<double>& pos, std::vector<double>& mass) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double blob[3][4] = {{2, 2, 2, 0.3}, {7.5, 3, 9.8, 0.2}, {5, 8, 5, 0.5}};
  for (int i = 0; i < 12000; ++i) {
    double x[3];
    if (i < 8000) {
      const double* b = blob[i % 3];
      const double r = b[3] / std::sqrt(std::pow(std::max(u(rng), 1e-12), -2.0 / 3.0) - 1);
      const double ct = 2 * u(rng) - 1, ph = 6.283185307 * u(rng), st = std::sqrt(1 - ct * ct);
      x[0] = b[0] + r * st * std::cos(ph), x[1] = b[1] + r * st * std::sin(ph), x[2] = b[2] + r * ct;
    } else {
      for (double& v : x) v = kBox * u(rng);
    }
    for (double& v : x) v -= kBox * std::floor(v / kBox);
    pos.insert(pos.end(), x, x + 3);
    mass.push_back(1.0 + 0.5 * (i % 3));
  }
}

std::vector<std::array<double, 3>> centres() {
  return {{2, 2, 2}, {7.5, 3, 9.8}, {5, 8, 5}, {0.1, 9.9, 5}, {2.1, 2.3, 1.9}, {9, 1, 1}, {5, 5, 5}, {7.4, 3.1, 0.1}};
}

FieldGeometry geometry(const std::array<double, 3>& c) {
  FieldGeometry g;
  g.center = c;
  g.size = 2.0;
  g.depth = 3.0;
  g.margin = 0.3;
  g.resolution = 24;
  g.axis = 1;
  return g;
}

TEST(DtfeMpi, EveryScheduleGivesTheSerialMaps) {
  const mpi::Comm comm;
  std::vector<double> pos, mass;
  particles(pos, mass);
  const auto cs = centres();
  const MapSettings settings{MapMode::ray, 2, Backend::qhull, 1};
  // The reference, from all particles (on rank 0, which checks).
  std::vector<std::vector<double>> reference;
  if (comm.root())
    for (const auto& c : cs)
      reference.push_back(
          surface_density(select_field(pos, mass, geometry(c), {kBox, kBox, kBox}), geometry(c), settings).sigma);

  // This rank's share of the particles, then the decomposition and the ghost exchange.
  const std::size_t n = mass.size(), r = static_cast<std::size_t>(comm.rank()),
                    p = static_cast<std::size_t>(comm.size());
  const std::size_t b = n * r / p, e = n * (r + 1) / p;
  const std::vector<double> my_pos(pos.begin() + static_cast<long>(3 * b), pos.begin() + static_cast<long>(3 * e));
  const std::vector<double> my_mass(mass.begin() + static_cast<long>(b), mass.begin() + static_cast<long>(e));
  const grid::Box box{{0, 0, 0}, {kBox, kBox, kBox}, true};
  const auto hv = geometry(cs[0]).half_width();
  const auto ax = view_axes(geometry(cs[0]).axis);
  std::array<double, 3> half{}, ghost{};
  for (std::size_t k = 0; k < 3; ++k) half[static_cast<std::size_t>(ax[k])] = hv[k];
  for (std::size_t d = 0; d < 3; ++d) ghost[d] = half[d] * (1 + 1e-6);
  const VolumeDecomposition blocks(box, ghost, comm.size());
  const GhostedParticles local = distribute({my_pos, my_mass}, blocks, comm);
  const grid::ParticleIndex index(local.position, local.mass, box, 0.5);

  std::vector<FieldTask> tasks;
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (blocks.owner(cs[i]) == comm.rank()) tasks.push_back({i, index.count(cs[i], half)});
  for (Schedule s : {Schedule::none, Schedule::model, Schedule::dynamic}) {
    RunReport report;
    const auto out = run_fields(
        tasks, [&](std::size_t i) { return field_points(index, geometry(cs[i])); },
        [&](std::size_t i, const FieldPoints& pts) { return surface_density(pts, geometry(cs[i]), settings); }, s, comm,
        report);
    // Every field computed exactly once somewhere, with the reference's bytes.
    std::vector<double> flat;
    for (const auto& o : out) {
      EXPECT_TRUE(o.error.empty()) << o.error;
      flat.push_back(static_cast<double>(o.index));
      flat.insert(flat.end(), o.result.sigma.begin(), o.result.sigma.end());
    }
    const auto all = comm.all_gatherv<double>(flat);
    if (!comm.root()) continue;
    const std::size_t row = 1 + reference[0].size();
    ASSERT_EQ(all.size(), cs.size() * row) << to_string(s);
    std::map<std::size_t, int> seen;
    for (std::size_t at = 0; at < all.size(); at += row) {
      const auto i = static_cast<std::size_t>(all[at]);
      ++seen[i];
      EXPECT_EQ(std::memcmp(&all[at + 1], reference[i].data(), reference[i].size() * sizeof(double)), 0)
          << "field " << i << " schedule " << to_string(s);
    }
    EXPECT_EQ(seen.size(), cs.size());
    if (s == Schedule::model) {
      EXPECT_GE(report.samples, 1);
      EXPECT_LE(report.samples, static_cast<int>(cs.size()));
    }
  }
}

// A periodic box with an empty square tube along z (|x - 5|, |y - 5| < 3). Maps through the whole box
// (so the ghost zones can only cut the map's axes) in the tube need margins beyond it, wider than the
// first ghost zones: further rounds with wider ones must give the serial margins and maps.
SurfaceMapsInput tube(std::size_t begin, std::size_t end) {
  SurfaceMapsInput in;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.0, kBox);
  for (std::size_t n = 0; n < end;) {
    const double x = u(rng), y = u(rng), z = u(rng);
    if (std::abs(x - 5) < 3 && std::abs(y - 5) < 3) continue;
    if (n++ < begin) continue;
    in.position.insert(in.position.end(), {x, y, z});
    in.mass.push_back(1);
  }
  in.box_size = {kBox, kBox, kBox};
  in.periodic = true;
  in.centres = {{5, 5, 5}, {5.5, 4, 1}, {2, 2, 2}, {8, 8, 8}, {1, 9, 5}, {7.8, 5, 5}};
  for (std::size_t i = 0; i < in.centres.size(); ++i) in.ids.push_back(static_cast<std::int64_t>(i + 1));
  return in;
}

TEST(DtfeMpi, DefaultMarginsAreTheSerialOnesOnAnyNumberOfRanks) {
  const mpi::Comm comm, self(MPI_COMM_SELF);
  constexpr std::size_t kParticles = 4000;
  SurfaceMapsParams params;
  params.size = 1;
  params.resolution = 16;
  params.margin = 0.1;
  params.auto_margin = true;
  params.map = {MapMode::ray, 1, Backend::qhull, 1};
  const SurfaceMaps serial = surface_maps(tube(0, kParticles), params, self);
  EXPECT_EQ(serial.summary.margin_rounds, 0);
  EXPECT_GT(serial.maps.rows[0].margin, 2.5);  // out of the tube
  EXPECT_EQ(serial.summary.pixels_outside, 0u);

  const std::size_t r = static_cast<std::size_t>(comm.rank()), p = static_cast<std::size_t>(comm.size());
  const SurfaceMaps mine = surface_maps(tube(kParticles * r / p, kParticles * (r + 1) / p), params, comm);
  if (comm.size() > 1) {
    EXPECT_GT(mine.summary.margin_rounds, 0);  // the map's axes were cut, the tube's field needed more
  }
  // This rank's block of rows: the serial rows, byte for byte.
  const std::size_t n = serial.maps.rows.size(), first = n * r / p, pixels = 16 * 16;
  ASSERT_EQ(mine.maps.rows.size(), n * (r + 1) / p - first);
  for (std::size_t i = 0; i < mine.maps.rows.size(); ++i) {
    EXPECT_EQ(mine.maps.rows[i].margin, serial.maps.rows[first + i].margin) << "field " << first + i;
    EXPECT_EQ(mine.maps.rows[i].n_particles, serial.maps.rows[first + i].n_particles) << "field " << first + i;
    EXPECT_EQ(
        std::memcmp(&mine.maps.sigma[i * pixels], &serial.maps.sigma[(first + i) * pixels], pixels * sizeof(double)), 0)
        << "field " << first + i;
  }
  EXPECT_EQ(mine.summary.margin_max, serial.summary.margin_max);
}

}  // namespace
}  // namespace phew::dtfe
