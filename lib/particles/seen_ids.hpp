// Which particle IDs a rank has seen, exactly, to find one given twice, at a bit per ID where a list
// costs 8 bytes: simulation codes number particles densely (Gadget and RAMSES 1..N), so while the IDs
// seen span no more than 64 times their count they are bits of a map over that span; IDs spread wider
// (hashed or sparse) are listed and sorted at the end. Used by the snapshot readers' duplicate check,
// which holds every ID of a rank's share.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace phew::particles {

class SeenIds {
 public:
  // `expected`: about how many IDs will be added (IDs in random order span their whole range from the
  // first few: the map's density is judged against this count until more have come).
  explicit SeenIds(std::uint64_t expected = 0) : expected_(expected) {}
  void add(std::span<const std::uint64_t> ids);
  // The smallest ID added more than once, if any (it sorts the list, when there is one).
  std::optional<std::uint64_t> smallest_repeated();
  // Bytes held: for memory reports and tests.
  std::size_t bytes() const { return 8 * (words_.capacity() + list_.capacity()); }

 private:
  // Whether a map over words [first, last] (word w: IDs 64 w to 64 w + 63) stays dense enough.
  bool fits(std::uint64_t first_word, std::uint64_t last_word) const;
  void cover(std::uint64_t word);  // the map widened to hold it
  void to_list();

  bool listing_ = false;
  std::uint64_t expected_ = 0;
  std::uint64_t count_ = 0;  // IDs added
  std::uint64_t first_ = 0;  // the map's first word: bit b of words_[k] is ID 64 (first_ + k) + b
  std::vector<std::uint64_t> words_;
  std::vector<std::uint64_t> list_;
  std::optional<std::uint64_t> repeated_;  // the smallest repeat found while mapping
};

}  // namespace phew::particles
