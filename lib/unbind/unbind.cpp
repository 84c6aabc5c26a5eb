#include <phew/unbind/unbind.hpp>

#include <phew/core/error.hpp>
#include <phew/unbind/passes.hpp>
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

namespace passes {

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

}  // namespace passes

namespace {

using passes::Local;
using Vec = passes::Vec;

// The object on one rank: plain loops over its members.
struct OneRank {
  const Local& l;
  double G, eps;

  std::array<double, 4> weighted(const std::vector<std::size_t>& members, const std::vector<double>& w) const {
    double m = 0;
    Vec s{0, 0, 0};
    for (const std::size_t i : members) {
      m += l.m[i];
      for (std::size_t d = 0; d < 3; ++d) s[d] += l.m[i] * w[3 * i + d];
    }
    return {m, s[0], s[1], s[2]};
  }
  gravity::SphericalProfile profile(const std::vector<std::size_t>& source, const Vec& centre) const {
    return {l.x, l.m, source, centre, G, eps};
  }
  Vec lowest(const std::vector<std::size_t>& members, const std::vector<double>& value, const Vec& previous) const {
    if (members.empty()) return previous;
    std::size_t best = members[0];
    for (const std::size_t i : members)
      if (value[i] < value[best]) best = i;  // members ascend in ID: ties keep the lower ID
    return {l.x[3 * best], l.x[3 * best + 1], l.x[3 * best + 2]};
  }
  static std::uint64_t total(std::uint64_t n) { return n; }
  double sum_m(const std::vector<std::size_t>& members, const std::vector<double>& w) const {
    double u = 0;
    for (const std::size_t i : members) u += l.m[i] * w[i];
    return u;
  }
  void pair_potentials(const std::vector<std::size_t>& source, const Params& params, std::vector<double>& phi) const {
    if (source.size() < params.direct_below)
      direct_potential(l.x, l.m, source, G, eps, phi);
    else
      tree_potential(l.x, l.m, l.id, source, G, eps, params.theta, phi);
  }
};

}  // namespace

ObjectResult unbind_object(const ObjectParticles& particles, const ObjectSpec& spec, const Frame& frame,
                           const Params& params) {
  if (!(frame.scale_factor > 0))
    throw core::Error::internal("unbind: scale factor {} is not positive", frame.scale_factor);
  const Local l = passes::gather(particles, spec, frame);
  if (particles.copied) particles.copied();
  const std::size_t n = l.id.size();
  ObjectResult result;
  ObjectSummary& sum = result.summary;
  sum.n_particles = static_cast<std::int64_t>(n);
  sum.n_fixed = std::count(l.fixed.begin(), l.fixed.end(), std::uint8_t{1});

  // Offsets from the peak (the frame's origin, no periodic box: gather unwrapped them) with their
  // fixed-point terms, made once for every pass's shrinking spheres (and bound.h5's, whatever the centre).
  // Let go before the properties are measured (32 bytes a particle, the offsets read from l.x in place).
  auto spheres = std::make_unique<grid::ShrinkingSphereGroup>(l.x, l.m, grid::Box{}, Vec{0, 0, 0});
  const OneRank whole{l, frame.G, frame.softening * frame.scale_factor};
  const passes::Outcome out = passes::remove_unbound(whole, l, spec, frame, params, spheres.get());
  passes::record_passes(out, sum);
  if (!out.dissolved) {
    const BoundState state = passes::bound_state(whole, l, out, spheres.get(), params);
    spheres.reset();
    sum.properties = measure_properties(l.view(), state, spec.peak, frame, params);
  }

  passes::per_particle(l, out, result);
  return result;
}

}  // namespace phew::unbind
