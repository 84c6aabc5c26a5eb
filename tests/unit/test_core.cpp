#include <phew/core/block_list.hpp>
#include <phew/core/error.hpp>
#include <phew/core/fixed_sum.hpp>
#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>
#include <phew/core/progress.hpp>
#include <phew/core/quantity.hpp>
#include <phew/core/radix_sort.hpp>
#include <phew/core/raw_vector.hpp>

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace phew::core {
namespace {

TEST(Error, KindsMapToTheDocumentedExitCodes) {
  EXPECT_EQ(exit_code(ErrorKind::usage), 2);
  EXPECT_EQ(exit_code(ErrorKind::input), 3);
  EXPECT_EQ(exit_code(ErrorKind::io), 4);
  EXPECT_EQ(exit_code(ErrorKind::internal), 1);
  const Error e = Error::input("{}: bad {}", "f.h5", 3);
  EXPECT_STREQ(e.what(), "f.h5: bad 3");
  EXPECT_EQ(e.kind(), ErrorKind::input);
}

TEST(PageVector, HoldsWhatItIsGivenOnEitherSideOfTheMappedSize) {
  for (const std::size_t n : {std::size_t{100}, kPageVectorMapped / sizeof(double) * 3}) {
    PageVector<double> v;
    for (std::size_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i) * 0.5);
    PageVector<double> copy(v.begin(), v.end());
    ASSERT_EQ(copy.size(), n);
    for (std::size_t i = 0; i < n; i += 997) EXPECT_EQ(copy[i], static_cast<double>(i) * 0.5);
  }
}

// Zeros on either side of the mapped size, where the allocator has just been handed dirty memory of
// the same size back (a small vector is filled; a mapped one is zero from the system).
TEST(PageVector, ZeroedOnEitherSideOfTheMappedSize) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{100}, kPageVectorMapped / sizeof(double) - 1,
                              kPageVectorMapped / sizeof(double) * 3}) {
    for (int round = 0; round < 3; ++round) {
      {
        PageVector<double> dirty(n);
        std::fill(dirty.begin(), dirty.end(), 7.0);
      }
      const PageVector<double> v = zeroed_page_vector<double>(n);
      ASSERT_EQ(v.size(), n);
      EXPECT_EQ(std::count(v.begin(), v.end(), 0.0), static_cast<std::ptrdiff_t>(n)) << n << " doubles";
    }
  }
}

// Whether the page holding p is resident (mincore).
bool resident(const void* p) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  unsigned char in = 0;
  mincore(reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) / page * page), 1, &in);
  return (in & 1) != 0;
}

TEST(ReleasePages, GivesBackTheWholePagesOfAConsumedPrefixOnly) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  PageVector<char> buffer(512 * page);  // above kPageVectorMapped: mapped, so page-aligned
  std::fill(buffer.begin(), buffer.end(), 'x');
  char* const start = buffer.data();
  // Consumed up to the middle of page 10: pages 0..9 go back, page 10 stays (its rest is still in use).
  char* next = release_pages(start, start + 10 * page + page / 2);
  EXPECT_EQ(next, start + 10 * page);
  EXPECT_FALSE(resident(start));
  EXPECT_FALSE(resident(start + 9 * page));
  EXPECT_TRUE(resident(start + 10 * page));
  EXPECT_EQ(start[10 * page + page / 2], 'x');
  // The next call starts where the last one stopped; a range inside one page gives nothing back.
  EXPECT_EQ(release_pages(next, start + 10 * page + 10), next);
  next = release_pages(next, start + 512 * page);
  EXPECT_EQ(next, start + 512 * page);
  EXPECT_FALSE(resident(start + 511 * page));
}

// A buffer consumed from its start, with big buffers on huge pages: only whole huge pages go back, the
// one still partly in use is kept whole (giving back part of it would split it), and so is the part
// before the first boundary; release_pages gives back the system's pages.
TEST(ReleasePages, ConsumedInWholeHugePagesWhenBigBuffersHaveThem) {
  constexpr std::uintptr_t kHuge = kHugePageBytes;
  PageVector<char> buffer(6 * kHuge);
  std::fill(buffer.begin(), buffer.end(), 'x');
  char* const start = buffer.data();
  char* const first = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(start) + kHuge - 1) / kHuge * kHuge);
  const bool was = big_buffers_backed_by_huge_pages();  // restored below: other tests see it off
  const char* env = std::getenv("PHEW_HUGE_PAGES");
  const std::string env_value = env != nullptr ? env : "";
  if (back_big_buffers_with_huge_pages()) {  // as every tool does at its start (not with PHEW_HUGE_PAGES=off)
    char* next = release_consumed_pages(start, first + kHuge + kHuge / 2);
    EXPECT_EQ(next, first + kHuge);
    EXPECT_FALSE(resident(first));
    EXPECT_FALSE(resident(first + kHuge - 1));
    EXPECT_TRUE(resident(first + kHuge));
    EXPECT_TRUE(resident(first + kHuge + kHuge / 2 - 1)) << "the huge page in use was split";
    if (first > start) {
      EXPECT_TRUE(resident(start));
    }
  }
  if (!was) {
    setenv("PHEW_HUGE_PAGES", "off", 1);
    back_big_buffers_with_huge_pages();
    if (env != nullptr) {
      setenv("PHEW_HUGE_PAGES", env_value.c_str(), 1);
    } else {
      unsetenv("PHEW_HUGE_PAGES");
    }
  }
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  char* next = release_pages(first + kHuge, first + 2 * kHuge + 5 * page + 10);
  EXPECT_EQ(next, first + 2 * kHuge + 5 * page);
  EXPECT_FALSE(resident(first + 2 * kHuge + 4 * page));
  EXPECT_TRUE(resident(first + 2 * kHuge + 5 * page));
}

TEST(DensityThreshold, ParsesAbsoluteMeanAndCrit) {
  EXPECT_DOUBLE_EQ(DensityThreshold::parse("1.5e-7").resolve(2.0, std::nullopt), 1.5e-7);
  EXPECT_DOUBLE_EQ(DensityThreshold::parse("80mean").resolve(2.0, std::nullopt), 160.0);
  EXPECT_DOUBLE_EQ(DensityThreshold::parse("200crit").resolve(2.0, 0.5), 100.0);
  EXPECT_EQ(DensityThreshold::parse("80mean").to_string(), "80mean");
}

TEST(DensityThreshold, RejectsBadText) {
  for (const char* bad : {"", "mean", "-1", "80foo", "nan", "inf"}) {
    try {
      DensityThreshold::parse(bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
    }
  }
}

TEST(DensityThreshold, CritWithoutCosmologyIsAnInputError) {
  try {
    DensityThreshold::parse("80crit").resolve(1.0, std::nullopt);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
  }
}

TEST(MassThreshold, ParsesParticles) {
  EXPECT_DOUBLE_EQ(MassThreshold::parse("10particles").resolve(0.5), 5.0);
  EXPECT_DOUBLE_EQ(MassThreshold::parse("3.5").resolve(0.0), 3.5);
  EXPECT_THROW(MassThreshold::parse("10particles").resolve(0.0), Error);
  EXPECT_THROW(MassThreshold::parse("10stars"), Error);
}

TEST(Log, FormatsNumbersForHumans) {
  EXPECT_EQ(log::thousands(1311208), "1,311,208");
  EXPECT_EQ(log::thousands(-1000), "-1,000");
  EXPECT_EQ(log::thousands(12), "12");
  EXPECT_EQ(log::bytes(1536), "1.5 KiB");
}

TEST(Memory, RefusesWhatDoesNotFit) {
  EXPECT_NO_THROW(check_memory(1e6, 2'000'000, "job"));
  EXPECT_THROW(check_memory(3e6, 2'000'000, "job"), Error);
  EXPECT_NO_THROW(check_memory(3e6, 0, "job"));  // unknown: no guess
}

}  // namespace
}  // namespace phew::core

// ---- Progress: a fake clock and the lines it writes ----------------------------------------------------

namespace phew::core {
namespace {

struct FakeOutput {
  double now = 100.0;
  std::vector<std::string> lines;
  Progress::Output output(bool terminal, double interval) {
    Progress::Output o;
    o.enabled = true;
    o.terminal = terminal;
    o.interval = interval;
    o.write = [this](const std::string& s) { lines.push_back(s); };
    o.clock = [this] { return now; };
    return o;
  }
};

TEST(Progress, LogLinesComeAtTheIntervalAndALastLineEndsThem) {
  FakeOutput f;
  {
    Progress p("voters", "peaks", 100, 1, f.output(false, 5.0));
    for (int i = 1; i <= 100; ++i) {
      f.now += 0.25;  // 25 s in all: a line at 5, 10, 15 and 20 s
      p.add();
    }
    EXPECT_EQ(f.lines.size(), 4u);
    p.finish();
  }
  ASSERT_EQ(f.lines.size(), 5u);
  EXPECT_EQ(f.lines[0], "voters: 20 of 100 peaks (20%), about 20 s left");
  EXPECT_EQ(f.lines[3], "voters: 80 of 100 peaks (80%), about 5 s left");
  EXPECT_EQ(f.lines[4], "voters: 100 of 100 peaks (100%), in 25 s");
}

TEST(Progress, AShortLoopWritesNothing) {
  FakeOutput f;
  {
    Progress p("deblend", "particles", 1000, 1, f.output(false, 5.0));
    f.now += 4.9;
    p.update(999);
    f.now += 1.0;
    p.update(1000);  // done: the end is only said after a line was written
  }
  EXPECT_TRUE(f.lines.empty());
}

TEST(Progress, IntervalZeroWritesEveryUpdateAndRanksSayTheShare) {
  FakeOutput f;
  Progress p("fields", "fields", 3, 4, f.output(false, 0.0));
  for (int i = 0; i < 3; ++i) p.add();
  p.finish();
  p.finish();                     // once only
  ASSERT_EQ(f.lines.size(), 3u);  // after items 1 and 2, then the last line
  EXPECT_EQ(f.lines[0], "fields: 1 of 3 fields (33%) on rank 0 of 4");
  EXPECT_EQ(f.lines[2], "fields: 3 of 3 fields (100%) on rank 0 of 4, in 0 s");
}

TEST(Progress, IntervalZeroWritesTheLastLineOfAOneItemLoop) {
  FakeOutput f;
  {
    Progress p("deblend", "particles in patches", 7, 1, f.output(false, 0.0));
    p.update(7);
  }
  ASSERT_EQ(f.lines.size(), 1u);
  EXPECT_EQ(f.lines[0], "deblend: 7 of 7 particles in patches (100%), in 0 s");
}

TEST(Progress, DisabledOrEmptyWritesNothing) {
  FakeOutput f;
  Progress::Output off = f.output(false, 0.0);
  off.enabled = false;  // another rank, or --quiet
  {
    Progress p("voters", "peaks", 10, 1, off);
    for (int i = 0; i < 10; ++i) p.add();
    Progress none("voters", "peaks", 0, 1, f.output(false, 0.0));
    none.add();
  }
  EXPECT_TRUE(f.lines.empty());
}

TEST(Progress, ALoopThatStopsEarlySaysSo) {
  FakeOutput f;
  Progress p("link", "snapshots", 10, 1, f.output(false, 1.0));
  f.now += 2;
  p.update(4);
  f.now += 2;
  p.finish();
  ASSERT_EQ(f.lines.size(), 2u);
  EXPECT_EQ(f.lines[1], "link: 4 of 10 snapshots (40%), stopped after 4 s");
}

TEST(Progress, ATerminalBarIsRedrawnAtMostTenTimesASecondAndCleared) {
  FakeOutput f;
  {
    Progress p("voters", "peaks", 128, 1, f.output(true, 5.0));
    for (int i = 0; i < 128; ++i) {
      f.now += 1.0 / 128;  // 1 s in all, in steps a double holds exactly
      p.add();
    }
  }
  ASSERT_EQ(f.lines.size(), 10u);  // at items 13, 26, ..., 117, then the clearing
  EXPECT_EQ(f.lines.front().rfind("\r[###.", 0), 0u) << f.lines.front();
  EXPECT_NE(f.lines.front().find("voters: 13 of 128 peaks (10%)"), std::string::npos) << f.lines.front();
  EXPECT_EQ(f.lines.back(), "\r\033[K");
}

TEST(Progress, IntervalFromTheEnvironment) {
  ::setenv("PHEW_PROGRESS_INTERVAL", "0.5", 1);
  EXPECT_DOUBLE_EQ(Progress::Output::interval_from_environment(), 0.5);
  ::setenv("PHEW_PROGRESS_INTERVAL", "soon", 1);
  EXPECT_DOUBLE_EQ(Progress::Output::interval_from_environment(), 5.0);
  ::setenv("PHEW_PROGRESS_INTERVAL", "-1", 1);
  EXPECT_DOUBLE_EQ(Progress::Output::interval_from_environment(), 5.0);
  ::unsetenv("PHEW_PROGRESS_INTERVAL");
  EXPECT_DOUBLE_EQ(Progress::Output::interval_from_environment(), 5.0);
}

}  // namespace
}  // namespace phew::core

// FixedScale::to_fixed is the truncated scaled term a 128-bit cast of std::ldexp gives, bit for bit,
// for terms of both signs from far below the bound to the bound itself (above and below 2^63 units:
// both paths of the conversion), and sums of the terms in either order are the same.
TEST(FixedScale, ConvertsAsTheLibraryCastDoesAndSumsInAnyOrder) {
  using phew::core::FixedInt;
  using phew::core::FixedScale;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const double bound : {1.0, 3.7e-12, 6.02e23, 1e-290, 1e300}) {
    int e = 0;
    std::frexp(bound, &e);  // bound < 2^e
    for (const auto& [scale, bits] :
         {std::pair{FixedScale::for_terms(bound), 80}, std::pair{FixedScale::for_total(bound), 100}}) {
      std::vector<double> terms{bound, -bound, 0.0};
      for (int i = 0; i < 2000; ++i) terms.push_back(bound * u(rng) * std::pow(10.0, -static_cast<double>(i % 30)));
      for (const int k : {52, 53, 62, 63, 64, 65, 98}) {  // at and beside the powers where the paths change
        const double t = std::ldexp(1.0, k + e - bits);
        for (const double x : {t, std::nextafter(t, 0.0), std::nextafter(t, 2 * t), std::ldexp(1.5, k + e - bits)}) {
          terms.push_back(x);
          terms.push_back(-x);
        }
      }
      FixedInt forward = 0, backward = 0;
      for (const double t : terms) {
        const FixedInt want = static_cast<FixedInt>(std::ldexp(t, bits - e));
        EXPECT_TRUE(scale.to_fixed(t) == want) << "term " << t << " of bound " << bound << " at 2^-" << bits;
        forward += scale.to_fixed(t);
      }
      for (auto it = terms.rbegin(); it != terms.rend(); ++it) backward += scale.to_fixed(*it);
      EXPECT_TRUE(forward == backward);
      // Back to doubles as the library's ldexp gives them, sums of every size (subnormal results too).
      for (const double t : terms) {
        const FixedInt v = scale.to_fixed(t);
        for (const FixedInt sum : {v, v * 3, v / 7, FixedInt{1}, FixedInt{-5}}) {
          const double want_double = std::ldexp(static_cast<double>(sum), e - bits);
          EXPECT_EQ(std::bit_cast<std::uint64_t>(scale.to_double(sum)), std::bit_cast<std::uint64_t>(want_double))
              << "sum of term " << t << " of bound " << bound << " at 2^-" << bits;
        }
      }
    }
  }
}

// radix_sort against std::stable_sort: keys with few distinct values (ties keep their order), keys of
// every width, sizes on both sides of the switch to std::stable_sort, and doubles' bits as keys.
TEST(RadixSort, TheOrderOfAStableSort) {
  std::mt19937_64 rng(11);
  struct Item {
    std::uint64_t key;
    std::size_t at;
  };
  std::vector<Item> scratch;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{100}, phew::core::kRadixSortMin,
                              std::size_t{1000}, phew::core::kRadixSmallDigitBelow - 1,
                              phew::core::kRadixSmallDigitBelow, std::size_t{5000}, std::size_t{70000}})
    for (const int bits : {3, 11, 12, 32, 40, 64}) {
      std::vector<Item> items(n);
      for (std::size_t i = 0; i < n; ++i) items[i] = {bits == 64 ? rng() : rng() % (std::uint64_t{1} << bits), i};
      std::vector<Item> want = items;
      std::stable_sort(want.begin(), want.end(), [](const Item& a, const Item& b) { return a.key < b.key; });
      phew::core::radix_sort(
          items, scratch, [](const Item& t) { return t.key; }, bits);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(items[i].key, want[i].key) << n << " " << bits << " " << i;
        ASSERT_EQ(items[i].at, want[i].at) << n << " " << bits << " " << i;
      }
    }
  // non-negative doubles by their bits: by value
  std::vector<double> radii(3000), spare;
  std::exponential_distribution<double> e(1.0);
  for (double& r : radii) r = e(rng) * (rng() % 7 == 0 ? 1e-6 : 1e3);
  radii[5] = 0.0;
  std::vector<double> want = radii;
  std::sort(want.begin(), want.end());
  phew::core::radix_sort(radii, spare, [](double r) { return std::bit_cast<std::uint64_t>(r); });
  EXPECT_EQ(radii, want);
}

// radix_sort_values (passes over the bits some value has) against std::sort: all zeros, a single high
// bit, Morton-like codes of a few widths, and the stable by-used-bits sort of pairs by their first.
TEST(RadixSort, ValuesByTheBitsTheyUse) {
  std::mt19937_64 rng(12);
  for (const std::size_t n : {std::size_t{0}, std::size_t{7}, std::size_t{300}, std::size_t{40000}})
    for (const int bits : {0, 1, 21, 33, 57, 64}) {
      std::vector<std::uint64_t> v(n);
      for (auto& x : v) x = bits == 0 ? 0 : bits == 64 ? rng() : rng() % (std::uint64_t{1} << bits);
      if (n > 3) v[n / 2] = bits == 0 ? 0 : std::uint64_t{1} << (bits - 1);  // the top bit in use
      std::vector<std::uint64_t> want = v;
      std::sort(want.begin(), want.end());
      phew::core::radix_sort_values(v);
      EXPECT_EQ(v, want) << n << " " << bits;
    }
  std::vector<std::pair<std::uint64_t, std::size_t>> pairs(5000), scratch;
  for (std::size_t i = 0; i < pairs.size(); ++i) pairs[i] = {(rng() % 50) << 40, i};
  std::vector<std::pair<std::uint64_t, std::size_t>> want = pairs;
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  phew::core::radix_sort_by_used_bits(pairs, scratch, [](const auto& p) { return p.first; });
  EXPECT_EQ(pairs, want);
}

// release gives the memory back, where `v = {}` and clear() keep the capacity.
TEST(Release, GivesTheCapacityBack) {
  std::vector<double> v(1000, 1.0);
  v = {};
  EXPECT_GE(v.capacity(), 1000u) << "assigning {} keeps the capacity (why release exists)";
  phew::core::release(v);
  EXPECT_EQ(v.capacity(), 0u);
  phew::core::RawVector<float> raw(500);
  phew::core::release(raw);
  EXPECT_EQ(raw.capacity(), 0u);
}

// After return_big_buffers_to_the_system, a 10 MiB buffer is mapped from the system even once a 20 MiB
// one was freed (glibc alone would have raised its bound to 20 MiB and served it from its heap, where it
// stays resident once freed).
TEST(Memory, BigBuffersAreMappedAfterABiggerOneWasFreed) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's (mallinfo2 does not see it)";
#endif
  phew::core::return_big_buffers_to_the_system();
  const auto mapped = [] { return mallinfo2().hblks; };
  { std::vector<char> big(20u << 20, 1); }
  const std::size_t before = mapped();
  std::vector<char> medium(10u << 20, 1);
  EXPECT_EQ(mapped(), before + 1);
}

// The kernel's flags of the mapping holding `p` (VmFlags in /proc/self/smaps: "hg" advised for huge
// pages, "nh" advised against them).
std::string mapping_flags(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2 && line.find('-') < line.find(' '))
      inside = begin <= at && at < end;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return "";
}

// Big buffers are advised for transparent huge pages once a tool asks (every tool does, first thing),
// not before, not with PHEW_HUGE_PAGES=off, and not the small ones; advise_pages takes it back.
TEST(Memory, BigBuffersAreAdvisedForHugePages) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer's operator new replaces phew's";
#endif
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) GTEST_SKIP() << "a kernel without THP";
  const auto advised = [](const void* p) { return mapping_flags(p).find(" hg") != std::string::npos; };
  // The 2 MiB page inside the buffer that the advice covers.
  const auto inner = [](const std::vector<char>& v) { return v.data() + (4u << 20); };
  phew::core::return_big_buffers_to_the_system();
  {
    std::vector<char> big(16u << 20);
    ASSERT_NE(mapping_flags(inner(big)), "") << "the buffer's mapping in /proc/self/smaps";
    EXPECT_FALSE(advised(inner(big))) << "not before a tool asks";
  }
  ASSERT_EQ(setenv("PHEW_HUGE_PAGES", "off", 1), 0);
  EXPECT_FALSE(phew::core::back_big_buffers_with_huge_pages());
  {
    std::vector<char> big(16u << 20);
    EXPECT_FALSE(advised(inner(big))) << "PHEW_HUGE_PAGES=off";
  }
  ASSERT_EQ(unsetenv("PHEW_HUGE_PAGES"), 0);
  EXPECT_TRUE(phew::core::back_big_buffers_with_huge_pages());
  {
    // It starts on a huge page, so that its first 2 MiB are advised too (not faulted 4 KiB at a time),
    // and free() takes it back as any other.
    std::vector<char> first(16u << 20);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first.data()) % phew::core::kHugePageBytes, 0u);
    EXPECT_TRUE(advised(first.data()));
    // A zeroed PageVector (mapped from the system, not through operator new) is advised as well.
    const auto zeros = phew::core::zeroed_page_vector<double>(2u << 20);
    EXPECT_TRUE(advised(reinterpret_cast<const char*>(zeros.data()) + (8u << 20)));
    EXPECT_EQ(zeros[(2u << 20) - 1], 0.0);
  }
  {
    std::vector<char> big(16u << 20);
    EXPECT_TRUE(advised(inner(big)));
    phew::core::advise_pages(big.data(), big.size(), phew::core::Pages::small);
    EXPECT_FALSE(advised(inner(big)));
    EXPECT_NE(mapping_flags(inner(big)).find(" nh"), std::string::npos);
  }
  {
    std::vector<char> small(1u << 20);
    EXPECT_FALSE(advised(small.data() + (512u << 10))) << "below the bound: glibc's heap, as it was";
  }
  ASSERT_EQ(setenv("PHEW_HUGE_PAGES", "off", 1), 0);
  phew::core::back_big_buffers_with_huge_pages();  // the other tests as they were
  ASSERT_EQ(unsetenv("PHEW_HUGE_PAGES"), 0);
}

// Blocks mapped from the system start on a huge page whatever their length (Linux aligns only lengths of
// whole huge pages, and only from 6.7 on), are zeros, and go back whole; so does a zeroed PageVector's.
TEST(Memory, MappedBlocksStartOnAHugePage) {
  for (const std::size_t bytes :
       {std::size_t{1} << 20, (std::size_t{3} << 20) + 4096, (std::size_t{5} << 20) + 7, std::size_t{8} << 20}) {
    for (int round = 0; round < 3; ++round) {
      auto* p = static_cast<unsigned char*>(phew::core::map_aligned_pages(bytes));
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % phew::core::kHugePageBytes, 0u) << bytes << " bytes";
      EXPECT_EQ(p[0], 0);
      EXPECT_EQ(p[bytes - 1], 0);
      p[0] = 1;
      p[bytes - 1] = 1;
      phew::core::unmap_pages(p, bytes);
      void* q = phew::core::map_pages(bytes);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % phew::core::kHugePageBytes, 0u) << bytes << " bytes, advised";
      phew::core::unmap_pages(q, bytes);
    }
  }
  const auto zeros = phew::core::zeroed_page_vector<double>((std::size_t{3} << 17) + 5);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(zeros.data()) % phew::core::kHugePageBytes, 0u);
  EXPECT_EQ(zeros.back(), 0.0);
}

// A BlockList keeps its values in order across its blocks, joins them onto what a vector holds, and is
// empty after; its blocks are advised for huge pages as the big buffers are.
TEST(BlockList, JoinsItsBlocksInOrder) {
  using Value = std::array<std::uint64_t, 11>;  // 88 B, a member's size: blocks that do not divide evenly
  using List = phew::core::BlockList<Value>;
  const std::size_t n = 2 * List::kPerBlock + 17;
  const auto value = [](std::size_t i) { return Value{i, 3 * i + 1, 0, 0, 0, 0, 0, 0, 0, 0, ~i}; };
  ASSERT_EQ(unsetenv("PHEW_HUGE_PAGES"), 0);
  const bool huge = phew::core::back_big_buffers_with_huge_pages();
  List list;
  for (std::size_t i = 0; i < n; ++i) list.push_back(value(i));
  ASSERT_EQ(list.size(), n);
  EXPECT_EQ(list[List::kPerBlock], value(List::kPerBlock));
  if (huge && std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    EXPECT_NE(mapping_flags(&list[List::kPerBlock]).find(" hg"), std::string::npos) << "the second block advised";
  }
  ASSERT_EQ(setenv("PHEW_HUGE_PAGES", "off", 1), 0);
  phew::core::back_big_buffers_with_huge_pages();  // the other tests as they were
  ASSERT_EQ(unsetenv("PHEW_HUGE_PAGES"), 0);
  std::vector<Value> out{value(n)};
  list.move_into(out);
  EXPECT_EQ(list.size(), 0u);
  ASSERT_EQ(out.size(), n + 1);
  EXPECT_EQ(out[0], value(n));
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i + 1], value(i)) << i;
  list.push_back(value(1));  // usable again
  EXPECT_EQ(list[0], value(1));
}

// ... and a few-MiB buffer freed at the heap's top stays in the heap for the next one (setting the mmap
// bound had left glibc's trim bound at 128 KiB: the top given back and faulted in again each time).
TEST(Memory, FewMibBuffersStayInTheHeapOnceFreed) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's (mallinfo2 does not see it)";
#endif
  phew::core::return_big_buffers_to_the_system();
  const auto heap = [] { return mallinfo2().arena; };
  std::size_t held = 0;
  {
    std::vector<char> few(4u << 20, 1);
    held = heap();
  }
  EXPECT_EQ(heap(), held);
}
