#include <phew/core/memory.hpp>

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>

#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

namespace phew::core {
namespace {

std::atomic<bool> huge_pages_advised{false};

}  // namespace

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
  constexpr int kMapped = static_cast<int>(kBigBuffer);
  mallopt(M_MMAP_THRESHOLD, kMapped);
  // Setting the bound also fixes the heap's trim bound at glibc's 128 KiB (its dynamic rule moves it with
  // the mmap bound): the heap's top was then given back and faulted in again for every few-MiB buffer
  // (unbind on the clustered 2.1 M box: 2.5x the page faults, 6-12 % of its time). At the mmap bound the
  // heap keeps less than one big buffer's worth at its top (cic-project's peak is the same).
  mallopt(M_TRIM_THRESHOLD, kMapped);
}

void advise_pages(void* p, std::size_t bytes, Pages pages) noexcept {
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t begin = (at + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const std::uintptr_t end = (at + bytes) / kHugePageBytes * kHugePageBytes;
  // Advice only: a kernel without THP answers EINVAL and the buffer keeps the pages it has.
  if (end > begin)
    madvise(reinterpret_cast<void*>(begin), end - begin, pages == Pages::huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

void* map_aligned_pages(std::size_t bytes) {
  // A huge page more than asked for, and the parts before the first boundary and after the buffer's
  // last page given back: what is left is one mapping, which unmap_pages(p, bytes) gives back whole.
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t length = (bytes + page - 1) / page * page, span = length + kHugePageBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto at = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t begin = (at + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (begin > at) munmap(raw, begin - at);
  if (at + span > begin + length) munmap(reinterpret_cast<void*>(begin + length), at + span - (begin + length));
  return reinterpret_cast<void*>(begin);
}

void* map_pages(std::size_t bytes) {
  void* p = map_aligned_pages(bytes);
  if (big_buffers_backed_by_huge_pages()) advise_pages(p, bytes, Pages::huge);
  return p;
}

void unmap_pages(void* p, std::size_t bytes) noexcept { munmap(p, bytes); }

bool back_big_buffers_with_huge_pages() {
  const char* env = std::getenv("PHEW_HUGE_PAGES");
  const bool on = env == nullptr || (std::strcmp(env, "off") != 0 && std::strcmp(env, "0") != 0);
  huge_pages_advised.store(on, std::memory_order_relaxed);
  return on;
}

bool big_buffers_backed_by_huge_pages() noexcept { return huge_pages_advised.load(std::memory_order_relaxed); }

}  // namespace phew::core

// The replaceable operator new (libstdc++'s array, nothrow and sized forms call this one, and its
// operator delete calls free), so that every std::vector of a big array gets the advice. Not under
// AddressSanitizer, whose own operator new checks what is freed with what.
#ifndef __SANITIZE_ADDRESS__
void* operator new(std::size_t bytes) {
  using phew::core::kHugePageBytes;
  const bool huge = bytes >= phew::core::kBigBuffer && phew::core::big_buffers_backed_by_huge_pages();
  for (;;) {
    // A big buffer starts on a huge page (glibc maps it from the system and keeps the offset in its
    // header, so free() takes it): malloc's would start just past a 4 KiB page, and the huge page's
    // worth in front of the first whole one would fault 4 KiB at a time (512 faults a buffer).
    void* p = nullptr;
    if (!huge)
      p = std::malloc(bytes == 0 ? 1 : bytes);
    else if (posix_memalign(&p, kHugePageBytes, bytes) != 0)
      p = nullptr;
    if (p != nullptr) {
      if (huge) phew::core::advise_pages(p, bytes, phew::core::Pages::huge);
      return p;
    }
    const std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}
#endif
