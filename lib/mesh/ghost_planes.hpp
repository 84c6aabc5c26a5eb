// Moving whole grid planes between the ranks of a slab decomposition: ghost planes for stencils
// (fetch_ghost_planes) and planes sent to other ranks (send_planes). Built on mpi::Comm: the MPI calls
// stay in lib/mpi.
#pragma once

#include <phew/mpi/comm.hpp>
#include <phew/mpi/slab.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace phew::mesh {

// A plane of `plane_size` values travelling to or from rank `peer`. `plane` is the global plane index
// (wrapped into [0, nx)); `tag` is for the caller (e.g. which stencil offset produced it).
template <typename T>
struct PlaneMessage {
  int peer = 0;
  std::int64_t plane = 0;
  std::int64_t tag = 0;
  std::vector<T> values;
};

// Sends each message to message.peer; returns the messages received, ordered by (source rank, send order),
// with peer set to the source. Collective.
template <typename T>
std::vector<PlaneMessage<T>> send_planes(const mpi::Comm& comm, const std::vector<PlaneMessage<T>>& outgoing,
                                         std::size_t plane_size);

// The `width` planes below and above this rank's slab (global planes begin-width .. begin-1 and
// end .. end+width-1, wrapped when periodic). `local` holds this rank's planes, plane_size values each.
// Returns 2*width planes in order of their unwrapped index; a plane outside a non-periodic grid is filled
// with `outside`. Collective.
template <typename T>
std::vector<T> fetch_ghost_planes(const mpi::Comm& comm, const mpi::SlabDecomposition& slabs, std::span<const T> local,
                                  std::size_t plane_size, int width, bool periodic, T outside);

}  // namespace phew::mesh

#include <phew/mesh/ghost_planes_impl.hpp>
