// What memory this machine has left, so that tools can refuse a job before allocating it, and how the
// process hands its big buffers back.
#pragma once

#include <cstddef>
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
inline constexpr std::size_t kBigBuffer = std::size_t{8} << 20;  // "big" here and below

// From then on, every allocation through operator new of that size (8 MiB or more) is also advised to
// the kernel as one for transparent huge pages (madvise MADV_HUGEPAGE, which Debian's default THP mode,
// "madvise", waits for): its memory is then faulted in 2 MiB at a time instead of 4 KiB. A tool's big
// arrays (grids, octrees, particles) are written from start to end, and their page faults were most of
// their cost on a virtual machine where a fault is dear: 4.9 s of the uniform 512^3 cic-project's 5.8 s
// (bench/README.md). PHEW_HUGE_PAGES=off in the environment leaves the kernel's 4 KiB pages (for nodes
// where THP's compaction stalls, or to compare). Returns whether the advice is on.
bool back_big_buffers_with_huge_pages();
bool big_buffers_backed_by_huge_pages() noexcept;

// A transparent huge page (x86-64).
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// Advises the whole 2 MiB pages inside [p, p + bytes) for transparent huge pages or against them. Against
// them for a buffer filled out of order, whose resident part should follow what is written: a write
// anywhere in a huge page makes all of it resident.
enum class Pages { huge, small };
void advise_pages(void* p, std::size_t bytes, Pages pages) noexcept;

// `bytes` mapped from the system (zero pages until written), starting on a huge page, without advice:
// Linux aligns an anonymous mapping to 2 MiB by itself only from 6.7 on, and only when its length is a
// multiple of 2 MiB, and the 2 MiB in front of the first whole huge page would fault 4 KiB at a time.
// Given back with unmap_pages. Throws std::bad_alloc.
void* map_aligned_pages(std::size_t bytes);
// The same, advised for huge pages as the big buffers are: blocks that a buffer manages itself
// (core::BlockList, the uniform deposit's cloud pool).
void* map_pages(std::size_t bytes);
void unmap_pages(void* p, std::size_t bytes) noexcept;

}  // namespace phew::core
