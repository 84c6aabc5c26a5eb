#include <phew/particles/seen_ids.hpp>

#include <algorithm>

namespace phew::particles {

namespace {
// A map may take up to a list's 8 bytes per ID (one word per ID seen or expected), and 8 KiB whatever
// the count.
constexpr std::uint64_t kFreeWords = 1024;
}  // namespace

bool SeenIds::fits(std::uint64_t first_word, std::uint64_t last_word) const {
  const std::uint64_t words = last_word - first_word + 1;
  return words <= kFreeWords || words <= std::max(count_, expected_) + 1;
}

// Widened to hold word w (outside the map), by half the map again when that stays dense enough, so that
// IDs met in ascending or descending runs widen it a logarithmic number of times.
void SeenIds::cover(std::uint64_t w) {
  if (words_.empty()) {
    first_ = w;
    words_.assign(1, 0);
    return;
  }
  const std::uint64_t last = first_ + (words_.size() - 1);
  const std::uint64_t step = words_.size() / 2;
  if (w < first_) {
    const std::uint64_t lo = first_ - w >= step ? w : (first_ >= step ? first_ - step : 0);
    const std::uint64_t to = fits(lo, last) ? lo : w;
    words_.insert(words_.begin(), first_ - to, 0);
    first_ = to;
  } else {
    const std::uint64_t max_word = ~std::uint64_t{0} >> 6;
    const std::uint64_t hi = w - last >= step ? w : (max_word - last >= step ? last + step : max_word);
    const std::uint64_t to = fits(first_, hi) ? hi : w;
    words_.resize(words_.size() + (to - last), 0);
  }
}

void SeenIds::to_list() {
  list_.reserve(count_ + 1);
  for (std::size_t k = 0; k < words_.size(); ++k)
    for (std::uint64_t bits = words_[k]; bits != 0; bits &= bits - 1)
      list_.push_back(((first_ + k) << 6) + static_cast<std::uint64_t>(__builtin_ctzll(bits)));
  std::vector<std::uint64_t>().swap(words_);
  listing_ = true;
}

void SeenIds::add(std::span<const std::uint64_t> ids) {
  for (const std::uint64_t id : ids) {
    const std::uint64_t w = id >> 6;
    if (!listing_ && (words_.empty() || w < first_ || w - first_ >= words_.size())) {
      const std::uint64_t lo = words_.empty() ? w : std::min(first_, w);
      const std::uint64_t hi = words_.empty() ? w : std::max(first_ + (words_.size() - 1), w);
      if (fits(lo, hi))
        cover(w);
      else
        to_list();
    }
    ++count_;
    if (listing_) {
      list_.push_back(id);
      continue;
    }
    std::uint64_t& word = words_[w - first_];
    const std::uint64_t bit = std::uint64_t{1} << (id & 63);
    if (word & bit) {
      if (!repeated_ || id < *repeated_) repeated_ = id;
    } else {
      word |= bit;
    }
  }
}

std::optional<std::uint64_t> SeenIds::smallest_repeated() {
  std::optional<std::uint64_t> found = repeated_;  // repeats met while mapping, before any listing
  if (listing_) {
    std::sort(list_.begin(), list_.end());
    for (std::size_t i = 1; i < list_.size(); ++i)
      if (list_[i] == list_[i - 1]) {  // sorted: the first repeat in the list is its smallest
        if (!found || list_[i] < *found) found = list_[i];
        break;
      }
  }
  return found;
}

}  // namespace phew::particles
