#include <phew/synth/sequence.hpp>

#include <phew/grid/geometry.hpp>

#include <cmath>
#include <numbers>

namespace phew::synth {
namespace {

constexpr int kTrackLevels = 10;  // 2^10 centre steps per output interval
constexpr int kMaxLevel = 40;     // particle steps down to interval / 2^40
constexpr std::uint64_t kTicks = std::uint64_t{1} << kMaxLevel;

double norm(const Vec3& v) { return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

// Accelerations of all halo centres. Each pair (a, b) attracts with the mean of "a as a point in b's
// field" and "b as a point in a's field",
//   F_ab = -G [M_a M_b(<d) + M_b M_a(<d)] / 2 d^2,
// equal and opposite, so that the pair's momentum is kept even while the halos overlap (the plain
// point-in-field forces are not: two overlapping cusps would push each other along for ever).
// A halo lighter than b also feels Chandrasekhar's drag in b,
//   a = -4 pi G^2 M_a rho_b(d) lnL [erf(X) - 2X/sqrt(pi) exp(-X^2)] v / |v|^3,  X = |v| / (sqrt(2) sigma_b(d)),
// with lnL = ln(1 + M_b / M_a) unless the scene sets it; b takes the opposite momentum.
void centre_accelerations(const Scene& scene, const HaloSet& halos, const std::vector<double>& mass,
                          const std::vector<Vec3>& x, const std::vector<Vec3>& v, std::vector<Vec3>& acc) {
  const std::size_t n = x.size();
  acc.assign(n, Vec3{0, 0, 0});
  for (std::size_t a = 0; a < n; ++a) {
    if (!halos.is_halo(a)) continue;
    for (std::size_t b = a + 1; b < n; ++b) {
      if (!halos.is_halo(b)) continue;
      const Vec3 d = halos.separation(x[a].data(), x[b]);
      const double r = norm(d);
      if (r == 0) continue;
      const Profile &pa = halos.profile(a), &pb = halos.profile(b);
      const double G = pa.spec().G;
      const double f = -0.5 * G * (mass[a] * pb.enclosed_mass(r) + mass[b] * pa.enclosed_mass(r)) / (r * r * r);
      for (std::size_t i = 0; i < 3; ++i) {
        acc[a][i] += f * d[i] / mass[a];
        acc[b][i] -= f * d[i] / mass[b];
      }
    }
  }
  if (!scene.sequence.dynamical_friction) return;
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b || !halos.is_halo(a) || !halos.is_halo(b) || !(mass[b] > mass[a])) continue;
      const Profile& host = halos.profile(b);
      const double r = std::max(norm(halos.separation(x[a].data(), x[b])), host.inner_radius());
      if (r >= host.outer_radius()) continue;
      const Vec3 dv{v[a][0] - v[b][0], v[a][1] - v[b][1], v[a][2] - v[b][2]};
      const double speed = norm(dv);
      if (speed == 0) continue;
      const double G = host.spec().G;
      const double X = speed / std::sqrt(2.0 * halos.jeans(b).sigma2(r));
      const double lnl = scene.sequence.coulomb_log > 0 ? scene.sequence.coulomb_log : std::log1p(mass[b] / mass[a]);
      const double k = -4.0 * std::numbers::pi * G * G * mass[a] * host.density(r) * lnl *
                       (std::erf(X) - 2.0 * X / std::sqrt(std::numbers::pi) * std::exp(-X * X)) /
                       (speed * speed * speed);
      for (std::size_t i = 0; i < 3; ++i) {
        acc[a][i] += k * dv[i];
        acc[b][i] -= k * dv[i] * mass[a] / mass[b];
      }
    }
  }
}

// One output interval of the centres: 2^10 kick-drift-kick steps from (x, v), every sub-step stored.
void integrate_centres(const Scene& scene, const HaloSet& halos, const std::vector<double>& mass, std::vector<Vec3> x,
                       std::vector<Vec3> v, double dt, std::vector<std::vector<Vec3>>& out_x,
                       std::vector<std::vector<Vec3>>& out_v) {
  const std::size_t steps = std::size_t{1} << kTrackLevels, n = x.size();
  const double h = dt / static_cast<double>(steps);
  out_x.assign(steps + 1, {});
  out_v.assign(steps + 1, {});
  std::vector<Vec3> a;
  auto accelerations = [&] { centre_accelerations(scene, halos, mass, x, v, a); };
  out_x[0] = x;
  out_v[0] = v;
  accelerations();
  for (std::size_t s = 1; s <= steps; ++s) {
    for (std::size_t c = 0; c < n; ++c)
      for (std::size_t d = 0; d < 3; ++d) {
        v[c][d] += 0.5 * h * a[c][d];
        x[c][d] += h * v[c][d];
      }
    accelerations();
    for (std::size_t c = 0; c < n; ++c)
      for (std::size_t d = 0; d < 3; ++d) v[c][d] += 0.5 * h * a[c][d];
    out_x[s] = x;
    out_v[s] = v;
  }
}

// Total masses of the halo models (0 for backgrounds): who drags whom, and how hard.
std::vector<double> halo_masses(const HaloSet& halos) {
  std::vector<double> m(halos.size(), 0.0);
  for (std::size_t c = 0; c < m.size(); ++c)
    if (halos.is_halo(c)) m[c] = halos.profile(c).total_mass();
  return m;
}

}  // namespace

CentreTrack centre_track(const Scene& scene, const HaloSet& halos, const std::vector<ComponentTruth>& truth) {
  CentreTrack track;
  const double dt = scene.sequence.interval_myr / time_unit_myr();
  const std::vector<double> mass = halo_masses(halos);
  std::vector<Vec3> x, v;
  for (const auto& t : truth) {
    x.push_back(t.center);
    v.push_back(t.halo ? t.velocity : Vec3{0, 0, 0});
  }
  std::vector<std::vector<Vec3>> fx, fv;
  for (int s = 0; s < scene.snapshots(); ++s) {
    if (s > 0) {
      if (scene.sequence.mode == SequenceMode::restricted) {
        integrate_centres(scene, halos, mass, x, v, dt, fx, fv);
        x = fx.back();
        v = fv.back();
      } else {
        for (std::size_t c = 0; c < x.size(); ++c)
          for (std::size_t d = 0; d < 3; ++d) x[c][d] += dt * v[c][d];
      }
      for (auto& c : x)
        for (double& e : c) e = grid::wrap_position(e, scene.box);
    }
    track.time.push_back(s * dt);
    track.center.push_back(x);
    track.velocity.push_back(v);
  }
  return track;
}

Evolution::Evolution(const Scene& scene, const HaloSet& halos, Particles& particles, const CentreTrack& track)
    : scene_(scene), halos_(halos), particles_(particles), track_(track) {}

// Centres at `tick` (of kTicks per interval): a stored sub-step, or cubic Hermite between two.
void Evolution::centres_at(std::uint64_t tick, std::vector<Vec3>& out) const {
  constexpr int shift = kMaxLevel - kTrackLevels;
  const auto k = static_cast<std::size_t>(tick >> shift);
  const std::uint64_t rem = tick & ((std::uint64_t{1} << shift) - 1);
  if (rem == 0) {
    out = fine_x_[k];
    return;
  }
  const double s = std::ldexp(static_cast<double>(rem), -shift), s2 = s * s, s3 = s2 * s;
  const double h00 = 2 * s3 - 3 * s2 + 1, h10 = s3 - 2 * s2 + s, h01 = -2 * s3 + 3 * s2, h11 = s3 - s2;
  out.resize(fine_x_[k].size());
  for (std::size_t c = 0; c < out.size(); ++c)
    for (std::size_t d = 0; d < 3; ++d)
      out[c][d] = h00 * fine_x_[k][c][d] + h10 * fine_dt_ * fine_v_[k][c][d] + h01 * fine_x_[k + 1][c][d] +
                  h11 * fine_dt_ * fine_v_[k + 1][c][d];
}

void Evolution::integrate_particle(std::size_t i, double dt) {
  double* x = &particles_.position[3 * i];
  double* v = &particles_.velocity[3 * i];
  const double eta = scene_.sequence.accuracy, floor_r = 1e-3 * halos_.smallest_scale_radius();
  std::vector<Vec3> centres;
  double nearest = 0;
  auto acceleration = [&](std::uint64_t tick) {
    centres_at(tick, centres);
    nearest = INFINITY;
    for (std::size_t h = 0; h < centres.size(); ++h)
      if (halos_.is_halo(h)) nearest = std::min(nearest, norm(halos_.separation(x, centres[h])));
    return halos_.acceleration(x, centres);
  };
  std::uint64_t t = 0;
  Vec3 a = acceleration(0);
  while (t < kTicks) {
    const double r = std::max(nearest, floor_r);
    const double an = norm(a), vn = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    double want = INFINITY;
    if (an > 0) want = std::sqrt(r / an);
    if (vn > 0) want = std::min(want, r / vn);
    want *= eta;
    int level = want >= dt ? 0 : static_cast<int>(std::ceil(std::log2(dt / want)));
    if (level > kMaxLevel) {
      level = kMaxLevel;
      ++stats_.capped;
    }
    while (t & ((kTicks >> level) - 1)) ++level;  // land on the interval's end exactly
    const double h = std::ldexp(dt, -level);
    for (std::size_t d = 0; d < 3; ++d) {
      v[d] += 0.5 * h * a[d];
      x[d] += h * v[d];
    }
    t += kTicks >> level;
    a = acceleration(t);
    for (std::size_t d = 0; d < 3; ++d) v[d] += 0.5 * h * a[d];
    ++stats_.particle_steps;
  }
}

void Evolution::advance() {
  const double dt = scene_.sequence.interval_myr / time_unit_myr();
  const auto s = static_cast<std::size_t>(snapshot_);
  const std::vector<Vec3>& bulk = track_.velocity[s];
  Particles& p = particles_;
  if (scene_.sequence.mode == SequenceMode::ballistic) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      const auto c = static_cast<std::size_t>(p.component[i]);
      for (std::size_t d = 0; d < 3; ++d)
        p.position[3 * i + d] += dt * (halos_.is_halo(c) ? bulk[c][d] : p.velocity[3 * i + d]);
    }
  } else {
    // The same integration as centre_track's, from the same state, so the sub-steps end on the track.
    integrate_centres(scene_, halos_, halo_masses(halos_), track_.center[s], track_.velocity[s], dt, fine_x_, fine_v_);
    fine_dt_ = dt / static_cast<double>(std::size_t{1} << kTrackLevels);
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (halos_.is_halo(static_cast<std::size_t>(p.component[i])))
        integrate_particle(i, dt);
      else
        for (std::size_t d = 0; d < 3; ++d) p.position[3 * i + d] += dt * p.velocity[3 * i + d];
    }
  }
  if (scene_.box > 0)
    for (double& x : p.position) x = grid::wrap_position(x, scene_.box);
  ++snapshot_;
}

}  // namespace phew::synth
