// An allocator for the large arrays the ray marching walks at random (tetrahedra, vertices): 2 MiB
// aligned and advised for transparent huge pages, so that walks across hundreds of megabytes do not
// spend their time in page-table walks. Elements are left uninitialised on resize (they are always
// written before they are read), like RawVector.
#pragma once

#include <phew/core/raw_vector.hpp>

#include <cstddef>
#include <new>
#include <type_traits>
#include <vector>

namespace phew::dtfe {

void* allocate_huge(std::size_t bytes);  // throws std::bad_alloc
void free_huge(void* p) noexcept;

template <typename T>
struct HugePageAllocator : core::DefaultInitConstruct {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_huge(n * sizeof(T))); }
  void deallocate(T* p, std::size_t) noexcept { free_huge(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace phew::dtfe
