// The removal passes of one object (docs/unbind-method.md), written once for the object on one rank
// (unbind.cpp) and for an object spread over ranks (spread.cpp). What a pass needs of the whole
// object, a `Whole` gives:
//
//   std::array<double, 4> weighted(members, w)  m and sum m w (w [n][3]) over the members, in ID order
//   profile(source, centre)                     the spherical profile of `source` (potentials,
//                                               potential_energy, at_radius)
//   Vec lowest(members, value, previous)        the position of the member of lowest value (ties: the
//                                               lower ID); `previous` when there are no members
//   std::uint64_t total(n)                      a count summed over the object
//   double sum_m(members, w)                    sum m w (w [n]) over the members, in ID order
//   pair_potentials(source, params, phi)        the pairwise potential (--potential tree) of `source`
//                                               at each of it, into phi[index]: direct summation or
//                                               Barnes-Hut (lib/unbind/potential.hpp)
//
// On one rank these are plain loops; spread over ranks, the sums are carried rank to rank in ID
// order (Comm::relay), so each is added in the same order and the passes give the same bits.
#pragma once

#include <phew/core/error.hpp>
#include <phew/grid/shrinking_sphere.hpp>
#include <phew/unbind/potential.hpp>
#include <phew/unbind/properties.hpp>
#include <phew/unbind/unbind.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace phew::unbind::passes {

using Vec = std::array<double, 3>;

// The object's particles (on one rank: this rank's share) in ID order, in its physical frame around
// the peak.
struct Local {
  std::vector<std::uint64_t> id;
  std::vector<double> x, u, v, m;
  std::vector<std::uint8_t> fixed, type;
  std::vector<std::size_t> input;  // ID order -> the position in the caller's arrays

  LocalParticles view() const { return {id, x, u, v, m, fixed, type}; }
};

// `p`'s particles as a Local (IDs unique: Error(input) otherwise).
Local gather(const ObjectParticles& p, const ObjectSpec& spec, const Frame& frame);

// The unbinding state of one evaluation.
struct Evaluation {
  std::vector<std::size_t> members;  // bound, ascending
  Vec centre{0, 0, 0};
  Vec velocity{0, 0, 0};  // mass-weighted mean of u over the members
  double threshold = 0;
  double potential_energy = 0;
};

// What the passes leave: per local particle, and the final evaluation.
struct Outcome {
  std::vector<std::uint8_t> bound;  // 1 bound (fixed particles always; own ones all 0 when dissolved)
  std::vector<double> phi, energy;  // at the last evaluation that saw each (NaN: none)
  Evaluation ev;
  bool have_energies = false;
  int iterations = 0;
  std::int64_t n_removed = 0;  // over the whole object
  bool converged = false, dissolved = false;
};

// How many steps wider than the last pass's final sphere a later pass's shrinking spheres start.
constexpr int kWarmSteps = 20;

// `spheres`: the object's particles for shrinking spheres (made once: unbind_object; one rank only).
template <class Whole>
Vec choose_centre(const Whole& whole, CentreKind kind, const Local& l, const std::vector<std::size_t>& members,
                  const std::vector<double>& phi, const std::vector<double>& energy, bool have_energies,
                  const Vec& previous, const grid::ShrinkingSphereGroup* spheres, const Params& params) {
  switch (kind) {
    case CentreKind::peak:
      return {0, 0, 0};
    case CentreKind::centre_of_mass: {
      const std::array<double, 4> s = whole.weighted(members, l.x);
      if (!(s[0] > 0)) return previous;
      return {s[1] / s[0], s[2] / s[0], s[3] / s[0]};
    }
    case CentreKind::shrinking_sphere:
      if (!spheres) throw core::Error::internal("unbind: shrinking spheres of an object spread over ranks");
      return spheres->centre(members, params.shrinking);
    case CentreKind::most_bound:
    case CentreKind::potential_minimum:
      // From the previous evaluation: the first pass has none and keeps the peak.
      if (!have_energies) return previous;
      return whole.lowest(members, kind == CentreKind::most_bound ? energy : phi, previous);
  }
  return previous;
}

// U = 1/2 sum m Phi of the members among themselves.
template <class Whole>
double members_potential_energy(const Whole& whole, const Local& l, const std::vector<std::size_t>& members,
                                const Vec& centre, const Params& params) {
  if (params.potential == PotentialMode::profile) return whole.profile(members, centre).potential_energy();
  std::vector<double> phi(l.m.size(), 0.0);
  whole.pair_potentials(members, params, phi);
  return 0.5 * whole.sum_m(members, phi);
}

// Potentials and energies of the members (phi, energy at their indices), the frame and the threshold.
// `source` holds the particles whose potential it is (the members, or every particle); `reuse`: phi
// already holds the pairwise potential of that fixed set (it does not depend on the centre).
template <class Whole>
void evaluate(const Whole& whole, const Local& l, Evaluation& ev, const std::vector<std::size_t>& source, bool reuse,
              const ObjectSpec& spec, const Frame& frame, const Params& params, std::vector<double>& phi,
              std::vector<double>& energy) {
  const double a = frame.scale_factor;
  const std::array<double, 4> s = whole.weighted(ev.members, l.u);
  ev.velocity = s[0] > 0 ? Vec{s[1] / s[0], s[2] / s[0], s[3] / s[0]} : Vec{0, 0, 0};

  const auto prof = whole.profile(source, ev.centre);
  if (params.potential == PotentialMode::profile) {
    prof.potentials(phi);
  } else if (!reuse) {
    whole.pair_potentials(source, params, phi);
  }
  if (&source == &ev.members) {
    if (params.potential == PotentialMode::profile) {
      ev.potential_energy = prof.potential_energy();
    } else {
      ev.potential_energy = 0.5 * whole.sum_m(ev.members, phi);
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

// Removal passes: evaluate on the bound set, remove every own particle at or above the threshold,
// until a pass removes none (or max_iterations passes were made; then one more evaluation, so that the
// energies and properties belong to the final bound set). Then the dissolution, the final centre of the
// most-bound and potential-minimum kinds (from the final energies; the others depend on the members
// alone, which the last pass's centre was chosen for), and U of the bound set when the potential was
// every particle's.
// The shrinking spheres of a pass after the first start about the last pass's centre, from the
// sphere kWarmSteps steps wider than its last (the bound set lost only particles that were not bound):
// a few tens of steps, where from the whole set they take ~100 (docs/unbind-method.md).
template <class Whole>
Outcome remove_unbound(const Whole& whole, const Local& l, const ObjectSpec& spec, const Frame& frame,
                       const Params& params, const grid::ShrinkingSphereGroup* spheres) {
  const std::size_t n = l.id.size();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Outcome out;
  out.bound.assign(n, 1);
  out.phi.assign(n, nan);
  out.energy.assign(n, nan);
  Evaluation& ev = out.ev;
  ev.members.resize(n);
  for (std::size_t i = 0; i < n; ++i) ev.members[i] = i;
  // Every particle, when the potential is theirs (8 bytes a particle otherwise not held).
  const std::vector<std::size_t> everyone = params.potential_of_all ? ev.members : std::vector<std::size_t>{};
  const std::vector<std::size_t>& source = params.potential_of_all ? everyone : ev.members;
  bool reuse = false;  // the pairwise potential of every particle, once computed
  grid::ShrinkingSphereGroup::Found sphere{};
  const double warm_radius_factor = std::pow(params.shrinking.shrink, -kWarmSteps);
  for (;;) {
    if (params.centre == CentreKind::shrinking_sphere) {
      if (!spheres) throw core::Error::internal("unbind: shrinking spheres of an object spread over ranks");
      // The first pass (radius 0) from the whole bound set.
      sphere = spheres->centre_from(ev.members, sphere.centre, sphere.radius * warm_radius_factor, params.shrinking);
      ev.centre = sphere.centre;
    } else {
      ev.centre = choose_centre(whole, params.centre, l, ev.members, out.phi, out.energy, out.have_energies, ev.centre,
                                spheres, params);
    }
    evaluate(whole, l, ev, source, reuse, spec, frame, params, out.phi, out.energy);
    out.have_energies = true;
    reuse = params.potential_of_all;
    if (out.iterations >= std::max(params.max_iterations, 1)) break;
    ++out.iterations;
    std::vector<std::size_t> kept;
    kept.reserve(ev.members.size());
    for (const std::size_t i : ev.members) {
      if (!l.fixed[i] && !(out.energy[i] < ev.threshold))
        out.bound[i] = 0;
      else
        kept.push_back(i);
    }
    const std::uint64_t removed = whole.total(ev.members.size() - kept.size());
    out.n_removed += static_cast<std::int64_t>(removed);
    if (removed == 0) {
      out.converged = true;
      break;
    }
    ev.members = std::move(kept);
  }

  const std::uint64_t own_bound = whole.total(static_cast<std::uint64_t>(
      std::count_if(ev.members.begin(), ev.members.end(), [&](std::size_t i) { return !l.fixed[i]; })));
  if (own_bound < params.min_bound) {
    out.dissolved = true;
    for (std::size_t i = 0; i < n; ++i) out.bound[i] = l.fixed[i];
    return out;
  }
  if (params.centre == CentreKind::most_bound || params.centre == CentreKind::potential_minimum)
    ev.centre = choose_centre(whole, params.centre, l, ev.members, out.phi, out.energy, out.have_energies, ev.centre,
                              spheres, params);
  if (params.potential_of_all) ev.potential_energy = members_potential_energy(whole, l, ev.members, ev.centre, params);
  return out;
}

// The passes' counts into an object's summary.
inline void record_passes(const Outcome& out, ObjectSummary& sum) {
  sum.iterations = out.iterations;
  sum.n_removed = out.n_removed;
  sum.converged = out.converged;
  sum.dissolved = out.dissolved;
  sum.threshold = out.ev.threshold;
}

// The final bound state with every centre of the bound set (bound.h5 writes them all), from the same
// members and energies. Not for a dissolved object.
template <class Whole>
BoundState bound_state(const Whole& whole, const Local& l, const Outcome& out,
                       const grid::ShrinkingSphereGroup* spheres, const Params& params) {
  const Evaluation& ev = out.ev;
  const auto centre_of = [&](CentreKind k) {
    return k == params.centre
               ? ev.centre
               : choose_centre(whole, k, l, ev.members, out.phi, out.energy, true, ev.centre, spheres, params);
  };
  return {ev.members,
          out.phi,
          out.energy,
          ev.centre,
          ev.potential_energy,
          centre_of(CentreKind::most_bound),
          centre_of(CentreKind::potential_minimum),
          centre_of(CentreKind::shrinking_sphere)};
}

// The per-particle results in the caller's order: bound flags, and the energies of the own particles.
inline void per_particle(const Local& l, const Outcome& out, ObjectResult& result) {
  const std::size_t n = l.id.size();
  result.bound.assign(n, 0);
  result.energy.assign(n, std::numeric_limits<double>::quiet_NaN());
  for (std::size_t k = 0; k < n; ++k) {
    result.bound[l.input[k]] = out.bound[k];
    if (!l.fixed[k]) result.energy[l.input[k]] = out.energy[k];
  }
}

}  // namespace phew::unbind::passes
