#include <phew/dtfe/huge_pages.hpp>

#include <cstdlib>
#include <sys/mman.h>

namespace phew::dtfe {

namespace {
constexpr std::size_t kHuge = std::size_t{2} << 20;
}

void* allocate_huge(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes < kHuge) {
    void* p = std::malloc(bytes);
    if (!p) throw std::bad_alloc();
    return p;
  }
  const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, rounded);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without THP it is ignored
#endif
  return p;
}

void free_huge(void* p) noexcept { std::free(p); }

}  // namespace phew::dtfe
