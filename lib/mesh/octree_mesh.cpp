#include <phew/mesh/octree_mesh.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/mesh/oct_neighbours.hpp>
#include <phew/mpi/route.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>

namespace phew::mesh {
namespace {

// The coarse cell (level 0) a leaf lies in.
Cell coarse_of(const Cell& c) { return {0, {c.index[0] >> c.level, c.index[1] >> c.level, c.index[2] >> c.level}}; }

// The rank whose run of keys holds a key (cuts: CellSpace::rank_cuts, cuts[0] = 0).
int owner_of(const std::vector<std::int64_t>& cuts, std::uint64_t key) {
  return static_cast<int>(std::upper_bound(cuts.begin(), cuts.end(), static_cast<std::int64_t>(key)) - cuts.begin()) -
         1;
}

// The ranks' runs of keys when each holds every leaf of its coarse cells: each run begins at its first
// coarse cell; an empty rank's run is empty, where the next one begins.
std::vector<std::int64_t> cuts_of_runs(const std::vector<std::uint64_t>& keys, int levels, const mpi::Comm& comm) {
  constexpr std::uint64_t kNone = ~std::uint64_t{0};
  const std::vector<std::uint64_t> first = comm.all_gather(keys.empty() ? kNone : subtree_begin(keys.front(), levels));
  std::vector<std::int64_t> cuts(first.size() + 1, std::numeric_limits<std::int64_t>::max());
  for (std::size_t r = first.size(); r-- > 0;)
    cuts[r] = first[r] == kNone ? cuts[r + 1] : static_cast<std::int64_t>(first[r]);
  cuts[0] = 0;
  return cuts;
}

// The keys of a coarse cell's subtree: [its key, the key of its last finest cell with level 15].
std::pair<std::uint64_t, std::uint64_t> subtree_keys(const Cell& coarse, int levels) {
  const std::uint64_t begin = cell_key(coarse, levels);
  const std::uint64_t finest_cells = std::uint64_t{1} << (3 * levels);
  return {begin & ~std::uint64_t{0xF}, ((begin >> 4) + finest_cells - 1) << 4 | 0xF};
}

// Each mesh's serial number (neighbours_of's memo).
std::atomic<std::uint64_t> next_mesh_serial{1};

struct GhostRequest {
  std::int64_t coarse;  // linear index of a coarse cell
  std::int32_t from;    // the rank asking
  std::int32_t to;      // the rank holding it
};

struct GhostLeaf {
  std::uint64_t key;
  double density;
  std::int32_t from;  // the owner
  std::int32_t to;    // the rank asking
};

}  // namespace

template <typename Real>
BasicOctreeMesh<Real>::BasicOctreeMesh(const grid::GridGeometry& coarse, int levels, std::vector<std::uint64_t> keys,
                                       std::vector<Real> density, const mpi::Comm& comm)
    : coarse_(coarse), levels_(levels), serial_(next_mesh_serial++), every_leaf_(true) {
  const std::vector<std::int64_t> cuts = cuts_of_runs(keys, levels, comm);
  build(cuts, std::move(keys), std::move(density), comm);
}

template <typename Real>
BasicOctreeMesh<Real>::BasicOctreeMesh(const grid::GridGeometry& coarse, int levels,
                                       const std::vector<std::int64_t>& cuts, std::vector<std::uint64_t> keys,
                                       std::vector<Real> density, const mpi::Comm& comm)
    : coarse_(coarse), levels_(levels), serial_(next_mesh_serial++), every_leaf_(false) {
  if (cuts.size() != static_cast<std::size_t>(comm.size()) + 1 || cuts.front() != 0)
    throw core::Error::internal("octree mesh: {} cuts for {} ranks", cuts.size(), comm.size());
  build(cuts, std::move(keys), std::move(density), comm);
}

template <typename Real>
void BasicOctreeMesh<Real>::build(const std::vector<std::int64_t>& cuts, std::vector<std::uint64_t> keys,
                                  std::vector<Real> density, const mpi::Comm& comm) {
  const auto nranks = static_cast<std::size_t>(comm.size());
  const int levels = levels_;
  const grid::GridGeometry& coarse = coarse_;
  // The coarse cells of this rank (each one's leaves a run of the keys: one look per run), and the ones
  // around them that other ranks hold.
  std::vector<std::int64_t> mine;
  for (std::size_t n = 0; n < keys.size();) {
    const std::uint64_t begin = subtree_begin(keys[n], levels);
    const Cell c = coarse_of(cell_of_key(begin, levels));
    mine.push_back(coarse.linear({c.index[0], c.index[1], c.index[2]}));
    const std::uint64_t end = begin + (std::uint64_t{1} << (3 * levels + 4));  // the next coarse cell's first key
    while (n < keys.size() && keys[n] < end) ++n;
  }
  std::vector<GhostRequest> requests;
  std::vector<char> boundary_cell(mine.size(), 0);
  for (std::size_t m = 0; m < mine.size() && comm.size() > 1; ++m) {
    const auto i = coarse.cell_at(mine[m]);
    for (int a = -1; a <= 1; ++a)
      for (int b = -1; b <= 1; ++b)
        for (int d = -1; d <= 1; ++d) {
          Cell n{0, {i.i + a, i.j + b, i.k + d}};
          if ((a == 0 && b == 0 && d == 0) || !normalise_cell(coarse, n)) continue;
          const int owner = owner_of(cuts, cell_key(n, levels));
          if (owner == comm.rank()) continue;
          boundary_cell[m] = 1;
          requests.push_back({coarse.linear({n.index[0], n.index[1], n.index[2]}), comm.rank(), owner});
        }
  }
  // One request per (owner, coarse cell), in key order per owner.
  const auto coarse_key = [&](std::int64_t linear) {
    const auto i = coarse.cell_at(linear);
    return cell_key(Cell{0, {i.i, i.j, i.k}}, levels);
  };
  std::sort(requests.begin(), requests.end(), [&](const GhostRequest& x, const GhostRequest& y) {
    return x.to != y.to ? x.to < y.to : coarse_key(x.coarse) < coarse_key(y.coarse);
  });
  requests.erase(
      std::unique(requests.begin(), requests.end(),
                  [](const GhostRequest& x, const GhostRequest& y) { return x.to == y.to && x.coarse == y.coarse; }),
      requests.end());
  const std::vector<GhostRequest> asked = mpi::route(comm, requests, [](const GhostRequest& q) { return q.to; });

  // Answer: the leaves of each coarse cell asked for, in key order; remember what went to whom.
  send_.assign(nranks, {});
  std::vector<GhostLeaf> answers;
  for (const GhostRequest& q : asked) {
    const auto i = coarse.cell_at(q.coarse);
    const auto [begin, end] = subtree_keys(Cell{0, {i.i, i.j, i.k}}, levels);
    const auto lo = std::lower_bound(keys.begin(), keys.end(), begin),
               hi = std::upper_bound(keys.begin(), keys.end(), end);
    for (auto it = lo; it != hi; ++it) {
      const auto local = static_cast<std::size_t>(it - keys.begin());
      answers.push_back({*it, density[local], comm.rank(), q.from});
      send_[static_cast<std::size_t>(q.from)].push_back(static_cast<std::uint32_t>(local));  // local index; slots below
    }
  }
  const std::vector<GhostLeaf> ghosts = mpi::route(comm, answers, [](const GhostLeaf& g) { return g.to; });
  // Slots: every leaf, local and ghost, in key order. A ghost is a leaf of another rank's coarse cell,
  // outside this rank's run of the key order: the slots are the ghosts before the run, the local leaves
  // as they came, then the ghosts after it. The keys and densities grow in place (no copy at all
  // without ghosts, as on one rank).
  std::vector<std::pair<std::uint64_t, double>> ghost_leaves;
  ghost_leaves.reserve(ghosts.size());
  for (const GhostLeaf& g : ghosts) ghost_leaves.emplace_back(g.key, g.density);
  std::sort(ghost_leaves.begin(), ghost_leaves.end());
  const std::size_t n_local = keys.size();
  const std::uint64_t run_front = n_local ? keys.front() : 0;
  const auto before =
      static_cast<std::size_t>(std::lower_bound(ghost_leaves.begin(), ghost_leaves.end(), run_front,
                                                [](const auto& g, std::uint64_t k) { return g.first < k; }) -
                               ghost_leaves.begin());
  if (n_local && before < ghost_leaves.size() && ghost_leaves[before].first <= keys.back())
    throw core::Error::internal("octree mesh: ghost leaf {} lies in this rank's run of keys",
                                ghost_leaves[before].first);
  const auto place = [&](auto& column, auto value_of) {  // [before | local | after], grown once
    column.reserve(n_local + ghost_leaves.size());
    column.insert(column.begin(), before, {});
    for (std::size_t g = 0; g < before; ++g) column[g] = value_of(ghost_leaves[g]);
    for (std::size_t g = before; g < ghost_leaves.size(); ++g) column.push_back(value_of(ghost_leaves[g]));
  };
  place(keys, [](const auto& g) { return g.first; });
  place(density, [](const auto& g) { return static_cast<Real>(g.second); });  // exact: came from Real
  core::release(ghost_leaves);
  key_ = std::move(keys);
  density_ = std::move(density);
  const auto slot_of = [&](std::uint64_t k) {
    const auto it = std::lower_bound(key_.begin(), key_.end(), k);
    if (it == key_.end() || *it != k) throw core::Error::internal("octree mesh: leaf key {} is not among the slots", k);
    return static_cast<std::size_t>(it - key_.begin());
  };
  first_ = before;
  end_ = first_ + n_local;
  for (auto& list : send_)
    for (auto& s : list) s = static_cast<std::uint32_t>(first_ + s);
  receive_.assign(nranks, {});
  // Each owner's leaves arrive in the order it sends them (send_), which update_ghost_members keeps.
  for (const GhostLeaf& g : ghosts)
    receive_[static_cast<std::size_t>(g.from)].push_back(static_cast<std::uint32_t>(slot_of(g.key)));
  boundary_.assign(n_local, 0);
  for (std::size_t n = 0, m = 0; n < n_local; ++n) {  // local leaves and `mine` both in key order
    if (n > 0 && subtree_begin(key_[first_ + n], levels) != subtree_begin(key_[first_ + n - 1], levels)) ++m;
    boundary_[n] = boundary_cell[m];
  }

  // Where each coarse cell's leaves begin among the slots, for neighbours_of's searches.
  for (std::size_t s = 0; s < key_.size(); ++s) {
    const std::uint64_t begin = subtree_begin(key_[s], levels);
    if (coarse_begin_.empty() || coarse_begin_.back() != begin) {
      coarse_begin_.push_back(begin);
      coarse_slot_.push_back(s);
    }
  }
  coarse_slot_.push_back(key_.size());
}

namespace {

// The last of the sorted keys [lo, hi) at or before `target` (key[lo] <= target), searched outward from
// `from` in [lo, hi): the galloping first_at_or_after (oct_neighbours.hpp), one place back.
std::size_t last_at_or_before(const std::uint64_t* key, std::size_t lo, std::size_t hi, std::size_t from,
                              std::uint64_t target) {
  return lo + first_at_or_after(std::span<const std::uint64_t>(key + lo, hi - lo), from - lo, target + 1) - 1;
}

// No slot: a search that found no leaf at or before its point.
constexpr std::size_t kNone = ~std::size_t{0};

// The answers of this thread's last searches for the last leaf at or before a point, by the point: the
// leaves of one oct ask for the same points (their neighbourhoods overlap), one after another in the
// watershed's memory order. A pure function of the mesh and the point, tagged with the mesh's serial
// number so that no other mesh reads them.
struct SearchMemo {
  static constexpr std::size_t kSize = 256;
  std::uint64_t mesh = 0;
  std::array<std::uint64_t, kSize> point{};
  std::array<std::size_t, kSize> slot{};
  static std::size_t bucket(std::uint64_t point) {
    return static_cast<std::size_t>((point >> 4) * 0x9E3779B97F4A7C15ull >> 56);  // 8 bits: kSize buckets
  }
};

// A parent of the 26 cells around a leaf, and (a mesh of some leaves only) what it holds.
struct Parent {
  std::uint64_t corner;  // Morton code of the parent's corner (finest lattice)
  std::size_t first;     // the last slot at or before that corner: the first child, if it is a leaf
  // A mesh of some leaves only: the parent itself a leaf, or the slots inside it, [begin, end); when those
  // are all of the children's level (not `mixed`), which of the 8 octants they are.
  bool leaf = false, mixed = false;
  unsigned octants = 0;
  std::size_t begin = 0, end = 0;
};

// The parents a thread looked at last on a mesh of some leaves only, by the parent's key: the leaves
// of one oct share their parents' neighbours. Tagged with the mesh's serial number as SearchMemo is.
struct ParentMemo {
  static constexpr std::size_t kSize = 256;
  std::uint64_t mesh = 0;
  std::array<std::uint64_t, kSize> key{};
  std::array<Parent, kSize> parent{};
};

}  // namespace

template <typename Real>
std::size_t BasicOctreeMesh<Real>::neighbours_of(std::size_t s, std::uint32_t* const out) const {
  // The touching leaves (touching_leaves' rule), by searches of the slots' keys inside one coarse cell:
  // for each of the 26 cells n of the leaf's level around it, the leaf holding n's corner is n itself or
  // a coarser leaf covering n, or else lies inside n, which is then split into leaves one level finer
  // on the leaf's side (the mesh is balanced), those that touch it. Computed when asked: the watershed
  // asks for the test cells only, so the mesh holds 12-16 bytes per leaf (a key and a density), not a list.
  const Cell c = cell_of_key(key_[s], levels_);
  const std::uint64_t* key = key_.data();
  thread_local SearchMemo memo;
  if (memo.mesh != serial_) {
    memo.mesh = serial_;
    memo.point.fill(~std::uint64_t{0});  // never a point: its Morton code has at most 57 bits
  }
  thread_local ParentMemo parent_memo;
  if (!every_leaf_ && parent_memo.mesh != serial_) {
    parent_memo.mesh = serial_;
    parent_memo.key.fill(~std::uint64_t{0});  // never a cell's key
  }
  // The slots of a coarse cell, by the first key of its subtree; most neighbours share the leaf's own.
  // None on a mesh of some leaves only, when it holds none of the cell's.
  const auto coarse_slots = [&](std::uint64_t begin) {
    const auto at = std::upper_bound(coarse_begin_.begin(), coarse_begin_.end(), begin) - coarse_begin_.begin() - 1;
    if (at < 0 || coarse_begin_[static_cast<std::size_t>(at)] != begin) {
      if (!every_leaf_) return std::pair<std::size_t, std::size_t>{0, 0};
      throw core::Error::internal("octree mesh: the coarse cell of leaf key {} is not among the slots", begin);
    }
    return std::pair{coarse_slot_[static_cast<std::size_t>(at)], coarse_slot_[static_cast<std::size_t>(at) + 1]};
  };
  const std::uint64_t own_begin = subtree_begin(key_[s], levels_);
  const auto own = coarse_slots(own_begin);
  // The coarse cells met so far: the 26 cells around a leaf finer than the coarse grid lie in at most
  // 8 coarse cells (its own and those around one of its corners), each searched for once.
  struct Met {
    std::uint64_t begin;
    std::pair<std::size_t, std::size_t> slots;
  };
  std::array<Met, 8> met{};
  met[0] = {own_begin, own};
  std::size_t n_met = 1;
  const auto slots_of = [&](std::uint64_t begin) {
    for (std::size_t m = 0; m < n_met; ++m)
      if (met[m].begin == begin) return met[m].slots;
    const auto found = coarse_slots(begin);
    if (n_met < met.size()) met[n_met++] = {begin, found};
    return found;
  };
  // The 26 cells around the leaf, axis by axis: the key is the Morton code of the corner, and the
  // code of a corner is the OR of its axes' spread bits, so 9 spreads make the 26 keys. Wrapped into a
  // periodic lattice; off an open one, `outside`.
  const int shift = levels_ - c.level;
  std::uint64_t spread[3][3];
  bool outside[3][3];
  bool tiny = false;  // a lattice of at most 2 cells along an axis: two of the 26 may wrap onto one cell
  for (std::size_t d = 0; d < 3; ++d) {
    const std::int64_t n = coarse_.shape[d] << c.level;
    tiny = tiny || (coarse_.periodic && n <= 2);
    for (int o = -1; o <= 1; ++o) {
      std::int64_t i = c.index[d] + o;
      outside[d][o + 1] = !coarse_.periodic && (i < 0 || i >= n);
      i = ((i % n) + n) % n;
      spread[d][o + 1] = spread_bits_3(static_cast<std::uint64_t>(i) << shift);
    }
  }
  const auto level_bits = static_cast<std::uint64_t>(c.level);
  const int child_shift = 3 * (shift - 1);  // a child's octant, in its parent's Morton code
  // Most of the 26 are leaves of the leaf's own level whose parent is split into 8 leaves: such a
  // neighbour is the first leaf of its parent plus its octant, checked by its key. The 26 have at most 8
  // parents, so 8 searches instead of 26.
  std::array<Parent, 8> parents{};
  std::size_t n_parents = 0;
  const int octant_shift = 3 * shift;  // the leaf's octant in its parent, in a Morton code
  std::size_t count = 0;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b)
      for (int d = 0; d < 3; ++d) {
        if ((a == 1 && b == 1 && d == 1) || outside[0][a] || outside[1][b] || outside[2][d]) continue;
        const std::uint64_t morton = spread[0][a] << 2 | spread[1][b] << 1 | spread[2][d];
        const std::uint64_t corner = morton << 4 | level_bits;
        const std::uint64_t begin = subtree_begin(corner, levels_);
        const bool same_coarse = begin == own_begin;
        const auto [lo, hi] = same_coarse ? own : slots_of(begin);
        if (lo == hi) continue;  // a mesh of some leaves only, none of them in that coarse cell
        // The last leaf at or before a corner point of this coarse cell, remembered: with every leaf, one
        // of its slots (the coarse cell's first leaf is at or before any of its points); with some only,
        // kNone when they all lie after it.
        const auto at_or_before = [&](std::uint64_t point) {
          const std::size_t h = SearchMemo::bucket(point);
          if (memo.point[h] == point) return memo.slot[h];
          const std::size_t found =
              key[lo] > point ? kNone
              : same_coarse   ? last_at_or_before(key, lo, hi, s, point)
                              : static_cast<std::size_t>(std::upper_bound(key + lo, key + hi, point) - key) - 1;
          memo.point[h] = point;
          memo.slot[h] = found;
          return found;
        };
        // Calls f(key) for each child of n that touches the leaf: on the side of n that faces it, along
        // every axis it is offset.
        const int dir[3] = {a - 1, b - 1, d - 1};
        const auto for_each_touching_child = [&](auto&& f) {
          for (int octant = 0; octant < 8; ++octant) {
            const int bit[3] = {octant >> 2 & 1, octant >> 1 & 1, octant & 1};
            bool touches = true;
            for (std::size_t k = 0; k < 3; ++k) touches = touches && (dir[k] == 0 || bit[k] == (dir[k] < 0 ? 1 : 0));
            if (touches) f((morton | static_cast<std::uint64_t>(octant) << child_shift) << 4 | (level_bits + 1));
          }
        };
        if (c.level > 0) {  // a parent lies in the same coarse cell as its children
          const std::uint64_t parent_corner = morton & ~(std::uint64_t{7} << octant_shift);
          std::size_t p = 0;
          while (p < n_parents && parents[p].corner != parent_corner) ++p;
          if (p == n_parents) {
            if (every_leaf_) {
              parents[n_parents++] = {parent_corner, at_or_before(parent_corner << 4 | 0xF)};
            } else {
              // The neighbours lie one level up (the parent), on the leaf's level or one down (the mesh is
              // balanced), so all inside the parent: its slots, a short run of keys, answer for them all.
              const std::uint64_t parent_key = parent_corner << 4 | (level_bits - 1);
              const std::size_t h = SearchMemo::bucket(parent_key);
              if (parent_memo.key[h] != parent_key) {
                Parent q{parent_corner, at_or_before(parent_corner << 4 | 0xF)};
                const std::size_t f = q.first;
                q.leaf = f != kNone && key[f] == parent_key;
                q.begin = f == kNone ? lo : (key[f] >> 4) >= parent_corner ? f : f + 1;
                const std::uint64_t past = (parent_corner + (std::uint64_t{1} << (3 * (shift + 1)))) << 4;
                std::size_t e = q.begin;
                for (; e < hi && key[e] < past; ++e) {
                  if ((key[e] & 0xF) != level_bits || e - q.begin == 8) {
                    q.mixed = true;
                    e = last_at_or_before(key, q.begin, hi, e, past - 1) + 1;
                    break;
                  }
                  q.octants |= 1u << (key[e] >> 4 >> octant_shift & 7);
                }
                q.end = e;
                parent_memo.key[h] = parent_key;
                parent_memo.parent[h] = q;
              }
              parents[n_parents++] = parent_memo.parent[h];
            }
          }
          const std::size_t guess = parents[p].first + (morton >> octant_shift & 7);
          if (parents[p].first != kNone && guess < hi && key[guess] == corner) {
            out[count++] = static_cast<std::uint32_t>(guess);
            continue;
          }
          if (!every_leaf_) {
            const Parent& q = parents[p];
            if (!q.leaf && !q.mixed) {  // n is a leaf among them or nothing: the octants say which
              const unsigned octant = static_cast<unsigned>(morton >> octant_shift & 7);
              if (q.octants >> octant & 1)
                out[count++] = static_cast<std::uint32_t>(
                    q.begin + static_cast<std::size_t>(grid::bits_set(q.octants & ((1u << octant) - 1))));
              continue;
            }
            if (q.leaf) {  // listed once for all the 26 it covers
              const auto h = static_cast<std::uint32_t>(q.first);
              if (std::find(out, out + static_cast<std::ptrdiff_t>(count), h) ==
                  out + static_cast<std::ptrdiff_t>(count))
                out[count++] = h;
              continue;
            }
            const std::uint64_t* at = std::lower_bound(key + q.begin, key + q.end, morton << 4);
            if (at == key + q.end || *at >> 4 >= morton + (std::uint64_t{1} << (3 * shift))) continue;  // none in n
            if (*at == corner) {
              out[count++] = static_cast<std::uint32_t>(at - key);
              continue;
            }
            for_each_touching_child([&](std::uint64_t child_key) {  // n is split: its children among [at, end)
              const std::uint64_t* child = std::lower_bound(at, key + q.end, child_key);
              if (child != key + q.end && *child == child_key) out[count++] = static_cast<std::uint32_t>(child - key);
            });
            continue;
          }
        }
        // The last leaf at or before n's corner point: with every leaf, the one holding it. With some only
        // it may lie before n, when the leaf holding the point is not among them.
        const std::size_t holder = at_or_before(corner | 0xF);
        if (holder != kNone) {
          const int holder_level = static_cast<int>(key[holder] & 0xF);
          if (holder_level <= c.level && (every_leaf_ || key_contains(key[holder], corner | 0xF, levels_))) {
            // A coarser leaf may cover several of the 26: listed once.
            const auto h = static_cast<std::uint32_t>(holder);
            if (holder_level == c.level ||
                std::find(out, out + static_cast<std::ptrdiff_t>(count), h) == out + static_cast<std::ptrdiff_t>(count))
              out[count++] = h;
            continue;
          }
        }
        // n is split (with every leaf: its leaf at the corner is finer), or with some leaves only, may be:
        // then unless one of them lies inside n (keys from its corner to the next cell of its level), none
        // of its children is among them.
        if (!every_leaf_) {
          if (c.level == levels_) continue;
          const std::size_t next = holder == kNone ? lo : (key[holder] >> 4) >= morton ? holder : holder + 1;
          if (next >= hi || key[next] >> 4 >= morton + (std::uint64_t{1} << (3 * shift))) continue;
        }
        for_each_touching_child([&](std::uint64_t child_key) {
          // n's leaves follow the leaf at its corner. With every leaf, a missing child (or one sorting
          // before the first key) means an unbalanced mesh; with some only, a child not among them.
          const std::size_t at =
              child_key < key[lo] ? kNone : last_at_or_before(key, lo, hi, holder != kNone ? holder : lo, child_key);
          if (at == kNone || key[at] != child_key) {
            if (!every_leaf_) return;
            throw core::Error::internal("octree mesh: leaf {} is not balanced (no leaf {})", key_[s], child_key);
          }
          out[count++] = static_cast<std::uint32_t>(at);
        });
      }
  if (tiny) {
    std::sort(out, out + static_cast<std::ptrdiff_t>(count));
    count = static_cast<std::size_t>(std::unique(out, out + static_cast<std::ptrdiff_t>(count)) - out);
    count = static_cast<std::size_t>(
        std::remove(out, out + static_cast<std::ptrdiff_t>(count), static_cast<std::uint32_t>(s)) - out);
  }
  return count;
}

template <typename Real>
void BasicOctreeMesh<Real>::keep_neighbours(int threads, std::size_t chunk) {
  chunk = std::max<std::size_t>(chunk, 1);
  const std::size_t n = end_ - first_;
  std::vector<core::RawVector<std::uint32_t>> kept((n + chunk - 1) / chunk);
  std::vector<std::uint32_t> at(n);
  // Each chunk's list is written in place with room for the most a leaf can have (56), uninitialised,
  // then cut to its size and the room left unwritten given back to the system: no scratch and no copy
  // (the copy was 6 % of phew-segment's samples on the adaptive mesh, mostly the first touch of the
  // lists' pages, which the writes now pay: 0.98x phew-segment's time).
  core::parallel_for(threads, n, chunk, [&](std::size_t b, std::size_t e, int) {
    core::RawVector<std::uint32_t>& list = kept[b / chunk];
    list.resize((e - b) * std::tuple_size_v<Neighbours>);
    // Some leaves only: found an oct at a time (oct_neighbours.hpp), the same lists.
    OctNeighbours octs(coarse_, levels_, key_);
    std::size_t size = 0;
    for (std::size_t i = b; i < e; ++i) {
      at[i] = static_cast<std::uint32_t>(size);
      const std::size_t s = first_ + i;
      size += !every_leaf_ && octs.handles(s) ? octs.neighbours(s, list.data() + size)
                                              : neighbours_of(s, list.data() + size);
    }
    core::release_pages(reinterpret_cast<char*>(list.data() + size), list.data() + list.size());
    list.resize(size);
  });
  kept_chunk_ = chunk;
  kept_ = std::move(kept);
  kept_at_ = std::move(at);
}

template <typename Real>
std::int64_t BasicOctreeMesh<Real>::chunk(std::size_t s) const {
  const Cell c = coarse_of(cell(s));
  return coarse_.linear({c.index[0], c.index[1], c.index[2]});
}

template <typename Real>
void BasicOctreeMesh<Real>::update_ghost_members(const grid::CellSet& members, std::vector<std::int64_t>& values,
                                                 const mpi::Comm& comm) const {
  const auto nranks = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> send;
  std::vector<std::uint64_t> counts(nranks, 0);
  for (std::size_t r = 0; r < nranks; ++r)
    for (const std::uint32_t s : send_[r])
      if (members.contains(s)) {
        send.push_back(values[members.rank(s)]);
        ++counts[r];
      }
  const std::vector<std::int64_t> got = comm.all_to_all<std::int64_t>(send, counts);
  std::size_t at = 0;
  for (std::size_t r = 0; r < nranks; ++r)
    for (const std::uint32_t s : receive_[r])
      if (members.contains(s)) {
        if (at >= got.size())
          throw core::Error::internal("octree mesh: rank {} sent fewer ghost values than expected", r);
        values[members.rank(s)] = got[at++];
      }
  if (at != got.size()) throw core::Error::internal("octree mesh: {} ghost values received, {} used", got.size(), at);
}

template class BasicOctreeMesh<float>;
template class BasicOctreeMesh<double>;

}  // namespace phew::mesh
