#include <phew/mesh/code_dilation.hpp>

#include <phew/core/raw_vector.hpp>
#include <phew/core/radix_sort.hpp>
#include <phew/grid/cell_set.hpp>
#include <phew/mesh/cell_key.hpp>

#include <algorithm>

namespace phew::mesh {
namespace {

// Steps of one cell along axis d on the Morton codes themselves: the axis' bits of a code are every
// third one, so +1 is an addition with the other bits set (the carry runs through them) and -1 a
// subtraction with them cleared. The lattice's ends compare the axis' bits with those of index 0 and
// n - 1; a periodic lattice wraps, an open one ends.
class AxisSteps {
 public:
  AxisSteps(const grid::GridGeometry& coarse, int level, std::size_t d)
      : axis_(spread_bits_3(0xFFFFF) << (2 - d)),
        others_(~axis_),
        last_(spread_bits_3(static_cast<std::uint64_t>((coarse.shape[d] << level) - 1)) << (2 - d)),
        periodic_(coarse.periodic) {}

  // Calls f(code) for the cells 1..r up and 1..r down from c along the axis (some twice on a periodic
  // lattice of at most 2r cells along it).
  template <typename F>
  void for_each_within(std::uint64_t c, int r, F&& f) const {
    std::uint64_t up = c, down = c;
    for (int k = 1; k <= r; ++k) {
      if ((up & axis_) != last_)
        up = (((up | others_) + 1) & axis_) | (up & others_);
      else if (periodic_)
        up &= others_;  // index 0
      else
        break;
      f(up);
    }
    for (int k = 1; k <= r; ++k) {
      if ((down & axis_) != 0)
        down = (((down & axis_) - 1) & axis_) | (down & others_);
      else if (periodic_)
        down = (down & others_) | last_;  // index n - 1
      else
        break;
      f(down);
    }
  }

 private:
  std::uint64_t axis_, others_, last_;
  bool periodic_;
};

// The cube grown one axis at a time, each axis' copies sorted by radix: for a few cells on a large
// lattice.
std::vector<std::uint64_t> dilate_sorted(const grid::GridGeometry& coarse, int level, std::vector<std::uint64_t> codes,
                                         int r) {
  std::vector<std::uint64_t> scratch;
  for (std::size_t d = 0; d < 3; ++d) {
    const AxisSteps steps(coarse, level, d);
    std::vector<std::uint64_t> grown;
    grown.reserve(codes.size() * static_cast<std::size_t>(2 * r + 1));
    for (const std::uint64_t c : codes) {
      grown.push_back(c);
      steps.for_each_within(c, r, [&](std::uint64_t n) { grown.push_back(n); });
    }
    core::release(codes);  // room for the sort's scratch
    core::radix_sort_values(grown, scratch);
    grown.erase(std::unique(grown.begin(), grown.end()), grown.end());
    grown.shrink_to_fit();  // the room reserved for every copy: held until the tree is built otherwise
    codes = std::move(grown);
  }
  return codes;
}

// The same on a bitmap over every code of the lattice (grid::CellSet, slot = code), in code order: no
// sort, and the set comes out sorted. For many cells on a small lattice (the coarse levels, where most
// cells are flagged).
std::vector<std::uint64_t> dilate_bitmap(const grid::GridGeometry& coarse, int level, std::vector<std::uint64_t> codes,
                                         int r, std::size_t bound) {
  grid::CellSet in(bound);
  for (const std::uint64_t c : codes) in.insert(c);
  core::release(codes);  // the bitmaps hold them now
  for (std::size_t d = 0; d < 3; ++d) {
    const AxisSteps steps(coarse, level, d);
    in.finish();
    grid::CellSet out = in;
    in.for_each(0, bound, [&](std::size_t c, std::size_t) {
      steps.for_each_within(c, r, [&](std::uint64_t n) { out.insert(n); });
    });
    in = std::move(out);
  }
  in.finish();
  std::vector<std::uint64_t> grown;
  grown.reserve(in.size());
  in.for_each(0, bound, [&](std::size_t c, std::size_t) { grown.push_back(c); });
  return grown;
}

}  // namespace

std::vector<std::uint64_t> dilate_codes(const grid::GridGeometry& coarse, int level, std::vector<std::uint64_t> codes,
                                        int r) {
  if (r <= 0 || codes.empty()) return codes;
  // The codes lie below that of the lattice's last cell + 1 (more than its cells when a side is not a
  // power of two). Two bitmaps against the sorted path's copies and scratch, 2 (2r + 1) words a cell.
  const std::uint64_t bound = morton3(static_cast<std::uint64_t>((coarse.shape[0] << level) - 1),
                                      static_cast<std::uint64_t>((coarse.shape[1] << level) - 1),
                                      static_cast<std::uint64_t>((coarse.shape[2] << level) - 1)) +
                              1;
  if ((bound + 63) / 64 <= codes.size() * static_cast<std::uint64_t>(2 * r + 1))
    return dilate_bitmap(coarse, level, std::move(codes), r, static_cast<std::size_t>(bound));
  return dilate_sorted(coarse, level, std::move(codes), r);
}

}  // namespace phew::mesh
