// A scene in time, with particle IDs kept from snapshot to snapshot.
//
//  ballistic   every halo moves rigidly at its bulk velocity (its particles keep their place in the
//              halo and their velocities); background particles drift in straight lines.
//  restricted  a restricted N-body run: every halo particle is a test particle in the analytic
//              potentials of all halos, while the halo centres move under their mutual attraction
//              (equal and opposite pair forces) and, optionally, Chandrasekhar dynamical friction
//              from the more massive halos, so a satellite is stripped and sinks. Background
//              particles drift. Particles are independent given the centre tracks, so each is
//              integrated with its own kick-drift-kick leapfrog steps (powers of two of the output
//              interval, set by accuracy * min(sqrt(r/|a|), r/|v|), r the distance to the nearest
//              centre); the centres are integrated first, in 1024 steps per interval, and interpolated
//              (cubic Hermite) in between.
#pragma once

#include <phew/synth/realize.hpp>

namespace phew::synth {

// Centres and bulk velocities of every component at every output (backgrounds stay where they are).
// Cheap (the particles are not involved), so every rank can compute it. Not collective.
struct CentreTrack {
  std::vector<double> time;                         // internal units, kpc / (km/s): snapshot * interval
  std::vector<std::vector<Vec3>> center, velocity;  // [snapshot][component]
};
CentreTrack centre_track(const Scene& scene, const HaloSet& halos, const std::vector<ComponentTruth>& truth);

class Evolution {
 public:
  // Advances `particles` (the realisation at t = 0) in place along `track` (from centre_track);
  // both must outlive the Evolution.
  Evolution(const Scene& scene, const HaloSet& halos, Particles& particles, const CentreTrack& track);

  int snapshot() const { return snapshot_; }  // the output the particles are at
  // Moves the particles on to the next output. Not collective.
  void advance();

  struct Stats {
    std::uint64_t particle_steps = 0;  // leapfrog steps over all particles
    std::uint64_t capped = 0;          // steps that wanted to be shorter than interval / 2^40
  };
  const Stats& stats() const { return stats_; }

 private:
  void centres_at(std::uint64_t tick, std::vector<Vec3>& out) const;
  void integrate_particle(std::size_t i, double dt);

  const Scene& scene_;
  const HaloSet& halos_;
  Particles& particles_;
  const CentreTrack& track_;
  int snapshot_ = 0;
  // Centre states at the 1024 + 1 sub-steps of the current interval.
  std::vector<std::vector<Vec3>> fine_x_, fine_v_;
  double fine_dt_ = 0;
  Stats stats_;
};

}  // namespace phew::synth
