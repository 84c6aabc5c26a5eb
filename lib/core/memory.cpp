#include <phew/core/memory.hpp>

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>

#include <malloc.h>
#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace phew::core {

std::uint64_t available_memory_bytes() {
  if (const char* env = std::getenv("PHEW_MEMORY_LIMIT")) return std::strtoull(env, nullptr, 10);
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t value = 0;
  std::string unit;
  while (in >> key >> value >> unit)
    if (key == "MemAvailable:") return value * 1024;
  return 0;
}

std::uint64_t peak_rss_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

void check_memory(double needed, std::uint64_t available, const std::string& what) {
  if (available == 0) return;  // unknown: do not guess
  if (needed > static_cast<double>(available))
    throw Error::input("{} needs about {} but only {} is available; use fewer cells or more nodes", what,
                       log::bytes(needed), log::bytes(static_cast<double>(available)));
}

void return_big_buffers_to_the_system() {
  constexpr int kMapped = 8 << 20;
  mallopt(M_MMAP_THRESHOLD, kMapped);
  // Setting the bound also fixes the heap's trim bound at glibc's 128 KiB (its dynamic rule moves it with
  // the mmap bound): the heap's top was then given back and faulted in again for every few-MiB buffer
  // (unbind on the clustered 2.1 M box: 2.5x the page faults, 6-12 % of its time). At the mmap bound the
  // heap keeps less than one big buffer's worth at its top (cic-project's peak is the same).
  mallopt(M_TRIM_THRESHOLD, kMapped);
}

}  // namespace phew::core
