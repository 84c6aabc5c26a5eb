// Particles -> mass on a grid cut into blocks (mpi::BlockDecomposition), giving the same bits for any
// number of ranks.
//
// Floating-point sums depend on their order, so every cell's mass is summed in one canonical order:
// by the particle's first touched x-plane ("home plane", lowest first), then by the particle's place in
// the snapshot. To keep that order without a serial step, each rank receives copies of the particles
// whose clouds reach its block and computes its cells completely; no partial cells are added across
// ranks. Filing the clouds by home plane in arrival order, then one pass plane by plane, gives exactly
// that order. The total mass is a fixed-point sum of the cells (core::FixedScale), so it does not
// depend on how the blocks cut the grid either.
#pragma once

#include <phew/core/raw_vector.hpp>
#include <phew/grid/assignment.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/blocks.hpp>

#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace phew::grid {

struct DepositResult {
  core::RawVector<double> mass;    // this rank's block [nx][ny][nz] (its sizes), mass per cell (empty with a PlaneSink)
  std::uint64_t particles_in = 0;  // inside the grid (all ranks)
  std::uint64_t particles_outside = 0;  // outside a non-periodic grid, ignored (all ranks)
  double mass_total = 0;                // sum of the grid, deterministic (all ranks)
};

// Takes each finished run of planes [p0, p1) of this rank's block (counted from its first plane) as
// masses, [p1 - p0][by][bz] (the block's sizes), once per run, in any order and from any thread: a caller that stores the grid in
// another form (float32 densities) never holds it in float64.
using PlaneSink = std::function<void(std::size_t p0, std::size_t p1, const double* mass)>;

// What the deposit may do beyond its defaults, to hold less memory (the bits do not depend on them).
struct DepositMemory {
  PlaneSink sink;                     // set: blocks go to it and DepositResult::mass stays empty
  std::function<void()> before_sums;  // called once the clouds are in place, before the first block
                                      // is summed: where a caller allocates what the sink fills
};

// A rank's deposit, given its particles a chunk at a time: positions [n][3] and masses, in snapshot
// order within each rank and rank r's particles before rank r+1's (any distribution over ranks). A
// periodic grid expects positions wrapped into [origin, origin + extent).
//
// Each chunk is converted to cell units and filed by home plane at once. With several ranks a cloud
// this rank sums is filed as it is converted and the others wait for the round's exchange, which sends
// each to the ranks whose blocks it reaches (so add() is collective there: every rank calls it as many
// times, as for_each_share_chunk does, the last calls perhaps empty). The clouds sit in pages per home
// plane and source rank, in arrival order, and a plane's pages are given back as soon as every plane
// they reach is summed: the particles and the grid are never both whole, and no rank holds its share's
// clouds beside their copies.
class Deposit {
 public:
  Deposit(const GridGeometry& grid, Assignment assignment, const mpi::BlockDecomposition& blocks, const mpi::Comm& comm,
          int threads = 1);
  ~Deposit();
  Deposit(const Deposit&) = delete;
  Deposit& operator=(const Deposit&) = delete;

  void add(std::span<const double> position, std::span<const double> mass);  // collective on several ranks
  // The sums run on `threads` threads, each taking runs of the block's planes: the same bits for any
  // number. Collective; once.
  DepositResult finish(const DepositMemory& memory = {});

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The deposit of particles all at hand. Collective.
DepositResult deposit(const GridGeometry& grid, Assignment assignment, const mpi::BlockDecomposition& blocks,
                      std::span<const double> position, std::span<const double> mass, const mpi::Comm& comm,
                      int threads = 1, const DepositMemory& memory = {});

// Bytes per particle the deposit needs at its peak beyond a chunk of input (for memory checks): its
// clouds in their pages (24 bytes where a page's clouds share a mass, at most 32; a cloud on a block
// boundary is copied to each block it reaches), and with several ranks a chunk's clouds on their way
// (a few chunks' worth at most: the outboxes, the joined send buffer and what is received; given back
// before the sums).
inline constexpr double kDepositBytesPerParticle = 2 * 32.0;

}  // namespace phew::grid
