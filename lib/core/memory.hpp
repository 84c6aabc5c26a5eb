// What memory this machine has left, so that tools can refuse a job before allocating it.
#pragma once

#include <cstdint>
#include <string>

namespace phew::core {

// MemAvailable from /proc/meminfo in bytes (0 when unknown).
std::uint64_t available_memory_bytes();

// Peak resident set size of this process so far, in bytes (0 when unknown).
std::uint64_t peak_rss_bytes();

// Throws Error(input) when `needed` bytes exceed what is available (`what` names the job).
// `available` is normally available_memory_bytes(); PHEW_MEMORY_LIMIT (bytes) overrides it for tests.
void check_memory(double needed, std::uint64_t available, const std::string& what);

}  // namespace phew::core
