#include <phew/mpi/traffic.hpp>

#include <atomic>

namespace phew::mpi {

namespace {

// Relaxed atomics: the tools make MPI calls from one thread, but a counter must never be the reason a
// threaded caller races. The totals are read between phases, on the thread that made the calls.
std::atomic<std::uint64_t> bytes_sent{0}, messages{0}, collectives{0};

}  // namespace

Traffic traffic() {
  return {bytes_sent.load(std::memory_order_relaxed), messages.load(std::memory_order_relaxed),
          collectives.load(std::memory_order_relaxed)};
}

void count_collective(std::uint64_t bytes_to_others) {
  collectives.fetch_add(1, std::memory_order_relaxed);
  bytes_sent.fetch_add(bytes_to_others, std::memory_order_relaxed);
}

void count_message(std::uint64_t bytes) {
  messages.fetch_add(1, std::memory_order_relaxed);
  bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace phew::mpi
