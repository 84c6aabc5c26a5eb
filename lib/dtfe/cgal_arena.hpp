// Where CGAL's triangulation keeps its vertices and cells: blocks cut from 64 MiB chunks advised for
// transparent huge pages, all given back at once when the triangulation is done.
//
// CGAL's containers allocate blocks of a few hundred kilobytes through CGAL_ALLOCATOR (CGAL/memory.h),
// std::allocator by default, so a triangulation of 10^6 points (about 700 MB) was faulted in 4 KiB at a
// time: 160,000 page faults, a quarter of the map's system time on a VM. cgal_delaunay.hpp defines
// CGAL_ALLOCATOR as CgalArenaAllocator. While a CgalArena is open, blocks come from it and freeing one is
// a no-op; outside (or for a second arena, which waits) the allocator is malloc and free. One arena at a
// time in a process: triangulations run one after another, each on all the threads asked for (the
// slabs of one field share its arena, cgal_slabs.cpp).
#pragma once

#include <cstddef>
#include <mutex>

namespace phew::dtfe::detail {

class CgalArena {
 public:
  CgalArena();  // waits while another arena is open
  ~CgalArena();
  CgalArena(const CgalArena&) = delete;
  CgalArena& operator=(const CgalArena&) = delete;

 private:
  std::unique_lock<std::mutex> one_at_a_time_;
};

void* cgal_allocate(std::size_t bytes);  // throws std::bad_alloc
void cgal_deallocate(void* p) noexcept;

template <typename T>
struct CgalArenaAllocator {
  using value_type = T;
  CgalArenaAllocator() = default;
  template <typename U>
  CgalArenaAllocator(const CgalArenaAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(cgal_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) noexcept { cgal_deallocate(p); }
  template <typename U>
  bool operator==(const CgalArenaAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace phew::dtfe::detail
