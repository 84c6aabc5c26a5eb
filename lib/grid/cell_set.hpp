// A subset of a block's cells (the test cells of a watershed) as a bitmap with running counts: whether a
// cell is in it, and its position among the members in slot order, both in O(1), at 1/4 byte per cell.
// Per-member data (a label) then lives in a plain vector of members, so a segmentation costs bytes per
// test cell rather than bytes per cell.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace phew::grid {

// Bits set in a word. The x86-64 baseline Debian builds for has no popcnt instruction, and std::popcount
// then calls libgcc's table-driven fallback once per rank(); the SWAR sum below inlines to a dozen
// instructions.
constexpr int bits_set(std::uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return static_cast<int>((x * 0x0101010101010101ull) >> 56);
}

class CellSet {
 public:
  CellSet() = default;
  explicit CellSet(std::size_t slots) : bits_((slots + 63) / 64, 0), slots_(slots) {}

  std::size_t slots() const { return slots_; }
  // Adds a slot. Every insert must come before finish().
  void insert(std::size_t s) { bits_[s / 64] |= std::uint64_t{1} << (s % 64); }
  // Builds the running counts; call once after the inserts.
  void finish() {
    before_.assign(bits_.size() + 1, 0);
    for (std::size_t w = 0; w < bits_.size(); ++w)
      before_[w + 1] = before_[w] + static_cast<std::uint64_t>(bits_set(bits_[w]));
    every_slot_ = size() == slots_;
  }

  bool contains(std::size_t s) const { return (bits_[s / 64] >> (s % 64)) & 1; }
  // Members in slots [0, s): the position of slot s among the members when it is one.
  std::size_t rank(std::size_t s) const {
    if (s >= slots_) return size();
    // Every slot a member (an adaptive mesh made of the test leaves alone): a slot is its own rank.
    if (every_slot_) return s;
    const std::uint64_t below = (std::uint64_t{1} << (s % 64)) - 1;
    return static_cast<std::size_t>(before_[s / 64] + static_cast<std::uint64_t>(bits_set(bits_[s / 64] & below)));
  }
  std::size_t size() const { return before_.empty() ? 0 : static_cast<std::size_t>(before_.back()); }

  // Calls f(slot, member) for each member slot in [begin, end), in slot order, with its position among
  // the members (its rank).
  template <typename F>
  void for_each(std::size_t begin, std::size_t end, F&& f) const {
    end = std::min(end, slots_);
    if (begin >= end) return;
    std::size_t member = rank(begin);
    for (std::size_t w = begin / 64; w * 64 < end; ++w) {
      std::uint64_t word = bits_[w];
      if (w == begin / 64) word &= ~((std::uint64_t{1} << (begin % 64)) - 1);
      while (word) {
        const std::size_t s = w * 64 + static_cast<std::size_t>(std::countr_zero(word));
        if (s >= end) return;
        word &= word - 1;
        f(s, member++);
      }
    }
  }

 private:
  std::vector<std::uint64_t> bits_;
  std::vector<std::uint64_t> before_;  // members in the words before each word
  std::size_t slots_ = 0;
  bool every_slot_ = false;
};

}  // namespace phew::grid
