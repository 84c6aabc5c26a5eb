// A stable sort by an unsigned integer key (least significant digit first, 11 bits a pass, 8 below a
// few thousand items), for the hot per-object sorts of unbind (members by radius, a ball's particles by
// distance) and the octree's cell codes (cic-project --refine): a few passes over n where std::sort
// compares n log n times. A pass whose digit every key shares is skipped (the exponent bits of radii
// within a few decades). Small inputs go to std::stable_sort, which is faster there.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace phew::core {

inline constexpr std::size_t kRadixSortMin = 256;
inline constexpr std::size_t kRadixSmallDigitBelow = 4096;

// Sorts `items` by key(item) (an unsigned integer below 2^key_bits), stably: items of equal keys keep
// their order. `scratch` is room the sort may use (kept by callers that sort often).
template <typename T, typename Key>
void radix_sort(std::vector<T>& items, std::vector<T>& scratch, Key key, int key_bits = 64) {
  const std::size_t n = items.size();
  if (n < kRadixSortMin) {
    std::stable_sort(items.begin(), items.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
    return;
  }
  // Digits of 11 bits, or of 8 below a few thousand items, where clearing and scanning 2048 counts a
  // pass cost more than the items (unbind's haloes of a few hundred particles).
  const int digit = n < kRadixSmallDigitBelow ? 8 : 11;
  const std::size_t buckets = std::size_t{1} << digit;
  scratch.resize(n);
  std::array<std::size_t, std::size_t{1} << 11> count{};
  for (int shift = 0; shift < key_bits; shift += digit) {
    std::fill_n(count.begin(), buckets, 0);
    for (const T& t : items) ++count[(static_cast<std::uint64_t>(key(t)) >> shift) & (buckets - 1)];
    if (std::find(count.begin(), count.begin() + buckets, n) != count.begin() + buckets) continue;  // all alike
    std::size_t at = 0;
    for (std::size_t b = 0; b < buckets; ++b) {
      const std::size_t k = count[b];
      count[b] = at;
      at += k;
    }
    for (const T& t : items) scratch[count[(static_cast<std::uint64_t>(key(t)) >> shift) & (buckets - 1)]++] = t;
    items.swap(scratch);
  }
}

// The same, in passes over only the bits some key has (one pass to find them): for keys far below
// 2^64 whose width the caller does not know (Morton codes of a level's lattice).
template <typename T, typename Key>
void radix_sort_by_used_bits(std::vector<T>& items, std::vector<T>& scratch, Key key) {
  std::uint64_t all = 0;
  for (const T& t : items) all |= static_cast<std::uint64_t>(key(t));
  radix_sort(items, scratch, key, static_cast<int>(std::bit_width(all)));
}

// Unsigned integers (cell codes, keys) ascending.
template <typename U>
void radix_sort_values(std::vector<U>& values, std::vector<U>& scratch) {
  radix_sort_by_used_bits(values, scratch, [](U v) { return v; });
}
template <typename U>
void radix_sort_values(std::vector<U>& values) {
  std::vector<U> scratch;
  radix_sort_values(values, scratch);
}

}  // namespace phew::core
