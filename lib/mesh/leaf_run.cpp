#include <phew/mesh/leaf_run.hpp>

#include <phew/core/error.hpp>

#include <algorithm>
#include <array>
#include <bit>

namespace phew::mesh {
namespace {

// Bits per axis of the cube of side a power of two that holds the grid: the curve's octree's depth.
int curve_bits(const std::array<std::int64_t, 3>& shape) {
  return static_cast<int>(std::bit_width(static_cast<std::uint64_t>(std::max({shape[0], shape[1], shape[2]}) - 1)));
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
  // Every code of a cube of side a power of two lies inside (the usual coarse grid: no bits gathered).
  const auto side = std::int64_t{1} << bits;
  if ((shape[0] == side && shape[1] == side && shape[2] == side) || code_inside(code, shape)) return code;
  return first_inside(0, 0, true, code, bits, shape);
}

LeafKeyCursor::LeafKeyCursor(const grid::GridGeometry& coarse, int levels, const LeafRun& run)
    : shape_(coarse.shape), levels_(levels), run_(run), code_(run.first_key >> 4) {}

void LeafKeyCursor::next(std::span<std::uint64_t> out) {
  // The state and the run in locals, and each level's span of codes tabled: one tight loop over the
  // batch, which the writer runs on one thread for every leaf.
  std::uint64_t at = at_, code = code_;
  const std::uint64_t size = run_.size();
  const std::int8_t* const levels = run_.level.data();
  const auto top = static_cast<unsigned>(levels_);
  if (top > static_cast<unsigned>(kMaxLevels)) throw core::Error::internal("leaf run: {} levels", levels_);
  std::array<std::uint64_t, kMaxLevels + 1> span{};  // codes a leaf of level l covers: 8^(levels - l)
  for (unsigned l = 0; l <= top; ++l) span[l] = std::uint64_t{1} << (3 * (top - l));
  const std::uint64_t coarse_end = span[0];  // codes per coarse cell
  for (std::uint64_t& key : out) {
    if (at >= size || code == kNoCode)
      throw core::Error::internal("leaf run: leaf {} of {} lies past the grid's last coarse cell", at, size);
    const auto level = static_cast<unsigned>(levels[at]);  // a negative level wraps above `top`
    key = code << 4 | level;
    if (level > top || (code & (span[level] - 1)) != 0 || (at == 0 && key != run_.first_key))
      throw core::Error::internal("leaf run: leaf {} (level {}) does not start where the leaf before it ends", at,
                                  static_cast<int>(levels[at]));
    ++at;
    code += span[level];
    if ((code & (coarse_end - 1)) == 0) {  // past the end of a coarse cell: the next one inside the grid
      const std::uint64_t coarse = next_code_inside(code / coarse_end, shape_);
      code = coarse == kNoCode ? kNoCode : coarse * coarse_end;
    }
  }
  at_ = at;
  code_ = code;
}

}  // namespace phew::mesh
