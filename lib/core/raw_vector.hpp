// std::vector that leaves trivially-constructible elements uninitialised on resize, for large buffers
// that are written before they are read (zero-filling them costs a full extra pass over memory).
#pragma once

#include <memory>
#include <vector>

namespace phew {

template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  using std::allocator<T>::allocator;
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
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
using RawVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace phew
