// What this process hands MPI to deliver to other ranks, counted by every wrapper of lib/mpi, so that
// a tool can record the bytes and the calls of each phase in its manifest (`exchanges`, docs/formats.md)
// and a scaling model can price them (bench/scaling_model.py).
//
// Bytes are this rank's own payload addressed to other ranks, counted once per destination: an
// all_to_all counts what goes to the others (not to itself), an all_gather of n bytes n x (ranks - 1), a
// broadcast n x (ranks - 1) on its root and nothing elsewhere, a reduction its n bytes once. How MPI
// moves them (trees, rings, shared memory) is its own affair. On a one-rank communicator the wrappers
// make no MPI call and count nothing; MPI-IO inside HDF5 is not counted (it is I/O).
#pragma once

#include <cstdint>

namespace phew::mpi {

struct Traffic {
  std::uint64_t bytes_sent = 0;   // payload bytes addressed to other ranks
  std::uint64_t messages = 0;     // point-to-point sends (Mailbox)
  std::uint64_t collectives = 0;  // collective MPI calls (each call once, a size exchange included)

  Traffic& operator+=(const Traffic& o) {
    bytes_sent += o.bytes_sent;
    messages += o.messages;
    collectives += o.collectives;
    return *this;
  }
  friend Traffic operator-(Traffic a, const Traffic& b) {
    a.bytes_sent -= b.bytes_sent;
    a.messages -= b.messages;
    a.collectives -= b.collectives;
    return a;
  }
};

// This process's totals since it started. Not collective; safe from any thread.
Traffic traffic();

// Called by the wrappers around each MPI call (not collective; safe from any thread).
void count_collective(std::uint64_t bytes_to_others = 0);
void count_message(std::uint64_t bytes);

}  // namespace phew::mpi
