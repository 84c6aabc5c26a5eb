#include <phew/unbind/properties.hpp>

#include <phew/gravity/spherical_profile.hpp>
#include <phew/unbind/nfw.hpp>
#include <phew/unbind/potential.hpp>
#include <phew/unbind/shape.hpp>
#include <phew/unbind/type_properties.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <utility>
#include <vector>

namespace phew::unbind {

namespace {

using Vec = std::array<double, 3>;

Vec cross(const Vec& a, const Vec& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
double norm(const Vec& a) { return std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

Vec to_comoving(const Vec& local, const Vec& peak, const Frame& frame) {
  Vec out{};
  for (std::size_t d = 0; d < 3; ++d) out[d] = wrap_into(frame.box, peak[d] + local[d] / frame.scale_factor, d);
  return out;
}

// Solves the 3x3 system a x = b by Gaussian elimination with partial pivoting; false when singular.
bool solve3(std::array<std::array<double, 3>, 3> a, std::array<double, 3> b, std::array<double, 3>& x) {
  for (std::size_t c = 0; c < 3; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < 3; ++r)
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    if (a[p][c] == 0) return false;
    std::swap(a[p], a[c]);
    std::swap(b[p], b[c]);
    for (std::size_t r = c + 1; r < 3; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < 3; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  for (std::size_t c = 3; c-- > 0;) {
    double s = b[c];
    for (std::size_t k = c + 1; k < 3; ++k) s -= a[c][k] * x[k];
    x[c] = s / a[c][c];
  }
  return true;
}

}  // namespace

CircularVelocityPeak circular_velocity_peak(std::span<const double> radius, std::span<const double> mass, double G,
                                            std::size_t min_particles, double min_radius, double window) {
  return circular_velocity_peak(grid::RadialRun::whole(radius, mass), G, min_particles, min_radius, window);
}

CircularVelocityPeak circular_velocity_peak(const grid::RadialRun& run, double G, std::size_t min_particles,
                                            double min_radius, double window) {
  const std::span<const double> radius = run.radius;
  const std::size_t n = radius.size();
  const std::vector<double> enclosed = run.enclosed();
  std::vector<double> v2(n, -1.0);  // -1: not on the trusted curve
  struct Best {
    int has;
    double v2;
    std::uint64_t at;
    double radius;
  };
  Best mine{0, 0, 0, 0};  // the first largest of the run
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t g = run.first + k;
    if (g + 1 < std::max<std::size_t>(min_particles, 1) || !(radius[k] > 0) || radius[k] < min_radius) continue;
    v2[k] = G * enclosed[k] / radius[k];
    if (!mine.has || v2[k] > mine.v2) mine = {1, v2[k], g, radius[k]};
  }
  Best best{0, 0, 0, 0};  // the first largest of the runs, in rank order
  for (const Best& b : run.comm.all_gather(mine))
    if (b.has && (!best.has || b.v2 > best.v2)) best = b;
  if (!best.has) return {kNaN, kNaN};
  const CircularVelocityPeak raw{std::sqrt(best.v2), best.radius};
  // The contiguous run of trusted points around the peak within the window: from after the last point
  // below it before the peak to before the first point below it after the peak.
  const double floor = (1 - window) * best.v2;
  std::int64_t below_before = -1;
  std::uint64_t below_after = run.total;
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t g = run.first + k;
    if (v2[k] >= floor) continue;
    if (g < best.at) below_before = static_cast<std::int64_t>(g);
    if (g > best.at && below_after == run.total) below_after = g;
  }
  const auto lo = static_cast<std::uint64_t>(run.comm.max(below_before) + 1);
  const std::uint64_t hi = run.comm.min(below_after) - 1;
  if (hi - lo + 1 < 5) return raw;
  // y = c0 + c1 s + c2 s^2 in s = ln(r / r_best), by the normal equations (sums in radius order).
  const double s0 = std::log(best.radius);
  const std::array<double, 8> sums = run.comm.relay(std::array<double, 8>{}, [&](std::array<double, 8> t) {
    for (std::size_t k = 0; k < n; ++k) {  // t: sum s^p (p < 5), then sum y s^p (p < 3)
      const std::uint64_t g = run.first + k;
      if (g < lo || g > hi) continue;
      const double s = std::log(radius[k]) - s0;
      double p = 1;
      for (std::size_t e = 0; e < 5; ++e) {
        if (e < 3) t[5 + e] += v2[k] * p;
        t[e] += p;
        p *= s;
      }
    }
    return t;
  });
  const std::array<double, 5> sp{sums[0], sums[1], sums[2], sums[3], sums[4]};
  const std::array<double, 3> sy{sums[5], sums[6], sums[7]};
  std::array<double, 3> c{};
  if (!solve3({{{sp[0], sp[1], sp[2]}, {sp[1], sp[2], sp[3]}, {sp[2], sp[3], sp[4]}}}, sy, c) || !(c[2] < 0))
    return raw;
  const double s_peak = -c[1] / (2 * c[2]);
  if (!(s_peak >= std::log(run.at(radius, lo)) - s0 && s_peak <= std::log(run.at(radius, hi)) - s0)) return raw;
  const double y = c[0] + c[1] * s_peak + c[2] * s_peak * s_peak;
  if (!(y > 0)) return raw;
  return {std::sqrt(y), std::exp(s0 + s_peak)};
}

Properties measure_properties(const LocalParticles& p, const BoundState& state, const Vec& peak, const Frame& frame,
                              const Params& params) {
  // The radial profile around the centre (no softening): its order and distances for Vmax, the SO
  // masses, the NFW fit and the per-type radii.
  const gravity::SphericalProfile prof(p.x, p.mass, state.members, state.centre, frame.G, 0.0);
  const RadialMembers radial{
      grid::RadialRun::whole(prof.radius(), prof.mass()), prof.index(), p.id, p.x, p.u, p.type, p.fixed};
  return measure_properties(mpi::Comm::self(), p, state, radial, peak, frame, params);
}

Properties measure_properties(const mpi::Comm& comm, const LocalParticles& p, const BoundState& state,
                              const RadialMembers& radial, const Vec& peak, const Frame& frame, const Params& params) {
  Properties out;
  const auto& members = state.members;
  const std::uint64_t n_members = comm.sum<std::uint64_t>(members.size());
  if (n_members == 0) return out;
  const double a = frame.scale_factor, G = frame.G, eps = frame.softening * a;
  const Vec& c = state.centre;
  const auto own = [&](std::size_t i) { return p.fixed.empty() || !p.fixed[i]; };

  // Masses, centre of mass, mean velocities, in ID order: [0] own mass, [1] all, then com, vbar, ubar.
  std::uint64_t n_own = 0;
  const std::array<double, 11> first = comm.relay(std::array<double, 11>{}, [&](std::array<double, 11> t) {
    for (const std::size_t i : members) {
      const double m = p.mass[i];
      if (own(i)) {
        ++n_own;
        t[0] += m;
      }
      t[1] += m;
      for (std::size_t d = 0; d < 3; ++d) {
        t[2 + d] += m * p.x[3 * i + d];
        t[5 + d] += m * p.v[3 * i + d];
        t[8 + d] += m * p.u[3 * i + d];
      }
    }
    return t;
  });
  const double m_own = first[0], m_all = first[1];
  Vec com{first[2], first[3], first[4]}, vbar{first[5], first[6], first[7]}, ubar{first[8], first[9], first[10]};
  out.n_bound = static_cast<std::int64_t>(comm.sum(n_own));
  out.n_bound_inclusive = static_cast<std::int64_t>(n_members);
  out.mass = m_own;
  out.mass_inclusive = m_all;
  if (!(m_all > 0)) return out;
  for (std::size_t d = 0; d < 3; ++d) {
    com[d] /= m_all;
    vbar[d] /= m_all;
    ubar[d] /= m_all;
  }
  out.centre = to_comoving(c, peak, frame);
  out.centre_of_mass = to_comoving(com, peak, frame);
  out.most_bound_position = to_comoving(state.most_bound, peak, frame);
  out.potential_minimum_position = to_comoving(state.potential_minimum, peak, frame);
  out.shrinking_sphere_centre = to_comoving(state.shrinking_sphere, peak, frame);
  out.bulk_velocity = vbar;

  // Kinetic energy, dispersion and angular momentum in the object's frame: [0] T, then J.
  const std::array<double, 4> tj = comm.relay(std::array<double, 4>{}, [&](std::array<double, 4> t) {
    for (const std::size_t i : members) {
      const double m = p.mass[i];
      Vec r{}, w{};
      for (std::size_t d = 0; d < 3; ++d) {
        r[d] = p.x[3 * i + d] - c[d];
        w[d] = p.u[3 * i + d] - ubar[d];
      }
      t[0] += 0.5 * m * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
      const Vec l = cross(r, w);
      for (std::size_t d = 0; d < 3; ++d) t[1 + d] += m * l[d];
    }
    return t;
  });
  const double T = tj[0];
  const Vec J{tj[1], tj[2], tj[3]};
  out.kinetic = T;
  out.vrms = std::sqrt(2 * T / m_all);
  out.angular_momentum = J;
  out.potential = state.potential_energy;
  if (state.potential_energy < 0) out.virial_ratio = T / -state.potential_energy;
  const double E = T + state.potential_energy;
  if (G > 0) out.spin_peebles = norm(J) * std::sqrt(std::abs(E)) / (G * std::pow(m_all, 2.5));

  // The radial profile around the centre: Vmax, SO masses, the NFW fit.
  const grid::RadialRun& run = radial.run;
  const CircularVelocityPeak peak_v =
      circular_velocity_peak(run, G, params.vmax_min_particles, eps, params.vmax_window);
  out.vmax = peak_v.vmax;
  out.rmax = peak_v.rmax / a;

  if (frame.critical_density > 0) {
    const double rho_c = frame.critical_density / (a * a * a);  // physical
    const double om = frame.omega_m / (a * a * a);
    const double omega_m_a = om + frame.omega_lambda > 0 ? om / (om + frame.omega_lambda) : 0.0;
    auto measure = [&](double delta) {
      grid::Overdensity o = grid::outermost_overdensity(run, delta * rho_c, grid::kSoMinParticles);
      if (o.measured()) o.radius /= a;
      return o;
    };
    out.c200 = measure(200);
    out.c500 = measure(500);
    if (omega_m_a > 0) {
      out.delta_vir = grid::bryan_norman_delta(frame.omega_m, frame.omega_lambda, a);
      out.vir = measure(out.delta_vir);
      out.m200 = measure(200 * omega_m_a);
    }
  }

  if (out.vir.measured()) {
    const double Mv = out.vir.mass, Rv = out.vir.radius * a;  // physical radius
    const auto nv = static_cast<std::uint64_t>(out.vir.n_particles);
    const double Vv = std::sqrt(G * Mv / Rv);
    // The particles inside Rvir (the first nv of the radius order): their frame and centre of mass,
    // summed in radius order: [0] mass, then u, then x.
    const std::array<double, 7> inner = comm.relay(std::array<double, 7>{}, [&](std::array<double, 7> t) {
      for (std::size_t k = 0; k < run.radius.size() && run.first + k < nv; ++k) {
        const std::size_t i = radial.at(k);
        const double m = run.mass[k];
        t[0] += m;
        for (std::size_t d = 0; d < 3; ++d) {
          t[1 + d] += m * radial.u[3 * i + d];
          t[4 + d] += m * radial.x[3 * i + d];
        }
      }
      return t;
    });
    const double mv = inner[0];
    Vec uv{inner[1], inner[2], inner[3]}, xv{inner[4], inner[5], inner[6]};
    for (std::size_t d = 0; d < 3; ++d) {
      uv[d] /= mv;
      xv[d] /= mv;
    }
    // Their angular momentum in ID order, not radius order, like every other sum over a set of
    // particles here: a member is inside when it comes no later than the nv-th of the radius order by
    // (radius, ID), its radius computed as the profile computes it.
    const double r_last = run.at(run.radius, nv - 1);
    std::vector<std::uint64_t> run_ids(run.radius.size());
    for (std::size_t k = 0; k < run_ids.size(); ++k) run_ids[k] = radial.id[radial.at(k)];
    const std::uint64_t id_last = run.at(std::span<const std::uint64_t>(run_ids), nv - 1);
    const std::array<double, 3> jv = comm.relay(std::array<double, 3>{}, [&](std::array<double, 3> t) {
      for (const std::size_t i : members) {
        const double dx = p.x[3 * i] - c[0], dy = p.x[3 * i + 1] - c[1], dz = p.x[3 * i + 2] - c[2];
        const double ri = std::sqrt(dx * dx + dy * dy + dz * dz);
        if (ri > r_last || (ri == r_last && p.id[i] > id_last)) continue;
        Vec r{}, w{};
        for (std::size_t d = 0; d < 3; ++d) {
          r[d] = p.x[3 * i + d] - c[d];
          w[d] = p.u[3 * i + d] - uv[d];
        }
        const Vec l = cross(r, w);
        for (std::size_t d = 0; d < 3; ++d) t[d] += p.mass[i] * l[d];
      }
      return t;
    });
    const Vec Jv{jv[0], jv[1], jv[2]};
    out.spin_bullock = norm(Jv) / (std::numbers::sqrt2 * Mv * Vv * Rv);
    out.xoff = norm({c[0] - xv[0], c[1] - xv[1], c[2] - xv[2]}) / a;

    out.concentration_klypin = klypin_concentration(out.vmax / Vv);
    out.rs_klypin = out.vir.radius / out.concentration_klypin;
    const double rs = fit_nfw_scale_radius(run, Rv, {params.fit_bins, params.fit_inner, params.fit_min_per_bin, eps});
    out.rs_fit = rs / a;
    out.concentration_fit = Rv / rs;

    // Shape inside Rvir, positions relative to the centre.
    std::vector<double> rel(3 * members.size());
    for (std::size_t k = 0; k < members.size(); ++k)
      for (std::size_t d = 0; d < 3; ++d) rel[3 * k + d] = p.x[3 * members[k] + d] - c[d];
    std::vector<double> mk(members.size());
    for (std::size_t k = 0; k < members.size(); ++k) mk[k] = p.mass[members[k]];
    std::vector<std::size_t> all(members.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    const Shape shape =
        reduced_inertia_shape(comm, rel, mk, all, Rv, params.shape_max_iterations, params.shape_tolerance);
    out.b_to_a = shape.b_to_a;
    out.c_to_a = shape.c_to_a;
    out.major_axis = shape.major_axis;
  }

  TypeBreakdown by_type = measure_by_type(comm, p, members, radial, c, frame, params);
  out.by_type = std::move(by_type.own);
  out.by_type_inclusive = std::move(by_type.inclusive);

  // The most-bound own particles: lowest energy first, ties by ID (each rank's first, then the first
  // of all of them), in the order of std::pair's <.
  struct Ranked {
    double energy;
    std::uint64_t id;
    bool operator<(const Ranked& o) const { return energy < o.energy || (!(o.energy < energy) && id < o.id); }
  };
  std::vector<Ranked> lowest;
  for (const std::size_t i : members)
    if (own(i)) lowest.push_back({state.energy[i], p.id[i]});
  const std::size_t keep_here = std::min(params.n_most_bound, lowest.size());
  std::partial_sort(lowest.begin(), lowest.begin() + static_cast<std::ptrdiff_t>(keep_here), lowest.end());
  lowest.resize(keep_here);
  if (comm.size() > 1) {
    lowest = comm.all_gatherv<Ranked>(lowest);
    const std::size_t keep = std::min(params.n_most_bound, lowest.size());
    std::partial_sort(lowest.begin(), lowest.begin() + static_cast<std::ptrdiff_t>(keep), lowest.end());
    lowest.resize(keep);
  }
  for (const Ranked& r : lowest) out.most_bound_ids.push_back(r.id);
  return out;
}

}  // namespace phew::unbind
