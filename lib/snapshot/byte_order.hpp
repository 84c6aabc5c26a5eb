// Scalars from binary snapshot files of either byte order (Gadget binary, RAMSES part files): files
// written on big-endian machines (old clusters) need swapping. std::byteswap is C++23.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

namespace phew::snapshot {

template <typename T>
T byte_swap(T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::array<unsigned char, sizeof(T)> bytes;
  std::memcpy(bytes.data(), &value, sizeof(T));
  std::reverse(bytes.begin(), bytes.end());
  std::memcpy(&value, bytes.data(), sizeof(T));
  return value;
}

// The T stored at p (unaligned), swapped when the file's byte order is not the machine's.
template <typename T>
T load(const unsigned char* p, bool swap) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return swap ? byte_swap(value) : value;
}

}  // namespace phew::snapshot
