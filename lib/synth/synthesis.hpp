// synth-particles' stage: a scene's halo models, truth and centre track (every rank), its particles
// (rank 0), and its snapshots in order, each as a Gadget snapshot and its truth file.
#pragma once

#include <phew/core/timer.hpp>
#include <phew/model/truth.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/gadget_header.hpp>
#include <phew/synth/realize.hpp>
#include <phew/synth/sequence.hpp>

#include <memory>
#include <string>
#include <vector>

namespace phew::synth {

// One snapshot as rank 0 holds it (the other ranks hold the header and the truth's meta and track,
// and no rows): write it with write_gadget_hdf5(file, header, particles()) and io::write_truth.
struct SynthSnapshot {
  particles::GadgetHeader header;
  std::vector<std::uint64_t> id;
  std::vector<double> potential, acceleration;  // when the scene asks for them
  std::vector<std::uint8_t> type;               // each particle's PartType, when a component is not dark matter
  model::Truth truth;
  const Particles* sampled = nullptr;  // positions, velocities, masses

  particles::GadgetParticles particles() const;
};

class Synthesis {
 public:
  // Builds the halo models (f(E)), the truth of every component and the centre track on every rank,
  // and samples the particles on rank 0. Keeps a copy of the scene. Collective (errors agreed).
  // Phases: model, sample.
  Synthesis(const Scene& scene, const mpi::Comm& comm, const core::PhaseReport& phase = {});
  ~Synthesis();
  Synthesis(const Synthesis&) = delete;  // the evolution refers to the particles it holds
  Synthesis& operator=(const Synthesis&) = delete;

  int snapshots() const { return scene_.snapshots(); }
  const std::vector<ComponentTruth>& components() const { return truth_; }
  const HaloSet& halos() const { return *halos_; }
  const Evolution* evolution() const { return evolution_.get(); }

  // Snapshot s, s = 0, 1, ... in turn: moves the particles on (phase evolve, s > 0), then (phase write)
  // computes the analytic potential and acceleration and which particles are bound. `name` is the
  // snapshot's file name, recorded in the truth. Collective (errors agreed).
  SynthSnapshot snapshot(int s, const std::string& name);

 private:
  const Scene scene_;
  const mpi::Comm comm_;
  core::PhaseReport phase_;
  std::unique_ptr<HaloSet> halos_;
  std::vector<ComponentTruth> truth_;
  CentreTrack track_;
  Particles particles_;
  std::unique_ptr<Evolution> evolution_;
  std::string scene_json_;
};

}  // namespace phew::synth
