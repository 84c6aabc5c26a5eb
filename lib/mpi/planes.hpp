// Moving whole grid planes between the ranks of a slab decomposition: ghost planes for stencils
// (fetch_ghost_planes) and partial planes added back to their owners (send_planes).
#pragma once

#include <phew/mpi/comm.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/slab.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace phew::mpi {

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
std::vector<PlaneMessage<T>> send_planes(const Comm& comm, const std::vector<PlaneMessage<T>>& outgoing,
                                         std::size_t plane_size);

// The `width` planes below and above this rank's slab (global planes begin-width .. begin-1 and
// end .. end+width-1, wrapped when periodic). `local` holds this rank's planes, plane_size values each.
// Returns 2*width planes in order of their unwrapped index; a plane outside a non-periodic grid is filled
// with `outside`. Collective.
template <typename T>
std::vector<T> fetch_ghost_planes(const Comm& comm, const SlabDecomposition& slabs, std::span<const T> local,
                                  std::size_t plane_size, int width, bool periodic, T outside);

}  // namespace phew::mpi

#include <phew/mpi/planes_impl.hpp>
