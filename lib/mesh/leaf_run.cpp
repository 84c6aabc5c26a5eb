#include <phew/mesh/leaf_run.hpp>

#include <phew/core/error.hpp>

#include <algorithm>

namespace phew::mesh {
namespace {

// Bits per axis of the cube of side a power of two that holds the grid: the curve's octree's depth.
int curve_bits(const std::array<std::int64_t, 3>& shape) {
  int bits = 0;
  while ((std::int64_t{1} << bits) < std::max({shape[0], shape[1], shape[2]})) ++bits;
  return bits;
}

bool code_inside(std::uint64_t code, const std::array<std::int64_t, 3>& shape) {
  return static_cast<std::int64_t>(gather_bits_3(code >> 2)) < shape[0] &&
         static_cast<std::int64_t>(gather_bits_3(code >> 1)) < shape[1] &&
         static_cast<std::int64_t>(gather_bits_3(code)) < shape[2];
}

// The first code inside the grid in the subtree of node `prefix` at depth `depth` of the curve's octree,
// not below `code` while `bounded` (the node lies on `code`'s own path). A subtree whose lowest corner
// lies outside lies wholly outside (its cells' indices are not below the corner's on any axis); one
// whose corner lies inside holds that corner's cell, its first code: only `code`'s path can turn back.
std::uint64_t first_inside(std::uint64_t prefix, int depth, bool bounded, std::uint64_t code, int bits,
                           const std::array<std::int64_t, 3>& shape) {
  if (depth == bits) return prefix;
  const int shift = 3 * (bits - depth - 1);
  const int start = bounded ? static_cast<int>((code >> shift) & 7) : 0;
  for (int o = start; o < 8; ++o) {
    const std::uint64_t child = prefix << 3 | static_cast<std::uint64_t>(o);
    if (!code_inside(child << shift, shape)) continue;
    const std::uint64_t found = first_inside(child, depth + 1, bounded && o == start, code, bits, shape);
    if (found != kNoCode) return found;
  }
  return kNoCode;
}

}  // namespace

std::uint64_t next_code_inside(std::uint64_t code, const std::array<std::int64_t, 3>& shape) {
  const int bits = curve_bits(shape);
  if (code >= (std::uint64_t{1} << (3 * bits))) return kNoCode;
  if (code_inside(code, shape)) return code;  // every code of a cube of side a power of two
  return first_inside(0, 0, true, code, bits, shape);
}

LeafKeyCursor::LeafKeyCursor(const grid::GridGeometry& coarse, int levels, const LeafRun& run)
    : shape_(coarse.shape), levels_(levels), run_(run), code_(run.first_key >> 4) {}

std::uint64_t LeafKeyCursor::next() {
  if (at_ >= run_.size() || code_ == kNoCode)
    throw core::Error::internal("leaf run: leaf {} of {} lies past the grid's last coarse cell", at_, run_.size());
  const int level = run_.level[at_];
  const std::uint64_t key = code_ << 4 | static_cast<std::uint64_t>(level);
  const std::uint64_t span = std::uint64_t{1} << (3 * (levels_ - level));
  if (level < 0 || level > levels_ || (code_ & (span - 1)) != 0 || (at_ == 0 && key != run_.first_key))
    throw core::Error::internal("leaf run: leaf {} (level {}) does not start where the leaf before it ends", at_,
                                level);
  ++at_;
  code_ += span;
  const int coarse_shift = 3 * levels_;
  if ((code_ & ((std::uint64_t{1} << coarse_shift) - 1)) == 0) {  // past the end of a coarse cell
    const std::uint64_t coarse = next_code_inside(code_ >> coarse_shift, shape_);
    code_ = coarse == kNoCode ? kNoCode : coarse << coarse_shift;
  }
  return key;
}

}  // namespace phew::mesh
