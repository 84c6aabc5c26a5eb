// The touching leaves of some leaves of a balanced octree, held as their sorted keys (the watershed's
// test leaves: octree_mesh.hpp), found an oct at a time, as RAMSES finds a cell's neighbours through its
// father's: the leaves of one oct share the 27 cells of their parent's level around the oct, so those
// are searched once, laid out on the 4 x 4 x 4 cells of the leaves' level around the oct, and each of
// the oct's leaves reads its 26 directions off that block by index.
//
// The answers are BasicOctreeMesh::neighbours_of's, in its order (the 26 directions, then octants),
// which stays for the leaves this cannot answer (the coarse grid's, and lattices of at most two cells
// along a periodic axis, where two of the 26 may wrap onto one cell). Figures: bench/README.md, "The
// test leaves' neighbours an oct at a time".
#pragma once

#include <phew/grid/geometry.hpp>

#include <array>
#include <cstdint>
#include <span>

namespace phew::mesh {

// The first of the sorted keys at or after `target` (keys.size() when none), searched outward from
// `from`: keys near each other on the Morton curve mostly lie near each other, so a galloping search
// touches a few cache lines where a binary search over all of them touches many.
std::size_t first_at_or_after(std::span<const std::uint64_t> keys, std::size_t from, std::uint64_t target);

class OctNeighbours {
 public:
  // `keys`: the leaves' keys (cell_key.hpp), sorted, fewer than 2^32 - 1; read while this lives. One
  // per thread (a cache).
  OctNeighbours(const grid::GridGeometry& coarse, int levels, std::span<const std::uint64_t> keys);

  // Whether the leaf in slot s is one this answers (see above).
  bool handles(std::size_t s) const;
  // The touching leaves of the leaf in slot s among the keys, written to `out` (room for 56); their
  // number. Only for a leaf handles() accepts.
  std::size_t neighbours(std::size_t s, std::uint32_t* out);

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  // The 64 cells of the leaves' level around one oct (x * 16 + y * 4 + z, from one cell below the oct's
  // corner): on each, a leaf of that level, or the leaf one level up covering it, or (split) those of
  // its children that are leaves.
  struct Block {
    std::uint64_t parent = ~std::uint64_t{0};  // the key of the oct's parent: whose block this is
    std::uint64_t used = 0;                    // when last read (the cache keeps the latest)
    std::uint64_t split = 0;                   // bit m: cell m is split
    std::array<std::uint32_t, 64> leaf;
    std::array<std::uint32_t, 64> coarser;
    std::array<std::array<std::uint32_t, 8>, 64> children;
  };

  grid::GridGeometry coarse_;
  int levels_;
  std::span<const std::uint64_t> keys_;
  std::size_t hint_ = 0;  // where the last search ended: the next starts there
  std::uint64_t clock_ = 0;
  // The octs of a few parents: an oct's leaves come one after another in key order, but between them
  // come the finer leaves of its split cells, which belong to other octs.
  std::array<Block, 4> cache_;

  std::size_t search_from_hint(std::uint64_t target);  // first_at_or_after from hint_, which it moves
  const Block& block(std::uint64_t parent_key, int level);
  void fill(Block& b, const std::array<std::int64_t, 3>& parent_index, int level);
};

}  // namespace phew::mesh
