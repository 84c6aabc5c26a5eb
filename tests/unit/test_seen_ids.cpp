// SeenIds (lib/particles/seen_ids.hpp) against the plain rule: sort every ID added and take the first
// that equals its neighbour. Dense runs (a bit per ID), ascending and descending, sparse and hashed IDs
// (listed), IDs at both ends of the 64-bit range, and a switch from the map to the list mid-stream.
#include <phew/particles/seen_ids.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <vector>

namespace phew::particles {
namespace {

std::optional<std::uint64_t> plain_smallest_repeated(std::vector<std::uint64_t> ids) {
  std::sort(ids.begin(), ids.end());
  for (std::size_t i = 1; i < ids.size(); ++i)
    if (ids[i] == ids[i - 1]) return ids[i];
  return std::nullopt;
}

std::optional<std::uint64_t> seen_smallest_repeated(const std::vector<std::uint64_t>& ids, std::size_t chunk,
                                                    std::size_t* bytes = nullptr, std::uint64_t expected = 0) {
  SeenIds seen(expected);
  for (std::size_t b = 0; b < ids.size(); b += chunk)
    seen.add(std::span<const std::uint64_t>(ids).subspan(b, std::min(chunk, ids.size() - b)));
  if (bytes) *bytes = seen.bytes();
  return seen.smallest_repeated();
}

TEST(SeenIds, TheSameRepeatAsSortingEveryId) {
  for (unsigned seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::uint64_t> any;
    const std::size_t n = 1 + rng() % 20000;
    std::vector<std::uint64_t> ids(n);
    const std::uint64_t start = seed % 5 == 0 ? ~std::uint64_t{0} - n - 100 : (seed % 3) * 1000003;
    for (std::size_t i = 0; i < n; ++i) {
      switch (seed % 4) {
        case 0:
          ids[i] = start + i;
          break;  // dense, ascending
        case 1:
          ids[i] = start + (n - i);
          break;  // dense, descending
        case 2:
          ids[i] = start + 7 * i + (i % 5 == 0 ? 1 : 0);
          break;  // gappy but dense enough
        default:
          ids[i] = any(rng);
          break;  // hashed: listed
      }
    }
    std::shuffle(ids.begin(), ids.end() - static_cast<long>(n / 2), rng);  // half shuffled, half in order
    if (seed % 6 == 0 && n > 2) ids[n - 1] = 5;  // one far-off ID at the end: the map becomes a list
    if (seed % 2 == 0 && n > 3) {                // a repeat or two
      ids[rng() % n] = ids[rng() % n];
      ids[rng() % n] = ids[rng() % n];
    }
    const std::size_t chunk = 1 + rng() % 4096;
    const std::uint64_t expected = seed % 3 == 0 ? 0 : n;  // with and without the hint
    EXPECT_EQ(seen_smallest_repeated(ids, chunk, nullptr, expected), plain_smallest_repeated(ids)) << "seed " << seed;
  }
  EXPECT_EQ(seen_smallest_repeated({}, 1), std::nullopt);
  EXPECT_EQ(seen_smallest_repeated({~std::uint64_t{0}, 0, ~std::uint64_t{0}}, 1), ~std::uint64_t{0});
  EXPECT_EQ(seen_smallest_repeated({3, 3}, 2), 3u);
}

TEST(SeenIds, DenseIdsCostABitEach) {
  std::vector<std::uint64_t> ids(1 << 20);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = 1 + i;
  std::shuffle(ids.begin(), ids.end(), std::mt19937_64(3));
  std::size_t bytes = 0;
  EXPECT_EQ(seen_smallest_repeated(ids, 32768, &bytes, ids.size()), std::nullopt);
  EXPECT_LE(bytes, ids.size() / 8 * 2);   // a bit per ID, the map grown by halves: under two
  ids.push_back(std::uint64_t{1} << 40);  // one far beyond: listed, 8 bytes each
  EXPECT_EQ(seen_smallest_repeated(ids, 32768, &bytes, ids.size()), std::nullopt);
  EXPECT_GE(bytes, 8 * (ids.size() - 1));
}

}  // namespace
}  // namespace phew::particles
