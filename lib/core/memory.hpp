// What memory this machine has left, so that tools can refuse a job before allocating it, and how the
// process hands its big buffers back.
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

// Every allocation of 8 MiB or more mapped from the system and given back when freed. glibc's default
// raises that bound up to 32 MiB each time such a buffer is freed, after which buffers of a few to tens
// of MiB come from its heap and stay resident once freed (a stage's peak then holds what an earlier
// phase let go: 61 MiB of cic-project's 547 on the adaptive benchmark). 1 MiB would keep 7 MiB more
// off cic-project's peak but costs unbind 10-15 % of its time in mapping per-halo buffers. The heap's
// trim bound is set with it (8 MiB: each arena keeps less than that free at its top), which glibc's
// dynamic rule would have moved with the mmap bound. Called once, first thing, by every tool.
void return_big_buffers_to_the_system();

}  // namespace phew::core
