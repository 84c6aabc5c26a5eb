#include <phew/mesh/cell_finder.hpp>

#include <phew/core/error.hpp>
#include <phew/mesh/cell_key.hpp>

#include <algorithm>
#include <limits>

namespace phew::mesh {
namespace {
// About this many cells a bucket on average: the search within one stays in a cache line or two, and the
// directory costs half a byte a cell.
constexpr std::uint64_t kCellsPerBucket = 8;
}  // namespace

CellFinder::CellFinder(const CellSpace& space, std::span<const std::int64_t> cells) : space_(&space), cells_(cells) {
  if (cells.size() >= std::numeric_limits<std::uint32_t>::max())
    throw core::Error::internal("cell finder: {} cells on one rank", cells.size());
  if (cells.empty()) return;
  low_ = cells.front();
  const auto span = static_cast<std::uint64_t>(cells.back() - low_);
  const std::uint64_t buckets_wanted = std::max<std::uint64_t>(1, cells.size() / kCellsPerBucket);
  while ((span >> shift_) >= buckets_wanted) ++shift_;
  const std::size_t buckets = static_cast<std::size_t>(span >> shift_) + 1;
  first_.assign(buckets + 1, static_cast<std::uint32_t>(cells.size()));
  // Filled from the end: a bucket without cells starts where the next one does.
  for (std::size_t k = cells.size(); k-- > 0;)
    first_[static_cast<std::size_t>(static_cast<std::uint64_t>(cells[k] - low_) >> shift_)] =
        static_cast<std::uint32_t>(k);
  for (std::size_t b = buckets; b-- > 0;) first_[b] = std::min(first_[b], first_[b + 1]);
}

std::size_t CellFinder::find(std::int64_t point) const {
  const std::size_t n = cells_.size();
  if (point < 0 || n == 0) return n;
  if (point < low_) return n;  // before every cell: none holds it (a leaf's key is its first point)
  // Cells of earlier buckets are below the point and those of later ones above it, so each search of
  // the whole array ends inside [begin, end).
  const std::uint64_t b = static_cast<std::uint64_t>(point - low_) >> shift_;
  const auto begin = cells_.begin() + (b + 1 < first_.size() ? first_[b] : n);
  const auto end = cells_.begin() + (b + 1 < first_.size() ? first_[b + 1] : n);
  if (!space_->adaptive()) {
    const auto it = std::lower_bound(begin, end, point);
    return it != cells_.end() && *it == point ? static_cast<std::size_t>(it - cells_.begin()) : n;
  }
  // The last cell whose key is not after the point: the only one that can hold it (leaves do not overlap).
  const auto it = std::upper_bound(begin, end, point);
  const auto at = static_cast<std::size_t>(it - cells_.begin()) - 1;  // point >= low_: it is past the first
  return key_contains(static_cast<std::uint64_t>(cells_[at]), static_cast<std::uint64_t>(point), space_->levels()) ? at
                                                                                                                   : n;
}

}  // namespace phew::mesh
