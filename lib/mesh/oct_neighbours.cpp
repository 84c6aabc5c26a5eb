#include <phew/mesh/oct_neighbours.hpp>

#include <phew/core/error.hpp>
#include <phew/mesh/cell_key.hpp>

#include <algorithm>
#include <bit>

namespace phew::mesh {

std::size_t first_at_or_after(std::span<const std::uint64_t> keys, std::size_t from, std::uint64_t target) {
  const std::size_t n = keys.size();
  if (n == 0) return 0;
  from = std::min(from, n - 1);
  std::size_t lo = 0, hi = 0;  // the answer lies in [lo, hi]: keys[< lo] < target, hi == n or keys[hi] >= target
  std::size_t step = 1;
  if (keys[from] < target) {
    lo = from + 1;
    while (lo + step - 1 < n && keys[lo + step - 1] < target) {
      lo += step;
      step *= 2;
    }
    hi = std::min(lo + step - 1, n);
  } else {
    hi = from;
    while (hi >= step && keys[hi - step] >= target) {
      hi -= step;
      step *= 2;
    }
    lo = hi >= step ? hi - step + 1 : 0;
  }
  // std::lower_bound over [lo, hi), written so that each halving is a conditional move, not a branch
  // that goes either way at random.
  if (lo >= hi) return lo;
  const std::uint64_t* base = keys.data() + lo;
  for (std::size_t len = hi - lo; len > 1;) {
    const std::size_t half = len / 2;
    base = base[half] < target ? base + half : base;
    len -= half;
  }
  return static_cast<std::size_t>(base - keys.data()) + (*base < target ? 1 : 0);
}

OctNeighbours::OctNeighbours(const grid::GridGeometry& coarse, int levels, std::span<const std::uint64_t> keys)
    : coarse_(coarse), levels_(levels), keys_(keys) {
  if (keys.size() >= kNone)
    throw core::Error::internal("oct neighbours: {} leaves do not fit 32-bit slots", keys.size());
}

bool OctNeighbours::handles(std::size_t s) const {
  const int level = static_cast<int>(keys_[s] & 0xF);
  if (level == 0) return false;
  for (std::size_t d = 0; d < 3; ++d)
    if (coarse_.periodic && (coarse_.shape[d] << level) <= 2) return false;
  return true;
}

std::size_t OctNeighbours::search_from_hint(std::uint64_t target) {
  hint_ = mesh::first_at_or_after(keys_, hint_, target);
  return hint_;
}

namespace {

// The 26 directions around a cell of the block, in neighbours_of's order: the step to the cell they
// lead to (x * 16 + y * 4 + z), and the octants of that cell's children that face the cell they come
// from (on its side toward it along every axis the step moves).
struct Direction {
  int step;
  std::uint8_t facing;
};

constexpr std::array<Direction, 26> kDirections = [] {
  std::array<Direction, 26> out{};
  std::size_t n = 0;
  for (int a = -1; a <= 1; ++a)
    for (int e = -1; e <= 1; ++e)
      for (int d = -1; d <= 1; ++d) {
        if (a == 0 && e == 0 && d == 0) continue;
        const int dir[3] = {a, e, d};
        std::uint8_t facing = 0;
        for (int octant = 0; octant < 8; ++octant) {
          const int bit[3] = {octant >> 2 & 1, octant >> 1 & 1, octant & 1};
          bool touches = true;
          for (int q = 0; q < 3; ++q) touches = touches && (dir[q] == 0 || bit[q] == (dir[q] < 0 ? 1 : 0));
          if (touches) facing = static_cast<std::uint8_t>(facing | 1u << octant);
        }
        out[n++] = {a * 16 + e * 4 + d, facing};
      }
  return out;
}();

// The block's cell (x * 16 + y * 4 + z) of the child `octant` of a cell: from the block's cell of the
// child 0.
constexpr std::array<int, 8> kOctantStep{0, 1, 4, 5, 16, 17, 20, 21};

// A cell q of the parent's level around the oct, at offset dq (index 9 (dq_x + 1) + 3 (dq_y + 1) + dq_z + 1):
// the octants of its children that lie in the block (bit o: its upper half along an axis where q lies
// below the oct, its lower half where above, both where level with it), and the block's cell of its
// child 0. Tabled once: fill() asks for 27 per oct.
struct QPlace {
  std::uint8_t inside;
  std::int8_t base;  // -21 ... 21: below the block's cell 0 where q lies below the oct (its child 0 is not in it)
};

constexpr std::array<QPlace, 27> kQPlaces = [] {
  std::array<QPlace, 27> out{};
  for (int i = 0; i < 27; ++i) {
    const int dq[3] = {i / 9 - 1, i / 3 % 3 - 1, i % 3 - 1};
    unsigned inside = 0;
    for (unsigned octant = 0; octant < 8; ++octant) {
      bool in = true;
      for (unsigned k = 0; k < 3; ++k) {
        const unsigned bit = octant >> (2 - k) & 1;
        in = in && !((dq[k] < 0 && bit == 0) || (dq[k] > 0 && bit == 1));
      }
      inside |= (in ? 1u : 0u) << octant;
    }
    out[static_cast<std::size_t>(i)] = {
        static_cast<std::uint8_t>(inside),
        static_cast<std::int8_t>((2 * dq[0] + 1) * 16 + (2 * dq[1] + 1) * 4 + (2 * dq[2] + 1))};
  }
  return out;
}();

// kFirstInQ[o][d]: whether direction d, from the oct's child `o`, is the first of the 26 (in their
// order) to land in its cell of the parent's level. A coarser leaf covers one such cell, and is listed
// where it first comes: this table says where, so that no search of the list so far is needed.
constexpr std::array<std::array<bool, 26>, 8> kFirstInQ = [] {
  std::array<std::array<bool, 26>, 8> out{};
  for (int octant = 0; octant < 8; ++octant) {
    const int own[3] = {1 + (octant >> 2 & 1), 1 + (octant >> 1 & 1), 1 + (octant & 1)};
    bool seen[27] = {};
    int d = 0;
    for (int a = -1; a <= 1; ++a)
      for (int e = -1; e <= 1; ++e)
        for (int f = -1; f <= 1; ++f) {
          if (a == 0 && e == 0 && f == 0) continue;
          const int c[3] = {own[0] + a, own[1] + e, own[2] + f};  // 0 ... 3 along each axis of the block
          const int q = 9 * ((c[0] + 1) / 2) + 3 * ((c[1] + 1) / 2) + (c[2] + 1) / 2;
          out[static_cast<std::size_t>(octant)][static_cast<std::size_t>(d++)] = !seen[q];
          seen[q] = true;
        }
  }
  return out;
}();

constexpr std::uint8_t kNoPlace = 0xFF;

// The 27 cells around a cell p of a lattice (offsets o in {-1, 0, 1} per axis, place 9 (o_x + 1) +
// 3 (o_y + 1) + o_z + 1), by their Morton order, without a sort (whose comparisons went either way at
// random: 12 M of fill()'s 46 M mispredicted branches in cachegrind's count), for p away from the
// lattice's edges, so that each axis holds p - 1, p and p + 1. Two Morton codes compare at the highest
// interleaved bit where they differ. Along an axis, p - 1 and p first differ at bit ctz(p) and p, p + 1
// at bit ctz(~p); one of the two is bit 0. So along each axis the three values are told apart by two
// bits: one at the higher split (p - 1 below it, p + 1 above, p on its side), one at bit 0 (likewise).
// The three axes' bits at 0 are the lowest of the interleaved code, x above y above z; their higher
// splits rank among themselves by 3 h + (2 - axis). So each cell gets a 6-bit rank, and a table of 64
// read in order lists them (kNoPlace elsewhere).
std::array<std::uint8_t, 64> morton_order_of_27(const std::array<std::int64_t, 3>& p) {
  int height[3];
  bool even[3];
  for (std::size_t k = 0; k < 3; ++k) {
    const auto v = static_cast<std::uint64_t>(p[k]);
    even[k] = (v & 1) == 0;
    height[k] = 3 * std::countr_zero(even[k] ? v : ~v) + static_cast<int>(2 - k);
  }
  // bits[k][o]: the rank's bits from axis k at offset o - 1 (p - 1 below both splits, p + 1 above both,
  // p above the one at bit 0 when odd, above the higher when even).
  unsigned bits[3][3];
  for (std::size_t k = 0; k < 3; ++k) {
    unsigned high = 3;
    for (std::size_t j = 0; j < 3; ++j) high += height[j] < height[k] ? 1u : 0u;
    const unsigned high_bit = 1u << high, low_bit = 1u << (2 - k);
    bits[k][0] = 0;
    bits[k][1] = even[k] ? high_bit : low_bit;
    bits[k][2] = high_bit | low_bit;
  }
  std::array<std::uint8_t, 64> order;
  order.fill(kNoPlace);
  for (unsigned x = 0; x < 3; ++x)
    for (unsigned y = 0; y < 3; ++y)
      for (unsigned z = 0; z < 3; ++z)
        order[bits[0][x] | bits[1][y] | bits[2][z]] = static_cast<std::uint8_t>(9 * x + 3 * y + z);
  return order;
}

}  // namespace

std::size_t OctNeighbours::neighbours(std::size_t s, std::uint32_t* const out) {
  const std::uint64_t key = keys_[s], morton = key >> 4;
  const int level = static_cast<int>(key & 0xF);
  const int shift_x = levels_ - level;
  // The parent's key: the leaf's corner with its own octant (and anything finer) cleared.
  const std::uint64_t parent_key =
      (morton >> (3 * (shift_x + 1)) << (3 * (shift_x + 1))) << 4 | static_cast<std::uint64_t>(level - 1);
  const Block& b = block(parent_key, level);
  // The leaf's cell in the block: 1 or 2 along each axis.
  const auto octant = static_cast<std::size_t>(morton >> (3 * shift_x) & 7);
  const int own = 21 + kOctantStep[octant];
  const std::array<bool, 26>& first_in_q = kFirstInQ[octant];
  std::size_t count = 0;
  for (std::size_t d = 0; d < kDirections.size(); ++d) {
    const Direction& dir = kDirections[d];
    const auto m = static_cast<std::size_t>(own + dir.step);
    // A cell holds a leaf of this level, or a coarser one, or neither: never both, so their AND is the
    // one it holds. Written, then kept or not, without a branch (which way went at random: cachegrind
    // counted 24 M mispredicted branches here on the 2.1 M box, 3.6 M after).
    const std::uint32_t leaf = b.leaf[m], coarser = b.coarser[m];
    // A coarser leaf covers up to 7 of the 26: listed once, where it first comes. (Along each axis a
    // leaf reaches the cells of the parent's level on one side of its parent only, so where those either
    // side are one cell, on a periodic lattice of two, it still meets that cell from one place.)
    out[count] = leaf & coarser;
    count += static_cast<std::size_t>((leaf != kNone) | ((coarser != kNone) & first_in_q[d]));
    if (b.split >> m & 1) {
      for (unsigned facing = dir.facing; facing != 0; facing &= facing - 1) {  // the children facing the leaf
        const std::uint32_t k = b.children[m][static_cast<unsigned>(std::countr_zero(facing))];
        if (k != kNone) out[count++] = k;
      }
    }
  }
  return count;
}

const OctNeighbours::Block& OctNeighbours::block(std::uint64_t parent_key, int level) {
  std::size_t at = 0;
  for (std::size_t k = 0; k < cache_.size(); ++k) {
    if (cache_[k].parent == parent_key) {
      cache_[k].used = ++clock_;
      return cache_[k];
    }
    if (cache_[k].used < cache_[at].used) at = k;
  }
  Block& b = cache_[at];
  fill(b, cell_of_key(parent_key, levels_).index, level);
  b.parent = parent_key;
  b.used = ++clock_;
  return b;
}

void OctNeighbours::fill(Block& b, const std::array<std::int64_t, 3>& parent_index, int level) {
  b.leaf.fill(kNone);
  b.coarser.fill(kNone);
  b.split = 0;
  // Corners on the finest lattice, as Morton codes: a cell q of the parent's level spans 8^shift_q
  // codes, a cell x of the leaves' level 8^shift_x, and x's children begin every 8^shift_c.
  // (shift_c is -1 at the finest level, where no key is finer and it is never used.)
  const int shift_q = levels_ - level + 1, shift_x = shift_q - 1, shift_c = shift_x - 1;
  const auto key_of = [](std::uint64_t morton, int l) { return morton << 4 | static_cast<std::uint64_t>(l); };
  // The 27 cells q of the parent's level around the oct (wrapped, or off an open grid left out), in key
  // order, so that one sweep forward through the keys finds them all.
  struct Q {
    std::uint64_t morton;
    std::size_t place;  // in kQPlaces
  };
  std::array<Q, 28> qs;  // one spare: the ordering below writes every candidate and counts the cells only
  std::size_t n_q = 0;
  // Each axis's three coordinates spread once (a Morton code is the OR of its axes' spread bits).
  std::uint64_t spread[3][3];
  std::array<std::uint64_t, 27> morton_at;  // by place
  bool outside[3][3];
  bool interior = true;  // p - 1, p, p + 1 along every axis, neither wrapped nor outside
  for (std::size_t k = 0; k < 3; ++k) {
    const std::int64_t n = coarse_.shape[k] << (level - 1);
    interior = interior && parent_index[k] >= 1 && parent_index[k] + 1 < n;
    for (int o = -1; o <= 1; ++o) {
      std::int64_t i = parent_index[k] + o;
      outside[k][o + 1] = !coarse_.periodic && (i < 0 || i >= n);
      i = ((i % n) + n) % n;
      spread[k][o + 1] = spread_bits_3(static_cast<std::uint64_t>(i) << shift_q) << (2 - k);
    }
  }
  for (std::size_t qx = 0; qx < 3; ++qx)
    for (std::size_t qy = 0; qy < 3; ++qy)
      for (std::size_t qz = 0; qz < 3; ++qz)
        morton_at[9 * qx + 3 * qy + qz] = spread[0][qx] | spread[1][qy] | spread[2][qz];
  if (interior) {
    for (const std::uint8_t place : morton_order_of_27(parent_index)) {
      const auto q = std::min<std::size_t>(place, 26);
      qs[n_q] = {morton_at[q], q};
      n_q += static_cast<std::size_t>(place != kNoPlace);
    }
  } else {
    for (std::size_t qx = 0; qx < 3; ++qx)
      for (std::size_t qy = 0; qy < 3; ++qy)
        for (std::size_t qz = 0; qz < 3; ++qz)
          if (!outside[0][qx] && !outside[1][qy] && !outside[2][qz])
            qs[n_q++] = {morton_at[9 * qx + 3 * qy + qz], 9 * qx + 3 * qy + qz};
    std::sort(qs.begin(), qs.begin() + static_cast<std::ptrdiff_t>(n_q),
              [](const Q& x, const Q& y) { return x.morton < y.morton; });
  }
  const std::size_t n = keys_.size();
  std::size_t at = search_from_hint(key_of(qs[0].morton, 0));
  // The first key at or after `target`, from `at` forward: among the next eight, else by a galloping
  // search. The eight are counted without a branch: the keys are sorted, so those below the target come
  // first and their number is the step (a loop that stopped at the first one mispredicted its exit).
  const auto skip_to = [&](std::uint64_t target) {
    if (at + 8 <= n) {
      std::size_t below = 0;
      for (std::size_t k = 0; k < 8; ++k) below += static_cast<std::size_t>(keys_[at + k] < target);
      at += below;
      if (below < 8) return;
    } else {
      for (; at < n; ++at)
        if (keys_[at] >= target) return;
      return;
    }
    hint_ = at;
    at = search_from_hint(target);
  };
  std::size_t q_begin = at;
  for (std::size_t i = 0; i < n_q; ++i) {
    const std::uint64_t qm = qs[i].morton;
    // q's cells in the block (`place.inside`, by octant); m_of: the block's cell of q's child x.
    const QPlace place = kQPlaces[qs[i].place];
    const auto m_of = [&](unsigned octant) { return static_cast<std::size_t>(place.base + kOctantStep[octant]); };
    const std::uint64_t q_end = key_of(qm + (std::uint64_t{1} << (3 * shift_q)), 0);
    // A lattice of two cells along a periodic axis wraps the cells either side of the oct onto one:
    // its leaves are read again, for its other place in the block.
    if (i > 0 && qm == qs[i - 1].morton) at = q_begin;
    skip_to(key_of(qm, 0));
    q_begin = at;
    if (at == n || keys_[at] >= q_end) continue;  // no leaf in q
    if (keys_[at] == key_of(qm, level - 1)) {     // q a leaf: it covers its cells in the block
      for (unsigned in = place.inside; in != 0; in &= in - 1)
        b.coarser[m_of(static_cast<unsigned>(std::countr_zero(in)))] = static_cast<std::uint32_t>(at);
      continue;
    }
    // q's cells in the block, each one's leaves in key order: a leaf of the leaves' level, or the
    // children that are leaves; anything finer (which cannot touch the oct's leaves) is skipped.
    for (unsigned in = place.inside; in != 0; in &= in - 1) {  // ascending
      const auto octant = static_cast<unsigned>(std::countr_zero(in));
      const std::uint64_t xm = qm | static_cast<std::uint64_t>(octant) << (3 * shift_x);
      const std::uint64_t x_end = key_of(xm + (std::uint64_t{1} << (3 * shift_x)), 0);
      const std::size_t m = m_of(octant);
      skip_to(key_of(xm, 0));
      while (at < n && keys_[at] < x_end) {
        const std::uint64_t key = keys_[at], morton = key >> 4;
        const int l = static_cast<int>(key & 0xF);
        if (l == level) {
          b.leaf[m] = static_cast<std::uint32_t>(at++);
          break;
        }
        if (l < level) {  // an ancestor of q at its corner (an unbalanced or inconsistent set): no cell here
          ++at;
          continue;
        }
        if (!(b.split >> m & 1)) {
          b.split |= std::uint64_t{1} << m;
          b.children[m].fill(kNone);
        }
        if (l == level + 1) {
          b.children[m][morton >> (3 * shift_c) & 7] = static_cast<std::uint32_t>(at++);
          continue;
        }
        // A finer leaf: on to the next child. (A level beyond the tree's is no key of it.)
        if (l > levels_) throw core::Error::internal("oct neighbours: key {} has a level beyond {}", key, levels_);
        skip_to(key_of(((morton >> (3 * shift_c)) + 1) << (3 * shift_c), 0));
      }
    }
  }
  hint_ = std::min(at, n - 1);
}

}  // namespace phew::mesh
