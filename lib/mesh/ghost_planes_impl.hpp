// Template definitions for ghost_planes.hpp.
#pragma once

#include <phew/mpi/route.hpp>

#include <cstring>
#include <type_traits>

namespace phew::mesh {

template <typename T>
std::vector<PlaneMessage<T>> send_planes(const mpi::Comm& comm, const std::vector<PlaneMessage<T>>& outgoing,
                                         std::size_t plane_size) {
  static_assert(std::is_trivially_copyable_v<T>);
  // Each record names its source, so that what arrives needs no second exchange of counts to be told
  // apart (Comm::all_to_all returns the records grouped by source, in rank order).
  struct Header {
    std::int64_t source, plane, tag;
  };
  const std::size_t record = sizeof(Header) + plane_size * sizeof(T);
  const auto n = static_cast<std::size_t>(comm.size());

  // Pack messages grouped by destination, keeping send order within each destination.
  std::vector<std::uint64_t> counts(n, 0);
  for (const auto& m : outgoing) counts[static_cast<std::size_t>(m.peer)] += record;
  std::vector<std::uint64_t> offset = mpi::offsets_of(counts);
  std::vector<char> send(offset.back() + counts.back());
  for (const auto& m : outgoing) {
    char* p = send.data() + offset[static_cast<std::size_t>(m.peer)];
    const Header h{comm.rank(), m.plane, m.tag};
    std::memcpy(p, &h, sizeof h);
    std::memcpy(p + sizeof h, m.values.data(), plane_size * sizeof(T));
    offset[static_cast<std::size_t>(m.peer)] += record;
  }

  const std::vector<char> recv = comm.all_to_all<char>(send, counts);

  std::vector<PlaneMessage<T>> incoming;
  for (std::size_t pos = 0; pos < recv.size(); pos += record) {
    Header h;
    std::memcpy(&h, recv.data() + pos, sizeof h);
    PlaneMessage<T> m{static_cast<int>(h.source), h.plane, h.tag, std::vector<T>(plane_size)};
    std::memcpy(m.values.data(), recv.data() + pos + sizeof h, plane_size * sizeof(T));
    incoming.push_back(std::move(m));
  }
  return incoming;
}

template <typename T>
std::vector<T> fetch_ghost_planes(const mpi::Comm& comm, const mpi::SlabDecomposition& slabs, std::span<const T> local,
                                  std::size_t plane_size, int width, bool periodic, T outside) {
  const std::int64_t nx = slabs.nx();
  const auto wrap = [nx](std::int64_t i) { return ((i % nx) + nx) % nx; };

  // Every rank knows every slab, so each owner can work out which of its planes each rank needs
  // and push them; no request round is needed.
  std::vector<PlaneMessage<T>> outgoing;
  const std::int64_t my_begin = slabs.begin(comm.rank()), my_end = slabs.end(comm.rank());
  for (int r = 0; r < comm.size(); ++r) {
    if (slabs.planes(r) == 0) continue;
    for (int side = 0; side < 2; ++side) {
      for (int w = 0; w < width; ++w) {
        const std::int64_t unwrapped = side == 0 ? slabs.begin(r) - width + w : slabs.end(r) + w;
        if (!periodic && (unwrapped < 0 || unwrapped >= nx)) continue;
        const std::int64_t g = wrap(unwrapped);
        if (g < my_begin || g >= my_end) continue;
        const auto* src = local.data() + static_cast<std::size_t>(g - my_begin) * plane_size;
        outgoing.push_back({r, g, side * width + w, std::vector<T>(src, src + plane_size)});
      }
    }
  }
  const auto incoming = send_planes(comm, outgoing, plane_size);
  std::vector<T> ghosts(2 * static_cast<std::size_t>(width) * plane_size, outside);
  for (const auto& m : incoming)
    std::copy(m.values.begin(), m.values.end(), ghosts.begin() + static_cast<std::ptrdiff_t>(m.tag * plane_size));
  return ghosts;
}

}  // namespace phew::mesh
