// The canonical key of an octree cell: its place on the Morton curve of the finest level, then its
// level. Sorting by key lists a coarse cell's subtree contiguously, parents before their children, and
// gives the tie-break every rank agrees on (docs/formats.md, "Canonical IDs and ties").
//
// A cell of level l has integer indices (i, j, k) on the level-l lattice, which has shape * 2^l cells
// per axis (level 0 is the coarse grid, whatever its shape). Its lower corner on the finest lattice
// (level `levels`) is (i, j, k) * 2^(levels - l); the key interleaves those three numbers (below 2^19) and
// appends the level in the low 4 bits:
//
//     key = morton(i << (levels - l), j << (levels - l), k << (levels - l)) << 4 | l
//
// so the finest lattice may have up to 2^19 cells per axis and a tree up to 15 levels above the coarse grid.
// 3 * 19 + 4 bits: a key is also a positive int64, the watershed's global cell index (canonical ties).
#pragma once

#include <phew/core/morton.hpp>

#include <array>
#include <cstdint>

namespace phew::mesh {

inline constexpr int kMaxLevels = 15;       // the level fits in 4 bits
inline constexpr int kFinestAxisBits = 19;  // cells per axis of the finest lattice <= 2^19

using core::gather_bits_3;  // core/morton.hpp
using core::spread_bits_3;

// Morton order of a lattice point (x the most significant axis, as the grid's C order has it).
constexpr std::uint64_t morton3(std::uint64_t i, std::uint64_t j, std::uint64_t k) {
  return spread_bits_3(i) << 2 | spread_bits_3(j) << 1 | spread_bits_3(k);
}

using Index3 = std::array<std::int64_t, 3>;

// A cell: its level and its indices on that level's lattice.
struct Cell {
  int level = 0;
  Index3 index{0, 0, 0};
  bool operator==(const Cell&) const = default;
};

constexpr Cell parent(const Cell& c) { return {c.level - 1, {c.index[0] >> 1, c.index[1] >> 1, c.index[2] >> 1}}; }

// Child `octant` (bits x<<2 | y<<1 | z, the Morton order of the eight) of a cell.
constexpr Cell child(const Cell& c, int octant) {
  return {c.level + 1,
          {2 * c.index[0] + (octant >> 2 & 1), 2 * c.index[1] + (octant >> 1 & 1), 2 * c.index[2] + (octant & 1)}};
}

// Where in its parent, as child() numbers the octants, lies the ancestor `shift` levels above a cell with
// these indices (shift 0: the cell itself): bit `shift` of each index.
constexpr int octant_at(const Index3& index, int shift) {
  return static_cast<int>((index[0] >> shift & 1) << 2 | (index[1] >> shift & 1) << 1 | (index[2] >> shift & 1));
}

// The key of a cell of a tree with `levels` levels above the coarse grid.
constexpr std::uint64_t cell_key(const Cell& c, int levels) {
  const int shift = levels - c.level;
  return morton3(static_cast<std::uint64_t>(c.index[0]) << shift, static_cast<std::uint64_t>(c.index[1]) << shift,
                 static_cast<std::uint64_t>(c.index[2]) << shift)
             << 4 |
         static_cast<std::uint64_t>(c.level);
}

// The same from the cell's Morton code on its own level's lattice (a child's code is its parent's << 3
// | octant): the code spread to the finest lattice, then the level.
constexpr std::uint64_t cell_key_of_code(std::uint64_t code, int level, int levels) {
  return code << (3 * (levels - level)) << 4 | static_cast<std::uint64_t>(level);
}

constexpr Cell cell_of_key(std::uint64_t key, int levels) {
  const int level = static_cast<int>(key & 0xF);
  const std::uint64_t m = key >> 4;
  const int shift = levels - level;
  return {level,
          {static_cast<std::int64_t>(gather_bits_3(m >> 2) >> shift),
           static_cast<std::int64_t>(gather_bits_3(m >> 1) >> shift),
           static_cast<std::int64_t>(gather_bits_3(m) >> shift)}};
}

// The first key of the subtree of the coarse cell a key lies in: a coarse cell is an aligned block of
// 2^levels finest cells per axis, so its keys are one contiguous run, starting here.
constexpr std::uint64_t subtree_begin(std::uint64_t key, int levels) {
  return ((key >> 4) >> (3 * levels)) << (3 * levels) << 4;
}

// A point of the finest lattice as a key that sorts after every cell whose lower corner it is (level
// bits 0xF): the cell holding the point is the last cell at or before it that contains it.
constexpr std::uint64_t point_key(std::int64_t i, std::int64_t j, std::int64_t k) {
  return morton3(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j), static_cast<std::uint64_t>(k)) << 4 |
         0xF;
}

// Whether the cell of `key` contains the finest-lattice point of `point` (point_key): the cell covers
// 8^(levels - level) consecutive Morton codes of the finest lattice from its corner.
constexpr bool key_contains(std::uint64_t key, std::uint64_t point, int levels) {
  const std::uint64_t corner = key >> 4, p = point >> 4;
  const int level = static_cast<int>(key & 0xF);
  return corner <= p && p - corner < (std::uint64_t{1} << (3 * (levels - level)));
}

}  // namespace phew::mesh
