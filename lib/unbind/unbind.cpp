#include <phew/unbind/unbind.hpp>

#include <phew/core/error.hpp>
#include <phew/unbind/potential.hpp>
#include <phew/unbind/properties.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

namespace phew::unbind {

std::string to_string(PotentialMode m) { return m == PotentialMode::profile ? "profile" : "tree"; }

std::string to_string(CentreKind c) {
  switch (c) {
    case CentreKind::peak:
      return "peak";
    case CentreKind::most_bound:
      return "most-bound";
    case CentreKind::potential_minimum:
      return "potential-minimum";
    case CentreKind::shrinking_sphere:
      return "shrinking-sphere";
    case CentreKind::centre_of_mass:
      return "centre-of-mass";
  }
  return "?";
}

PotentialMode parse_potential_mode(const std::string& text) {
  for (const PotentialMode m : {PotentialMode::profile, PotentialMode::tree})
    if (to_string(m) == text) return m;
  throw core::Error::usage("unknown potential mode '{}' (profile or tree)", text);
}

CentreKind parse_centre_kind(const std::string& text) {
  for (const CentreKind c : {CentreKind::peak, CentreKind::most_bound, CentreKind::potential_minimum,
                             CentreKind::shrinking_sphere, CentreKind::centre_of_mass})
    if (to_string(c) == text) return c;
  throw core::Error::usage(
      "unknown centre '{}' (peak, most-bound, potential-minimum, shrinking-sphere or centre-of-mass)", text);
}

namespace {

using Vec = std::array<double, 3>;

// The object's particles in ID order, in its physical frame around the peak.
struct Local {
  std::vector<std::uint64_t> id;
  std::vector<double> x, u, v, m;
  std::vector<std::uint8_t> fixed, type;
  std::vector<std::size_t> input;  // ID order -> the position in the caller's arrays

  LocalParticles view() const { return {id, x, u, v, m, fixed, type}; }
};

Local gather(const ObjectParticles& p, const ObjectSpec& spec, const Frame& frame) {
  const std::size_t entries = p.mass.size();
  if (p.id.size() != entries || p.position.size() != 3 * entries || p.velocity.size() != 3 * entries ||
      (!p.fixed.empty() && p.fixed.size() != entries) || (!p.type.empty() && p.type.size() != entries))
    throw core::Error::internal("unbind: particle arrays of different lengths ({} masses)", entries);
  for (const std::size_t e : p.subset)
    if (e >= entries) throw core::Error::internal("unbind: subset entry {} of {} particles", e, entries);
  const std::size_t n = p.subset.empty() ? entries : p.subset.size();
  const auto entry = [&](std::size_t k) { return p.subset.empty() ? k : p.subset[k]; };
  Local l;
  l.input.resize(n);
  std::iota(l.input.begin(), l.input.end(), std::size_t{0});
  std::sort(l.input.begin(), l.input.end(),
            [&](std::size_t i, std::size_t j) { return p.id[entry(i)] < p.id[entry(j)]; });
  for (std::size_t k = 1; k < n; ++k)
    if (p.id[entry(l.input[k])] == p.id[entry(l.input[k - 1])])
      throw core::Error::input("unbind: particle ID {} appears twice in one object", p.id[entry(l.input[k])]);
  l.id.resize(n);
  l.x.resize(3 * n);
  l.u.resize(3 * n);
  l.v.resize(3 * n);
  l.m.resize(n);
  l.fixed.assign(n, 0);
  if (!p.type.empty()) l.type.resize(n);
  const double a = frame.scale_factor, H = frame.hubble;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = entry(l.input[k]);
    l.id[k] = p.id[i];
    l.m[k] = p.mass[i];
    if (!p.fixed.empty()) l.fixed[k] = p.fixed[i] ? 1 : 0;
    if (!p.type.empty()) l.type[k] = p.type[i];
    for (std::size_t d = 0; d < 3; ++d) {
      const double dx =
          grid::minimum_image(p.position[3 * i + d] - spec.peak[d], frame.box.extent[d], frame.box.periodic);
      l.x[3 * k + d] = a * dx;
      l.v[3 * k + d] = p.velocity[3 * i + d];
      l.u[3 * k + d] = p.velocity[3 * i + d] + H * a * dx;
    }
  }
  return l;
}

// The unbinding state of one evaluation.
struct Evaluation {
  std::vector<std::size_t> members;  // bound, ascending
  Vec centre{0, 0, 0};
  Vec velocity{0, 0, 0};  // mass-weighted mean of u over the members
  double threshold = 0;
  double potential_energy = 0;
};

// How many steps wider than the last pass's final sphere a later pass's shrinking spheres start.
constexpr int kWarmSteps = 20;

// `spheres`: the object's particles for shrinking spheres (made once: unbind_object).
Vec choose_centre(CentreKind kind, const Local& l, const std::vector<std::size_t>& members,
                  const std::vector<double>& phi, const std::vector<double>& energy, bool have_energies,
                  const Vec& previous, const grid::ShrinkingSphereGroup& spheres, const Params& params) {
  switch (kind) {
    case CentreKind::peak:
      return {0, 0, 0};
    case CentreKind::centre_of_mass: {
      double m = 0;
      Vec s{0, 0, 0};
      for (const std::size_t i : members) {
        m += l.m[i];
        for (std::size_t d = 0; d < 3; ++d) s[d] += l.m[i] * l.x[3 * i + d];
      }
      if (!(m > 0)) return previous;
      return {s[0] / m, s[1] / m, s[2] / m};
    }
    case CentreKind::shrinking_sphere:
      return spheres.centre(members, params.shrinking);
    case CentreKind::most_bound:
    case CentreKind::potential_minimum: {
      // From the previous evaluation: the first pass has none and keeps the peak.
      if (!have_energies || members.empty()) return previous;
      const std::vector<double>& value = kind == CentreKind::most_bound ? energy : phi;
      std::size_t best = members[0];
      for (const std::size_t i : members)
        if (value[i] < value[best]) best = i;  // members ascend in ID: ties keep the lower ID
      return {l.x[3 * best], l.x[3 * best + 1], l.x[3 * best + 2]};
    }
  }
  return previous;
}

// U = 1/2 sum m Phi of the members among themselves.
double members_potential_energy(const Local& l, const std::vector<std::size_t>& members, const Vec& centre,
                                const Frame& frame, const Params& params) {
  const double eps = frame.softening * frame.scale_factor;
  if (params.potential == PotentialMode::profile)
    return gravity::SphericalProfile(l.x, l.m, members, centre, frame.G, eps).potential_energy();
  std::vector<double> phi(l.m.size(), 0.0);
  if (members.size() < params.direct_below)
    direct_potential(l.x, l.m, members, frame.G, eps, phi);
  else
    tree_potential(l.x, l.m, l.id, members, frame.G, eps, params.theta, phi);
  double u = 0;
  for (const std::size_t i : members) u += l.m[i] * phi[i];
  return 0.5 * u;
}

// Potentials and energies of the members (phi, energy at their indices), the frame and the threshold.
// `source` holds the particles whose potential it is (the members, or every particle); `reuse`: phi
// already holds the pairwise potential of that fixed set (it does not depend on the centre).
void evaluate(const Local& l, Evaluation& ev, const std::vector<std::size_t>& source, bool reuse,
              const ObjectSpec& spec, const Frame& frame, const Params& params, std::vector<double>& phi,
              std::vector<double>& energy) {
  const double a = frame.scale_factor, eps = frame.softening * a;
  double m = 0;
  Vec s{0, 0, 0};
  for (const std::size_t i : ev.members) {
    m += l.m[i];
    for (std::size_t d = 0; d < 3; ++d) s[d] += l.m[i] * l.u[3 * i + d];
  }
  ev.velocity = m > 0 ? Vec{s[0] / m, s[1] / m, s[2] / m} : Vec{0, 0, 0};

  const gravity::SphericalProfile prof(l.x, l.m, source, ev.centre, frame.G, eps);
  if (params.potential == PotentialMode::profile) {
    prof.potentials(phi);
  } else if (!reuse) {
    if (source.size() < params.direct_below)
      direct_potential(l.x, l.m, source, frame.G, eps, phi);
    else
      tree_potential(l.x, l.m, l.id, source, frame.G, eps, params.theta, phi);
  }
  if (&source == &ev.members) {
    if (params.potential == PotentialMode::profile) {
      ev.potential_energy = prof.potential_energy();
    } else {
      double u = 0;
      for (const std::size_t i : ev.members) u += l.m[i] * phi[i];
      ev.potential_energy = 0.5 * u;
    }
  }
  // The saddle's potential is the spherical one at its radius in both modes: only a distance is known.
  ev.threshold = params.saddle && spec.saddle_radius > 0 ? prof.at_radius(a * spec.saddle_radius) : 0.0;
  for (const std::size_t i : ev.members) {
    double k = 0;
    for (std::size_t d = 0; d < 3; ++d) {
      const double w = l.u[3 * i + d] - ev.velocity[d];
      k += w * w;
    }
    energy[i] = 0.5 * k + phi[i];
  }
}

}  // namespace

ObjectResult unbind_object(const ObjectParticles& particles, const ObjectSpec& spec, const Frame& frame,
                           const Params& params) {
  if (!(frame.scale_factor > 0))
    throw core::Error::internal("unbind: scale factor {} is not positive", frame.scale_factor);
  const Local l = gather(particles, spec, frame);
  if (particles.copied) particles.copied();
  const std::size_t n = l.id.size();
  ObjectResult result;
  ObjectSummary& sum = result.summary;
  sum.n_particles = static_cast<std::int64_t>(n);
  sum.n_fixed = std::count(l.fixed.begin(), l.fixed.end(), std::uint8_t{1});

  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::uint8_t> bound(n, 1);
  std::vector<double> phi(n, nan), energy(n, nan);
  Evaluation ev;
  ev.members.resize(n);
  std::iota(ev.members.begin(), ev.members.end(), std::size_t{0});
  bool have_energies = false;
  // Every particle, when the potential is theirs (8 bytes a particle otherwise not held).
  const std::vector<std::size_t> everyone = params.potential_of_all ? ev.members : std::vector<std::size_t>{};
  const std::vector<std::size_t>& source = params.potential_of_all ? everyone : ev.members;
  bool reuse = false;  // the pairwise potential of every particle, once computed
  // Offsets from the peak (the frame's origin, no periodic box: gather unwrapped them) with their
  // fixed-point terms, made once for every pass's shrinking spheres (and bound.h5's, whatever the centre).
  // Let go before the properties are measured (32 bytes a particle, the offsets read from l.x in place).
  auto spheres_held = std::make_unique<grid::ShrinkingSphereGroup>(l.x, l.m, grid::Box{}, Vec{0, 0, 0});
  const grid::ShrinkingSphereGroup& spheres = *spheres_held;
  // Removal passes: evaluate on the bound set, remove every own particle at or above the threshold,
  // until a pass removes none (or max_iterations passes were made; then one more evaluation, so that the
  // energies and properties belong to the final bound set).
  // The shrinking spheres of a pass after the first start about the last pass's centre, from the
  // sphere kWarmSteps steps wider than its last (the bound set lost only particles that were not bound):
  // a few tens of steps, where from the whole set they take ~100 (docs/unbind-method.md).
  grid::ShrinkingSphereGroup::Found sphere{};
  const double warm_radius_factor = std::pow(params.shrinking.shrink, -kWarmSteps);
  for (;;) {
    if (params.centre == CentreKind::shrinking_sphere) {
      // The first pass (radius 0) from the whole bound set.
      sphere = spheres.centre_from(ev.members, sphere.centre, sphere.radius * warm_radius_factor, params.shrinking);
      ev.centre = sphere.centre;
    } else {
      ev.centre = choose_centre(params.centre, l, ev.members, phi, energy, have_energies, ev.centre, spheres, params);
    }
    evaluate(l, ev, source, reuse, spec, frame, params, phi, energy);
    have_energies = true;
    reuse = params.potential_of_all;
    if (sum.iterations >= std::max(params.max_iterations, 1)) break;
    ++sum.iterations;
    std::vector<std::size_t> kept;
    kept.reserve(ev.members.size());
    for (const std::size_t i : ev.members) {
      if (!l.fixed[i] && !(energy[i] < ev.threshold)) {
        bound[i] = 0;
        ++sum.n_removed;
      } else {
        kept.push_back(i);
      }
    }
    if (kept.size() == ev.members.size()) {
      sum.converged = true;
      break;
    }
    ev.members = std::move(kept);
  }
  sum.threshold = ev.threshold;

  const auto own_bound = static_cast<std::size_t>(
      std::count_if(ev.members.begin(), ev.members.end(), [&](std::size_t i) { return !l.fixed[i]; }));
  if (own_bound < params.min_bound) {
    sum.dissolved = true;
    for (std::size_t i = 0; i < n; ++i) bound[i] = l.fixed[i];
  } else {
    // Most-bound and potential-minimum centres are taken from the final energies; the others depend on
    // the members alone, which the last pass's centre was chosen for.
    if (params.centre == CentreKind::most_bound || params.centre == CentreKind::potential_minimum)
      ev.centre = choose_centre(params.centre, l, ev.members, phi, energy, have_energies, ev.centre, spheres, params);
    if (params.potential_of_all)
      ev.potential_energy = members_potential_energy(l, ev.members, ev.centre, frame, params);
    // The other centres from the same bound set and energies (bound.h5 writes them all).
    const auto centre_of = [&](CentreKind k) {
      return k == params.centre ? ev.centre
                                : choose_centre(k, l, ev.members, phi, energy, true, ev.centre, spheres, params);
    };
    const BoundState state{ev.members,
                           phi,
                           energy,
                           ev.centre,
                           ev.potential_energy,
                           centre_of(CentreKind::most_bound),
                           centre_of(CentreKind::potential_minimum),
                           centre_of(CentreKind::shrinking_sphere)};
    spheres_held.reset();
    sum.properties = measure_properties(l.view(), state, spec.peak, frame, params);
  }

  result.bound.assign(n, 0);
  result.energy.assign(n, nan);
  for (std::size_t k = 0; k < n; ++k) {
    result.bound[l.input[k]] = bound[k];
    if (!l.fixed[k]) result.energy[l.input[k]] = energy[k];
  }
  return result;
}

}  // namespace phew::unbind
