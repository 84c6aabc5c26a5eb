// Values appended in blocks of 4 MiB mapped from the system, for a buffer whose final size is learnt
// only at its end (a rank's members, found a chunk of particles at a time): nothing is moved while it
// grows, no capacity is held beyond the last block, and the blocks are advised for transparent huge pages
// as the big buffers are (core::back_big_buffers_with_huge_pages), so that filling it costs two page
// faults per block instead of 1024. Joined into one vector at the end, each block given back once copied:
// the two are held whole at once for one block only.
#pragma once

#include <phew/core/memory.hpp>

#include <cstddef>
#include <type_traits>
#include <algorithm>
#include <vector>

namespace phew::core {

template <typename T>
class BlockList {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  // Two huge pages: a multiple of 2 MiB, so the kernel aligns each block's mapping to them.
  static constexpr std::size_t kBlockBytes = std::size_t{4} << 20;
  static constexpr std::size_t kPerBlock = kBlockBytes / sizeof(T);

  BlockList() = default;
  ~BlockList() { clear(); }
  BlockList(const BlockList&) = delete;
  BlockList& operator=(const BlockList&) = delete;

  std::size_t size() const { return size_; }
  const T& operator[](std::size_t i) const { return blocks_[i / kPerBlock][i % kPerBlock]; }

  void push_back(const T& value) {
    if (size_ == blocks_.size() * kPerBlock) add_block();
    blocks_.back()[size_ % kPerBlock] = value;
    ++size_;
  }

  // The values in order, appended to `out`; the list is left empty, each block given back once copied.
  void move_into(std::vector<T>& out) {
    out.reserve(out.size() + size_);
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      const std::size_t n = std::min(kPerBlock, size_ - b * kPerBlock);
      out.insert(out.end(), blocks_[b], blocks_[b] + n);
      unmap(blocks_[b]);
      blocks_[b] = nullptr;
    }
    blocks_.clear();
    size_ = 0;
  }

  void clear() noexcept {
    for (T* b : blocks_)
      if (b != nullptr) unmap(b);
    blocks_.clear();
    size_ = 0;
  }

 private:
  void add_block() {
    void* p = map_pages(kBlockBytes);
    try {
      blocks_.push_back(static_cast<T*>(p));
    } catch (...) {
      unmap_pages(p, kBlockBytes);
      throw;
    }
  }
  static void unmap(T* b) noexcept { unmap_pages(b, kBlockBytes); }

  std::vector<T*> blocks_;
  std::size_t size_ = 0;
};

}  // namespace phew::core
