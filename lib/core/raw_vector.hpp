// std::vector that leaves trivially-constructible elements uninitialised on resize, for large buffers
// that are written before they are read (zero-filling them costs a full extra pass over memory).
#pragma once

#include <memory>
#include <vector>

namespace phew::core {

// The construct() of an allocator that default-initialises: a vector's resize() then leaves
// trivially-constructible elements as they are. Mixed into the allocators below and in lib/dtfe.
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

}  // namespace phew::core
