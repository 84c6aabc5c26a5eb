// Morton (Z-order) codes: the bits of three coordinates interleaved, so that points near each other
// in space are mostly near each other in the code's order. One spreading for every user: the adaptive
// mesh's cell keys (mesh/cell_key.hpp) and the order of a DTFE field's points (dtfe/field_points.cpp).
#pragma once

#include <cstdint>

namespace phew::core {

// Spreads the low 21 bits of v to every third bit (bit b goes to bit 3b): three of them fill 63 bits.
constexpr std::uint64_t spread_bits_3(std::uint64_t v) {
  v &= 0x1FFFFF;
  v = (v | v << 32) & 0x1F00000000FFFFull;
  v = (v | v << 16) & 0x1F0000FF0000FFull;
  v = (v | v << 8) & 0x100F00F00F00F00Full;
  v = (v | v << 4) & 0x10C30C30C30C30C3ull;
  v = (v | v << 2) & 0x1249249249249249ull;
  return v;
}

// The inverse of spread_bits_3: every third bit, from bit 0, gathered into the low 21 bits.
constexpr std::uint64_t gather_bits_3(std::uint64_t v) {
  v &= 0x1249249249249249ull;
  v = (v ^ (v >> 2)) & 0x10C30C30C30C30C3ull;
  v = (v ^ (v >> 4)) & 0x100F00F00F00F00Full;
  v = (v ^ (v >> 8)) & 0x1F0000FF0000FFull;
  v = (v ^ (v >> 16)) & 0x1F00000000FFFFull;
  v = (v ^ (v >> 32)) & 0x1FFFFFull;
  return v;
}

static_assert(gather_bits_3(spread_bits_3(0x1FFFFF)) == 0x1FFFFF && spread_bits_3(0x1FFFFF) == 0x1249249249249249ull);

}  // namespace phew::core
