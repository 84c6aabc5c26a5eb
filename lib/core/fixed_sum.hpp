// A sum of doubles that does not depend on the order of its terms or how they are grouped: each term is
// rounded once to a multiple of a unit (a power of two far below the terms) and the multiples are added
// exactly as 128-bit integers. Sums made on different ranks and threads, in any split, then add up to
// the same bits. The unit comes from a bound every rank agrees on (FixedScale): on the largest term
// (for_terms: 2^-80 of it, room for 2^46 terms) or on the whole sum (for_total: 2^-100 of it). A term
// within 10^8 (10^14) of the bound keeps a double's precision; smaller ones are rounded coarser, but
// the same way on every decomposition.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace phew::core {

// GCC and Clang; -Wpedantic knows no 128-bit integer. Trivially copyable: it travels in messages as it is.
__extension__ using FixedInt = __int128;

class FixedScale {
 public:
  // `largest`: the largest |term| any rank will add (0 when there is none).
  static FixedScale for_terms(double largest) { return FixedScale(largest, 80); }
  // `largest`: the largest |term| (0 when there is none); 2^-62 of it, so that every term is below 2^62
  // units and converts in one instruction (for sums of many small terms in a hot loop), room for 2^65.
  static FixedScale for_int64_terms(double largest) { return FixedScale(largest, 62); }
  // `bound`: at least the sum of every |term| of every rank.
  static FixedScale for_total(double bound) { return FixedScale(bound, 100); }
  // The term in units, truncated towards zero: what static_cast<FixedInt>(std::ldexp(term, -exponent))
  // gives, without the library calls (sums of millions of cells convert several terms each): the
  // scaling is a multiplication by a power of two, exact, and a magnitude of 2^63 or more is an integer
  // already: its 53-bit significand shifted to its place. (A total's cells are mostly there: 2^76 units
  // for a cell of 2^-24 of the total. The split into two halves through floor and two conversions took
  // half of cic-project's sums.)
  FixedInt to_fixed(double term) const {
    const double a = std::fabs(per_unit_ > 0 ? term * per_unit_ : std::ldexp(term, -exponent_));
    FixedInt v;
    if (a < 0x1p63) {
      v = static_cast<std::int64_t>(a);
    } else {
      const auto bits = std::bit_cast<std::uint64_t>(a);
      const int shift = static_cast<int>(bits >> 52) - 1075;  // 11 or more; at most 74 below 2^127
      const std::uint64_t significand = (bits & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
      v = static_cast<FixedInt>(significand) << std::min(shift, 74);
    }
    return term < 0 ? -v : v;
  }
  // What std::ldexp(static_cast<double>(sum), exponent) gives: a multiplication by the unit where the
  // unit is a normal double (exact, or rounded once as ldexp rounds), without the library call (each of
  // unbind's shrinking-sphere steps makes four).
  double to_double(FixedInt sum) const {
    return unit_ > 0 ? static_cast<double>(sum) * unit_ : std::ldexp(static_cast<double>(sum), exponent_);
  }

 private:
  FixedScale(double bound, int bits) {
    int e = 0;
    if (bound > 0 && std::isfinite(bound)) std::frexp(bound, &e);  // bound < 2^e
    exponent_ = e - bits;
    // 2^-exponent_, or 0 when that is not a finite double (a bound below ~1e-284): then std::ldexp.
    per_unit_ = -exponent_ <= 1023 ? std::ldexp(1.0, -exponent_) : 0.0;
    unit_ = exponent_ >= -1022 && exponent_ <= 1023 ? std::ldexp(1.0, exponent_) : 0.0;
  }
  int exponent_ = 0;     // the unit is 2^exponent_
  double per_unit_ = 1;  // 2^-exponent_, or 0 when it would overflow
  double unit_ = 1;      // 2^exponent_, or 0 when it is not a normal double
};

}  // namespace phew::core
