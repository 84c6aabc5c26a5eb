#include <phew/dtfe/cgal_arena.hpp>

#include <phew/dtfe/huge_pages.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <vector>

namespace phew::dtfe::detail {
namespace {

constexpr std::size_t kChunk = std::size_t{64} << 20;
constexpr std::size_t kAlign = 64;  // a cache line: CGAL's cells are read by several threads

struct Chunks {
  std::mutex lock;  // allocations from the slabs' threads (cgal_slabs.cpp)
  bool open = false;
  std::vector<std::pair<char*, char*>> chunks;  // [begin, end), each from allocate_huge
  char* next = nullptr;                         // the free part of the last chunk
  char* end = nullptr;

  bool owns(const void* p) const {
    const auto* c = static_cast<const char*>(p);
    return std::any_of(chunks.begin(), chunks.end(),
                       [&](const auto& r) { return std::less_equal<>()(r.first, c) && std::less<>()(c, r.second); });
  }
};

Chunks& state() {
  static Chunks s;
  return s;
}

std::mutex& arena_lock() {
  static std::mutex m;
  return m;
}

}  // namespace

CgalArena::CgalArena() : one_at_a_time_(arena_lock()) {
  Chunks& s = state();
  const std::lock_guard<std::mutex> g(s.lock);
  s.open = true;
}

CgalArena::~CgalArena() {
  Chunks& s = state();
  const std::lock_guard<std::mutex> g(s.lock);
  for (const auto& r : s.chunks) free_huge(r.first);
  s.chunks.clear();
  s.next = s.end = nullptr;
  s.open = false;
}

void* cgal_allocate(std::size_t bytes) {
  Chunks& s = state();
  const std::lock_guard<std::mutex> g(s.lock);
  if (!s.open) {
    void* p = std::malloc(std::max<std::size_t>(bytes, 1));
    if (!p) throw std::bad_alloc();
    return p;
  }
  bytes = (std::max<std::size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  if (static_cast<std::size_t>(s.end - s.next) < bytes) {
    const std::size_t size = std::max(kChunk, bytes);
    auto* c = static_cast<char*>(allocate_huge(size));
    s.chunks.emplace_back(c, c + size);
    s.next = c, s.end = c + size;
  }
  char* p = s.next;
  s.next += bytes;
  return p;
}

void cgal_deallocate(void* p) noexcept {
  if (!p) return;
  Chunks& s = state();
  const std::lock_guard<std::mutex> g(s.lock);
  if (s.open && s.owns(p)) return;  // given back with the arena
  std::free(p);
}

}  // namespace phew::dtfe::detail
