// Vectors for large buffers, by what they do with memory:
//   RawVector   leaves trivially-constructible elements uninitialised on resize, for buffers written
//               before they are read (zero-filling them costs a full extra pass over memory);
//   PageVector  the same, its storage mapped from the system directly once it reaches kPageVectorMapped
//               bytes: freeing it gives the pages back at once, where the allocator might keep them, and
//               capacity never written is never resident. For many large pieces held one after another
//               (a rank's members, a chunk at a time) that are joined and let go one by one;
//   release_pages  a buffer's pages given back as it is consumed (release_consumed_pages: from its
//               start, in order);
//   release     a container's memory given back now: `v = {}` on a vector keeps its capacity (it
//               assigns an empty list), and `v.clear()` too.
#pragma once

#include <phew/core/memory.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace phew::core {

// The construct() of an allocator that default-initialises: a vector's resize() then leaves
// trivially-constructible elements as they are. Mixed into the allocators below.
struct DefaultInitConstruct {
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T>
struct DefaultInitAllocator : std::allocator<T>, DefaultInitConstruct {
  using std::allocator<T>::allocator;
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  using DefaultInitConstruct::construct;
};

template <typename T>
using RawVector = std::vector<T, DefaultInitAllocator<T>>;

inline constexpr std::size_t kPageVectorMapped = std::size_t{1} << 20;

template <typename T>
struct PageAllocator : DefaultInitConstruct {
  using value_type = T;
  PageAllocator() = default;
  template <typename U>
  PageAllocator(const PageAllocator<U>&) noexcept {}
  template <typename U>
  struct rebind {
    using other = PageAllocator<U>;
  };

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kPageVectorMapped) return std::allocator<T>().allocate(n);
    return static_cast<T*>(map_aligned_pages(bytes));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kPageVectorMapped)
      std::allocator<T>().deallocate(p, n);
    else
      unmap_pages(p, bytes);
  }
  template <typename U>
  bool operator==(const PageAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using PageVector = std::vector<T, PageAllocator<T>>;

// n zeros in a PageVector: storage mapped from the system is zero already, so only a vector too small
// to be mapped is filled (a pass fewer over a large buffer, and its pages fault where they are first
// written: on the threads that write them). A big one is advised for huge pages, as operator new's big
// buffers are: it is written all over (the adaptive mesh's level masses, 14-25 MB a level on the 2.1 M
// box at four levels, took 0.47 s of cic-project's 2.5 on two threads in 4 KiB faults, 0.38 s in 2 MiB
// ones).
template <typename T>
PageVector<T> zeroed_page_vector(std::size_t n) {
  PageVector<T> v(n);
  const std::size_t bytes = n * sizeof(T);
  if (bytes < kPageVectorMapped)
    std::fill(v.begin(), v.end(), T{});
  else if (bytes >= kBigBuffer && big_buffers_backed_by_huge_pages())
    advise_pages(v.data(), bytes, Pages::huge);
  return v;
}

// Gives a container's storage back now, where `c = {}` keeps the capacity (it assigns an empty list).
template <typename Container>
void release(Container& c) noexcept {
  Container().swap(c);
}

// Gives the whole pages inside [from, to) back to the system (`from` rounded up, `to` down to a page
// boundary of `page` bytes, the system's by default; their contents are not read again: a later read
// sees zeros), for a buffer consumed while it is still held. Returns the page boundary at or below
// `to`, where a next call over the rest of a buffer consumed from its start begins (or `from` when no
// page was given back).
inline char* release_pages(char* from, const void* to, std::uintptr_t page) {
  const auto begin = (reinterpret_cast<std::uintptr_t>(from) + page - 1) / page * page;
  const auto end = reinterpret_cast<std::uintptr_t>(to) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  return end > begin ? reinterpret_cast<char*>(end) : from;
}
inline char* release_pages(char* from, const void* to) {
  return release_pages(from, to, static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE)));
}
// The same for a buffer consumed from its start in order, each call beginning where the last one
// stopped: in huge pages (2 MiB) when big buffers are backed by them. Giving back part of a huge page
// splits it, and reading the rest of it then cost about one miss per element (unbind's members, read
// halo after halo behind the pages given back: 0.12 s in place of 0.014 s for 951 k members); a whole
// one costs nothing more, and what a call leaves of it goes back with the next call's.
inline char* release_consumed_pages(char* from, const void* to) {
  return release_pages(
      from, to,
      big_buffers_backed_by_huge_pages() ? kHugePageBytes : static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE)));
}

// The same values as a std::vector, copied a piece at a time with the source's pages given back as they
// are copied (the two are never held whole at once); the source is let go.
template <typename T, typename Allocator>
std::vector<T> to_vector_releasing(std::vector<T, Allocator>&& from) {
  std::vector<T> out;
  out.reserve(from.size());  // room, not written: its pages are touched as the pieces come
  constexpr std::size_t kPiece = (std::size_t{1} << 20) / sizeof(T);
  char* given = reinterpret_cast<char*>(from.data());
  for (std::size_t b = 0; b < from.size(); b += kPiece) {
    const std::size_t e = std::min(from.size(), b + kPiece);
    out.insert(out.end(), from.begin() + static_cast<std::ptrdiff_t>(b), from.begin() + static_cast<std::ptrdiff_t>(e));
    given = release_consumed_pages(given, from.data() + e);
  }
  release(from);
  return out;
}

}  // namespace phew::core
