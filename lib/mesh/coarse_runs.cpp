#include <phew/mesh/coarse_runs.hpp>

#include <phew/core/error.hpp>
#include <phew/mesh/cell_space.hpp>

#include <algorithm>
#include <bit>

namespace phew::mesh {
namespace {

// Bits per axis of the coarse grid's Morton codes: every code is below 2^(3 bits).
int axis_bits(const grid::GridGeometry& coarse) {
  const std::int64_t widest = std::max({coarse.shape[0], coarse.shape[1], coarse.shape[2]});
  return static_cast<int>(std::bit_width(static_cast<std::uint64_t>(widest - 1)));
}

// Calls f(first code, k) for the aligned blocks of 8^k codes (cubes of 2^k cells per axis) that make up
// the codes [a, b), in order: a run of the curve as at most 14 blocks per bit of the codes.
template <typename F>
void for_each_aligned_block(std::uint64_t a, std::uint64_t b, int bits, F&& f) {
  while (a < b) {
    int k = 0;
    while (k < bits) {
      const std::uint64_t size = std::uint64_t{1} << (3 * (k + 1));
      if ((a & (size - 1)) != 0 || a + size > b) break;
      ++k;
    }
    f(a, k);
    a += std::uint64_t{1} << (3 * k);
  }
}

// The cells [lo, hi) of one axis of n cells, wrapped when periodic (each once) or clipped when not.
std::vector<std::int64_t> axis_cells(std::int64_t lo, std::int64_t hi, std::int64_t n, bool periodic) {
  std::vector<std::int64_t> out;
  if (periodic) {
    if (hi - lo >= n) lo = 0, hi = n;
    for (std::int64_t v = lo; v < hi; ++v) out.push_back(((v % n) + n) % n);
  } else {
    for (std::int64_t v = std::max<std::int64_t>(lo, 0); v < std::min(hi, n); ++v) out.push_back(v);
  }
  return out;
}

}  // namespace

CoarseRuns::CoarseRuns(const grid::GridGeometry& coarse, int levels, std::vector<std::int64_t> cuts)
    : coarse_(coarse), levels_(levels), cut_(std::move(cuts)) {
  if (cut_.size() < 2 || !std::is_sorted(cut_.begin(), cut_.end()))
    throw core::Error::internal("coarse runs: {} cuts, not ascending", cut_.size());
}

CoarseRuns CoarseRuns::by_particles(const grid::GridGeometry& coarse, int levels, std::span<const std::int64_t> cells,
                                    const mpi::Comm& comm) {
  // One rank runs the whole curve: no counts to cut it by (they cost a pass over every particle).
  if (comm.size() == 1) return CoarseRuns(coarse, levels, CellSpace::octree(coarse, levels).rank_cuts(1, 0, {}));
  // Particles per aligned block of the curve (a coarse cell up to 128^3 coarse cells), summed over ranks.
  const int bits = axis_bits(coarse);
  const int shift = 3 * std::max(0, bits - 7);
  std::vector<std::uint64_t> count((std::uint64_t{1} << (3 * bits)) >> shift, 0);
  for (const std::int64_t c : cells)
    if (c >= 0) ++count[coarse_code(coarse, c) >> shift];
  comm.sum_each(std::span<std::uint64_t>(count));
  std::uint64_t rows = 0;
  for (auto& c : count) {  // inclusive prefix sums: the particles up to each block
    rows += c;
    c = rows;
  }
  // The row-th particle along the curve lies in the first block whose prefix exceeds it.
  const int key_shift = 3 * levels + 4;
  const auto key_at = [&](std::uint64_t row) {
    const auto block = static_cast<std::uint64_t>(std::upper_bound(count.begin(), count.end(), row) - count.begin());
    return (block << shift) << key_shift;
  };
  return CoarseRuns(coarse, levels, CellSpace::octree(coarse, levels).rank_cuts(comm.size(), rows, key_at));
}

int CoarseRuns::owner(std::int64_t coarse_cell) const {
  const auto key = static_cast<std::int64_t>(coarse_code(coarse_, coarse_cell) << (3 * levels_ + 4));
  return CellSpace::owner(cut_, key);
}

CoarseRuns::RanksNear CoarseRuns::ranks_near(std::int64_t margin) const {
  // Each rank's run as aligned cubes of coarse cells, each grown by the margin: a cell lies within the
  // margin of the run when one of the grown cubes holds it. Two passes over the grown cubes, rank by
  // rank (so each cell's ranks come out ascending, and a rank met again in the same cell is skipped):
  // count, then fill.
  const int bits = axis_bits(coarse_);
  const std::uint64_t codes_end = std::uint64_t{1} << (3 * bits);
  const int key_shift = 3 * levels_ + 4;
  const auto cells = static_cast<std::size_t>(coarse_.cells());
  RanksNear out;
  out.start.assign(cells + 1, 0);
  std::vector<std::int32_t> last(cells, -1);
  const auto for_each_cell_near = [&](int r, auto&& f) {
    const std::uint64_t a = std::min(codes_end, static_cast<std::uint64_t>(first_key(r)) >> key_shift);
    const std::uint64_t b = std::min(codes_end, static_cast<std::uint64_t>(end_key(r)) >> key_shift);
    for_each_aligned_block(a, b, bits, [&](std::uint64_t code, int k) {
      const std::int64_t corner[3] = {static_cast<std::int64_t>(gather_bits_3(code >> 2)),
                                      static_cast<std::int64_t>(gather_bits_3(code >> 1)),
                                      static_cast<std::int64_t>(gather_bits_3(code))};
      std::vector<std::int64_t> axis[3];
      for (std::size_t d = 0; d < 3; ++d) {
        const std::int64_t n = coarse_.shape[d];
        const std::int64_t hi = std::min(corner[d] + (std::int64_t{1} << k), n);
        if (corner[d] >= hi) return;  // a block of codes beyond the grid (shapes other than 2^b)
        axis[d] = axis_cells(corner[d] - margin, hi + margin, n, coarse_.periodic);
      }
      for (const std::int64_t i : axis[0])
        for (const std::int64_t j : axis[1])
          for (const std::int64_t l : axis[2]) {
            const auto c = static_cast<std::size_t>(grid::linear_index(i, j, l, coarse_.shape[1], coarse_.shape[2]));
            if (last[c] == r) continue;
            last[c] = r;
            f(c);
          }
    });
  };
  for (int r = 0; r < ranks(); ++r) for_each_cell_near(r, [&](std::size_t c) { ++out.start[c + 1]; });
  for (std::size_t c = 0; c < cells; ++c) out.start[c + 1] += out.start[c];
  out.rank.resize(out.start.back());
  std::fill(last.begin(), last.end(), -1);
  // start[c] is cell c's cursor while filling, and ends at cell c + 1's start: shifted back after.
  for (int r = 0; r < ranks(); ++r) for_each_cell_near(r, [&](std::size_t c) { out.rank[out.start[c]++] = r; });
  for (std::size_t c = cells; c > 0; --c) out.start[c] = out.start[c - 1];
  out.start[0] = 0;
  return out;
}

}  // namespace phew::mesh
