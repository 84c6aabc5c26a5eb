#include <phew/mesh/octree.hpp>

#include <phew/core/error.hpp>
#include <phew/core/radix_sort.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/mesh/code_dilation.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>

namespace phew::mesh {
namespace {

constexpr std::uint64_t code_of(const Index3& i) {
  return morton3(static_cast<std::uint64_t>(i[0]), static_cast<std::uint64_t>(i[1]), static_cast<std::uint64_t>(i[2]));
}

constexpr Index3 index_of(std::uint64_t code) {
  return {static_cast<std::int64_t>(gather_bits_3(code >> 2)), static_cast<std::int64_t>(gather_bits_3(code >> 1)),
          static_cast<std::int64_t>(gather_bits_3(code))};
}

// Calls f(neighbour) for the 26 cells around c of the same level (not normalised).
template <class F>
void for_each_neighbour(const Cell& c, F&& f) {
  for (int a = -1; a <= 1; ++a)
    for (int b = -1; b <= 1; ++b)
      for (int d = -1; d <= 1; ++d)
        if (a != 0 || b != 0 || d != 0) f(Cell{c.level, {c.index[0] + a, c.index[1] + b, c.index[2] + d}});
}

// The cell of level l holding a point at lattice position u (cells [i, i+1)), as the uniform grid's NGP rule.
Index3 floor_index(const std::array<double, 3>& u) {
  return {static_cast<std::int64_t>(std::floor(u[0])), static_cast<std::int64_t>(std::floor(u[1])),
          static_cast<std::int64_t>(std::floor(u[2]))};
}

// The child of `c` holding lattice position u of level c.level+1 (clamped into c, so that a position
// rounded onto a boundary stays in the cell its parent was chosen for).
Cell child_holding(const Cell& c, const std::array<double, 3>& u) {
  Cell k{c.level + 1, floor_index(u)};
  for (std::size_t d = 0; d < 3; ++d) k.index[d] = std::clamp(k.index[d], 2 * c.index[d], 2 * c.index[d] + 1);
  return k;
}

}  // namespace

Octree::Octree(const grid::GridGeometry& coarse, int levels)
    : coarse_(coarse),
      levels_(levels),
      codes_(static_cast<std::size_t>(levels) + 1),
      first_child_(static_cast<std::size_t>(levels) + 1) {
  first_child_[0].assign(coarse.cells(), kLeaf);
  for (int level = 0; level <= levels; ++level) lattice_.emplace_back(coarse, level);
}

Octree Octree::from_leaves(const grid::GridGeometry& coarse, int levels, const std::vector<Cell>& leaves) {
  Octree tree(coarse, levels);
  for (int level = 0; level < levels; ++level) {
    std::vector<std::int64_t> split;
    for (const Cell& leaf : leaves) {
      if (leaf.level <= level) continue;
      Cell a = leaf;
      while (a.level > level) a = parent(a);
      const std::int64_t s = tree.slot(a);
      if (s < 0)
        throw core::Error::internal("octree: leaf ({},{},{}) of level {} has no ancestor of level {}", leaf.index[0],
                                    leaf.index[1], leaf.index[2], leaf.level, level);
      split.push_back(s);
    }
    std::sort(split.begin(), split.end());
    split.erase(std::unique(split.begin(), split.end()), split.end());
    if (split.empty()) break;
    tree.split_cells(level, split);
  }
  tree.number_leaves();
  return tree;
}

Index3 Octree::lattice(int level) const {
  return {coarse_.shape[0] << level, coarse_.shape[1] << level, coarse_.shape[2] << level};
}

std::array<double, 3> Octree::cell_size(int level) const {
  const auto n = lattice(level);
  return {coarse_.extent[0] / static_cast<double>(n[0]), coarse_.extent[1] / static_cast<double>(n[1]),
          coarse_.extent[2] / static_cast<double>(n[2])};
}

double Octree::cell_volume(int level) const {
  const auto h = cell_size(level);
  return h[0] * h[1] * h[2];
}

bool normalise_cell(const grid::GridGeometry& coarse, Cell& c) {
  const Index3 n{coarse.shape[0] << c.level, coarse.shape[1] << c.level, coarse.shape[2] << c.level};
  for (std::size_t d = 0; d < 3; ++d) {
    if (c.index[d] >= 0 && c.index[d] < n[d]) continue;
    if (!coarse.periodic) return false;
    c.index[d] = ((c.index[d] % n[d]) + n[d]) % n[d];
  }
  return true;
}

Cell Octree::cell_at_slot(int level, std::size_t s) const {
  if (level > 0 && !has_codes_) throw core::Error::internal("octree: cell_at_slot on a tree without its cells' codes");
  if (level == 0) {
    const auto i = coarse_.cell_at(static_cast<std::int64_t>(s));
    return {0, {i.i, i.j, i.k}};
  }
  return {level, index_of(codes_[static_cast<std::size_t>(level)][s])};
}

std::uint64_t Octree::code_at_slot(int level, std::size_t s) const {
  if (level > 0 && !has_codes_) throw core::Error::internal("octree: code_at_slot on a tree without its cells' codes");
  if (level == 0) {
    const auto i = coarse_.cell_at(static_cast<std::int64_t>(s));
    return code_of({i.i, i.j, i.k});
  }
  return codes_[static_cast<std::size_t>(level)][s];
}

bool Octree::split(const Cell& c) const {
  const std::int64_t s = slot(c);
  return s >= 0 && !(first_child_[static_cast<std::size_t>(c.level)][static_cast<std::size_t>(s)] & kLeafBit);
}

Cell Octree::covering_leaf(Cell c) const {
  int level = 0;
  std::int64_t slot = 0;
  if (slot_or_leaf(c, level, slot) >= 0) return c;
  const int up = c.level - level;
  return {level, {c.index[0] >> up, c.index[1] >> up, c.index[2] >> up}};
}

bool coarse_cell_of(const grid::GridGeometry& coarse, const LevelLattice& level0, const std::array<double, 3>& x,
                    Cell& c) {
  c = {0, floor_index(level0.position(x))};
  return normalise_cell(coarse, c);
}

Cell Octree::leaf_at(const std::array<double, 3>& x) const {
  // The point's cell on the finest lattice, found once. Each level's lattice position is the finest one
  // over a power of two, exactly (LevelLattice: its cells per length and its wrapping scale by 2^level,
  // and so does each rounding), so the point's cell on every level is the finest cell's indices shifted
  // down: what placing the point on each level's lattice in turn, from the coarse cell, finds.
  const std::array<double, 3> u = lattice_[static_cast<std::size_t>(levels_)].position(x);
  Index3 finest{};
  for (std::size_t d = 0; d < 3; ++d) {
    // Outside an open grid (a periodic one's positions are wrapped into it), or not a number.
    if (!(u[d] >= 0 && u[d] < static_cast<double>(coarse_.shape[d] << levels_))) return {-1, {0, 0, 0}};
    finest[d] = static_cast<std::int64_t>(u[d]);  // the floor of a position >= 0
  }
  const auto index_at = [&](int level) {
    const int shift = levels_ - level;
    return Index3{finest[0] >> shift, finest[1] >> shift, finest[2] >> shift};
  };
  const Index3 coarse = index_at(0);
  auto s = static_cast<std::size_t>(coarse_.linear({coarse[0], coarse[1], coarse[2]}));
  int level = 0;
  for (; level < levels_; ++level) {
    const std::int64_t k = child_slot(level, s, octant_at(finest, levels_ - level - 1));  // the level-(level+1) cell
    if (k < 0) break;
    s = static_cast<std::size_t>(k);
  }
  return {level, index_at(level)};
}

std::uint64_t Octree::cells(int level) const { return first_child_[static_cast<std::size_t>(level)].size(); }

std::uint64_t Octree::leaf_count() const {
  if (numbered_) return numbered_leaves_;
  std::uint64_t n = 0;
  for (const auto& f : first_child_)
    n += static_cast<std::uint64_t>(std::count_if(f.begin(), f.end(), [](std::uint32_t v) { return v & kLeafBit; }));
  return n;
}

std::vector<Cell> Octree::leaves() const {
  const std::vector<std::uint64_t> keys = leaf_keys();
  std::vector<Cell> out(keys.size());
  for (std::size_t n = 0; n < keys.size(); ++n) out[n] = cell_of_key(keys[n], levels_);
  return out;
}

template <typename F>
void Octree::walk_subtree(int level, std::size_t s, std::uint64_t code, F& f) const {
  // Depth first, the children in octant order (a child's code is its parent's << 3 | octant: no cell's
  // code is looked up); a leaf child is handled in place, without a call. At most kMaxLevels deep.
  const std::uint32_t first = first_child_[static_cast<std::size_t>(level)][s];
  if (first & kLeafBit) {
    f(level, s, code);
    return;
  }
  const std::uint32_t* child = first_child_[static_cast<std::size_t>(level) + 1].data() + first;
  for (std::uint32_t o = 0; o < 8; ++o) {
    const std::uint64_t child_code = code << 3 | o;
    if (child[o] & kLeafBit)
      f(level + 1, static_cast<std::size_t>(first + o), child_code);
    else
      walk_subtree(level + 1, static_cast<std::size_t>(first + o), child_code, f);
  }
}

template <typename F>
void Octree::walk_codes(std::uint64_t b, std::uint64_t e, F&& f) const {
  // Key order without a sort: the coarse cells in Morton order (a coarse cell's key is its Morton code
  // shifted by 3 levels per level), each one's subtree depth first, leaves only.
  for (std::uint64_t code = next_code_inside(b, coarse_.shape); code < e;
       code = next_code_inside(code + 1, coarse_.shape)) {
    const std::int64_t linear = coarse_.linear({static_cast<std::int64_t>(gather_bits_3(code >> 2)),
                                                static_cast<std::int64_t>(gather_bits_3(code >> 1)),
                                                static_cast<std::int64_t>(gather_bits_3(code))});
    walk_subtree(0, static_cast<std::size_t>(linear), code, f);
  }
}

template <typename F>
void Octree::for_each_numbered_leaf(int threads, F&& f) const {
  // The numbers are in the tree: any order does, so the coarse cells go by linear index, one pass.
  if (!numbered_) throw core::Error::internal("octree: the leaves are not numbered");
  constexpr std::size_t kCoarsePerTask = std::size_t{1} << 12;
  core::parallel_for(threads, coarse_.cells(), kCoarsePerTask, [&](std::size_t b, std::size_t e, int) {
    const auto numbered = [&](int level, std::size_t s, std::uint64_t code) {
      f(static_cast<std::uint64_t>(first_child_[static_cast<std::size_t>(level)][s] & ~kLeafBit), level, code);
    };
    for (std::size_t c = b; c < e; ++c) {
      const auto i = coarse_.cell_at(static_cast<std::int64_t>(c));
      walk_subtree(0, c, code_of({i.i, i.j, i.k}), numbered);
    }
  });
}

std::vector<std::uint64_t> Octree::leaf_keys(int threads) const {
  std::vector<std::uint64_t> out(leaf_count());
  for_each_numbered_leaf(threads, [&](std::uint64_t n, int level, std::uint64_t code) {
    out[n] = cell_key_of_code(code, level, levels_);
  });
  return out;
}

std::uint64_t Octree::key_of_leaf(std::uint64_t n) const {
  const auto chunk = static_cast<std::size_t>(std::upper_bound(chunk_first_leaf_.begin(), chunk_first_leaf_.end(), n) -
                                              chunk_first_leaf_.begin() - 1);
  std::uint64_t at = chunk_first_leaf_[chunk], key = 0;
  walk_codes(chunk * numbering_chunk_, (chunk + 1) * numbering_chunk_, [&](int level, std::size_t, std::uint64_t code) {
    if (at++ == n) key = cell_key_of_code(code, level, levels_);
  });
  return key;
}

void Octree::check_levels_listed() const {
  if (!numbered_ || leaf_level_.size() != numbered_leaves_)
    throw core::Error::internal("octree: leaf_run on a tree not numbered, or whose levels were taken");
}

LeafRun Octree::leaf_run(std::uint64_t first, std::uint64_t last) const {
  check_levels_listed();
  if (first > last || last > leaf_count())
    throw core::Error::internal("octree: leaves [{}, {}) of {}", first, last, leaf_count());
  LeafRun run;
  run.level.assign(leaf_level_.begin() + static_cast<std::ptrdiff_t>(first),
                   leaf_level_.begin() + static_cast<std::ptrdiff_t>(last));
  if (first < last) run.first_key = key_of_leaf(first);
  return run;
}

LeafRun Octree::take_leaf_run(std::uint64_t first, std::uint64_t last) {
  LeafRun run;
  if (first > 0 || last < leaf_count()) {
    run = leaf_run(first, last);
  } else {
    check_levels_listed();
    if (first < last) run.first_key = key_of_leaf(first);
    run.level = std::move(leaf_level_);
  }
  core::release(leaf_level_);
  return run;
}

Octree::NumberingChunks Octree::numbering_chunks() const {
  // Chunks of the Morton curve's coarse codes. A grid whose sides are not one power of two leaves codes
  // out: the chunks grow with the share left out, about 4096 cells each.
  const std::int64_t widest = std::max({coarse_.shape[0], coarse_.shape[1], coarse_.shape[2]});
  std::uint64_t side = 1;
  while (static_cast<std::int64_t>(side) < widest) side *= 2;
  const std::uint64_t codes = side * side * side;
  const std::uint64_t per_task = (std::uint64_t{1} << 12) * ((codes + coarse_.cells() - 1) / coarse_.cells());
  return {per_task, (codes + per_task - 1) / per_task, codes};
}

std::uint64_t Octree::number_leaves(int threads) { return number_leaves(threads, {}); }

std::uint64_t Octree::number_leaves(int threads, const std::vector<std::uint64_t>& split_in_chunk) {
  const std::uint64_t n = leaf_count();
  if (n >= kLeafBit - 1) throw core::Error::usage("more than 2^31 leaves on one rank: use more ranks");
  // The chunks on the threads, each told where its leaves start in key order (its leaves counted first,
  // by a walk or from its split cells): the same numbers for any threads. Each leaf is its own slot, so
  // the threads write apart (a leaf's entry is read before it is written), and its place in the list of
  // levels.
  const auto [per_task, chunks, codes] = numbering_chunks();
  const auto tasks = static_cast<std::size_t>(chunks);
  std::vector<std::uint64_t> offset(tasks + 1, 0);
  const auto chunk = [&](std::size_t t) { return std::pair{t * per_task, std::min(codes, (t + 1) * per_task)}; };
  const bool counted = split_in_chunk.size() == tasks;
  core::parallel_for(threads, tasks, 1, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t t = b; t < e; ++t) {
      std::uint64_t count = 0;
      const auto [from, to] = chunk(t);
      if (counted) {
        for (std::uint64_t c = next_code_inside(from, coarse_.shape); c < to;
             c = next_code_inside(c + 1, coarse_.shape))
          ++count;
        count += 7 * split_in_chunk[t];
      } else {
        walk_codes(from, to, [&](int, std::size_t, std::uint64_t) { ++count; });
      }
      offset[t + 1] = count;
    }
  });
  for (std::size_t t = 0; t < tasks; ++t) offset[t + 1] += offset[t];
  if (offset[tasks] != n)
    throw core::Error::internal("octree: {} leaves counted in the numbering's chunks, {} in the tree", offset[tasks],
                                n);
  leaf_level_.resize(n);
  core::parallel_for(threads, tasks, 1, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t t = b; t < e; ++t) {
      std::uint64_t at = offset[t];
      const auto [from, to] = chunk(t);
      walk_codes(from, to, [&](int level, std::size_t s, std::uint64_t) {
        leaf_level_[at] = static_cast<std::int8_t>(level);
        first_child_[static_cast<std::size_t>(level)][s] = kLeafBit | static_cast<std::uint32_t>(at++);
      });
    }
  });
  numbering_chunk_ = per_task;
  offset.pop_back();  // each chunk's first leaf
  chunk_first_leaf_ = std::move(offset);
  numbered_ = true;
  numbered_leaves_ = n;
  return n;
}

std::uint64_t Octree::leaves_before(std::int64_t coarse_key) const {
  if (!numbered_) throw core::Error::internal("octree: leaves_before on a tree not numbered");
  if (coarse_key >= (std::int64_t{1} << 61)) return leaf_count();  // past every key
  const Cell c = cell_of_key(static_cast<std::uint64_t>(coarse_key), levels_);
  if (c.level != 0) throw core::Error::internal("octree: key {} is not a coarse cell's", coarse_key);
  int level = 0;
  auto s = static_cast<std::size_t>(coarse_.linear({c.index[0], c.index[1], c.index[2]}));
  for (std::int64_t k; (k = child_slot(level, s, 0)) >= 0; ++level) s = static_cast<std::size_t>(k);
  return leaf_number(level, s);
}

void Octree::forget_cell_codes() {
  has_codes_ = false;
  for (auto& codes : codes_) core::release(codes);
}

void Octree::split_cells(int level, const std::vector<std::int64_t>& slots, int threads) {
  // The parents in Morton order, each once: their children's codes (a child's code is its parent's
  // << 3 | octant) then come out in order, 8 consecutive slots each. Level 1 and above list their cells
  // in Morton order already, so ascending slots need no sort there.
  std::vector<std::pair<std::uint64_t, std::int64_t>> parent;  // (code, slot)
  parent.reserve(slots.size());
  for (const std::int64_t s : slots) parent.emplace_back(code_at_slot(level, static_cast<std::size_t>(s)), s);
  if (!std::is_sorted(parent.begin(), parent.end())) {  // by code: one code is one cell, one slot
    decltype(parent) scratch;
    core::radix_sort_by_used_bits(parent, scratch, [](const auto& p) { return p.first; });
  }
  parent.erase(std::unique(parent.begin(), parent.end()), parent.end());
  split_in_code_order(level, parent, true, threads);
}

void Octree::split_in_code_order(int level, const std::vector<std::pair<std::uint64_t, std::int64_t>>& parent,
                                 bool keep_codes, int threads) {
  const auto l = static_cast<std::size_t>(level);
  if (!first_child_[l + 1].empty()) throw core::Error::internal("octree: level {} split twice", level);
  if (8 * parent.size() >= kLeafBit)
    throw core::Error::usage("the octree would have more than 2^31 cells at level {}", level + 1);
  numbered_ = false;
  core::release(leaf_level_);
  has_codes_ = has_codes_ && keep_codes;
  // The i-th parent's children are slots 8i ... 8i + 7: every write has its own place, so the threads
  // write the new level (some 50-100 MB on the 2.1 M box's finer levels) apart.
  auto& first = first_child_[l];
  auto& children = codes_[l + 1];
  auto& below = first_child_[l + 1];
  if (keep_codes) children.resize(8 * parent.size());
  below.resize(8 * parent.size());
  core::parallel_for(threads, parent.size(), std::size_t{1} << 15, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      const auto [code, s] = parent[i];
      first[static_cast<std::size_t>(s)] = static_cast<std::uint32_t>(8 * i);
      std::fill_n(below.begin() + static_cast<std::ptrdiff_t>(8 * i), 8, kLeaf);
      if (keep_codes)
        for (std::uint64_t o = 0; o < 8; ++o) children[8 * i + o] = code << 3 | o;
    }
  });
}

namespace {

// Adds the leaves of split cell `c` that touch the side `dir` faces: along an axis where dir is +1 the
// touching children are the lower ones, -1 the upper ones, 0 both.
void add_touching_children(const Octree& tree, const Cell& c, const Index3& dir, std::vector<Cell>& out) {
  for (int o = 0; o < 8; ++o) {
    const int bit[3] = {o >> 2 & 1, o >> 1 & 1, o & 1};
    bool faces = true;
    for (std::size_t d = 0; d < 3; ++d) faces = faces && (dir[d] == 0 || bit[d] == (dir[d] > 0 ? 0 : 1));
    if (!faces) continue;
    const Cell k = child(c, o);
    if (tree.split(k))
      add_touching_children(tree, k, dir, out);
    else
      out.push_back(k);
  }
}

}  // namespace

std::vector<Cell> touching_leaves(const Octree& tree, const Cell& leaf) {
  std::vector<Cell> out;
  for_each_neighbour(leaf, [&](Cell n) {
    const Index3 dir{n.index[0] - leaf.index[0], n.index[1] - leaf.index[1], n.index[2] - leaf.index[2]};
    if (!tree.normalise(n)) return;
    if (tree.slot(n) < 0)
      out.push_back(tree.covering_leaf(n));
    else if (!tree.split(n))
      out.push_back(n);
    else
      add_touching_children(tree, n, dir, out);
  });
  const int levels = tree.levels();
  std::sort(out.begin(), out.end(),
            [levels](const Cell& a, const Cell& b) { return cell_key(a, levels) < cell_key(b, levels); });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(std::remove(out.begin(), out.end(), leaf), out.end());
  return out;
}

void check_refinement_options(int levels, double refine_particles, int buffer) {
  if (!(refine_particles > 0) || !std::isfinite(refine_particles))
    throw core::Error::usage("--refine {} must be a positive number of particle masses", refine_particles);
  if (levels < 0 || levels > kMaxLevels)
    throw core::Error::usage("--levels {} must be between 0 and {}", levels, kMaxLevels);
  if (buffer < 0 || buffer > kMaxBuffer)
    throw core::Error::usage("--buffer {} must be between 0 and {}", buffer, kMaxBuffer);
}

void check_refinement(const grid::GridGeometry& coarse, const RefinementParams& p) {
  check_refinement_options(p.levels, p.refine_particles, p.buffer);
  for (std::size_t d = 0; d < 3; ++d)
    if ((coarse.shape[d] << p.levels) > (std::int64_t{1} << kFinestAxisBits))
      throw core::Error::usage(
          "a {}-cell grid with {} levels of refinement has more than 2^{} cells per axis at its finest level",
          coarse.shape[d], p.levels, kFinestAxisBits);
  if (coarse.cells() >= (std::uint64_t{1} << 32))
    throw core::Error::usage("a coarse grid of 2^32 cells or more: give a coarser --grid and more --levels");
}

namespace {

// Where each particle is while the tree grows: the level of its cell at the finest level built so far
// (-1: outside an open grid) and that cell's slot. 5 bytes a particle, where its Cell would take 32.
struct ParticleCells {
  std::vector<std::int8_t> level;
  std::vector<std::uint32_t> slot;
};

// The mass of each existing cell of `level` from the particles inside that level's cells (their
// clouds at the level's cell size; the parts of clouds over coarser leaves are not counted).
core::PageVector<double> level_mass(const Octree& tree, int level, grid::Assignment a, std::span<const double> position,
                                    std::span<const double> mass, const ParticleCells& at, const PlaneRuns& runs) {
  // Zeros without a pass over them (14-25 MB a level on the 2.1 M box at four levels: the growing tree
  // holds only the heavy cells' octs and their buffers), each page faulting in on the thread that
  // first adds to it.
  core::PageVector<double> m = core::zeroed_page_vector<double>(tree.cells(level));
  const LevelLattice& lattice = tree.level_lattice(level);
  runs.sum(
      [&](std::size_t p, auto&& sink) {
        if (at.level[p] != level) return;
        const auto u = lattice.position({position[3 * p], position[3 * p + 1], position[3 * p + 2]});
        const grid::Weights1D w[3] = {grid::weights_1d(a, u[0]), grid::weights_1d(a, u[1]), grid::weights_1d(a, u[2])};
        for_each_cloud_cell(tree.coarse(), level, w, std::nullopt, [&](const Cell& t, const Index3&, double w3) {
          const std::int64_t s = tree.slot(t);
          if (s >= 0) sink(t.index[0] >> level, static_cast<std::size_t>(s), mass[p] * w3);
        });
      },
      [&](std::size_t s, double v) { m[s] += v; });
  return m;
}

// The cells of `level` over the threshold (`heavy`: codes, sorted), and the existing cells within
// `buffer` of them, which the first build splits to count the next level's masses (slots, ascending).
// On threads, each marking for its own chunk of cells (a mark is a 1 whoever makes it), so the result
// does not depend on them.
std::vector<std::int64_t> cells_to_split(const Octree& tree, int level, std::span<const double> m,
                                         const RefinementParams& p, int threads, std::vector<std::uint64_t>& heavy) {
  constexpr std::size_t kChunk = std::size_t{1} << 14;
  const double limit = p.refine_particles * p.particle_mass;
  std::vector<char> flag(m.size());
  heavy.clear();
  for (std::size_t s = 0; s < m.size(); ++s) {
    flag[s] = m[s] > limit;
    if (flag[s]) heavy.push_back(tree.code_at_slot(level, s));
  }
  if (level == 0) core::radix_sort_values(heavy);  // above level 0 the slots are in Morton order
  for (int round = 0; round < p.buffer; ++round) {
    std::vector<char> grown = flag;
    core::parallel_for(threads, m.size(), kChunk, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t s = b; s < e; ++s) {
        if (!flag[s]) continue;
        for_each_neighbour(tree.cell_at_slot(level, s), [&](Cell n) {
          if (!tree.normalise(n)) return;
          const std::int64_t t = tree.slot(n);
          if (t >= 0) std::atomic_ref<char>(grown[static_cast<std::size_t>(t)]).store(1, std::memory_order_relaxed);
        });
      }
    });
    flag.swap(grown);
  }
  std::vector<std::int64_t> out;
  for (std::size_t s = 0; s < m.size(); ++s)
    if (flag[s]) out.push_back(static_cast<std::int64_t>(s));
  return out;
}

}  // namespace

PlaneRuns particle_runs(const grid::GridGeometry& coarse, std::span<const double> position, int threads) {
  const std::size_t n = position.size() / 3;
  // The coarse plane of particle p (-1 outside an open grid).
  const LevelLattice level0(coarse, 0);
  const auto plane_of = [&](std::size_t p) {
    Cell c;
    return coarse_cell_of(coarse, level0, {position[3 * p], position[3 * p + 1], position[3 * p + 2]}, c)
               ? c.index[0]
               : std::int64_t{-1};
  };
  // Whether they come plane by plane, checked in chunks on the threads (each chunk from the particle
  // before it).
  std::atomic<bool> by_plane = threads > 1;
  if (by_plane)
    core::parallel_for(std::max(threads, 1), n, std::size_t{1} << 16, [&](std::size_t b, std::size_t e, int) {
      std::int64_t before = b > 0 ? plane_of(b - 1) : -1;
      for (std::size_t p = b; p < e && by_plane.load(std::memory_order_relaxed); ++p) {
        const std::int64_t plane = plane_of(p);
        if (plane < before) by_plane.store(false, std::memory_order_relaxed);
        before = plane;
      }
    });
  return PlaneRuns(n, by_plane ? threads : 1, plane_of);
}

namespace {

// The mass rule, level by level: the cells of each level over the threshold (codes). The tree it grows
// on the way, every heavy cell split with the cells within the buffer, is only the means to count the
// next level's masses.
LevelCodes heavy_cells(const grid::GridGeometry& coarse, const RefinementParams& params,
                       std::span<const double> position, std::span<const double> mass, int threads) {
  LevelCodes heavy(static_cast<std::size_t>(params.levels) + 1);
  Octree tree(coarse, params.levels);
  const PlaneRuns runs = particle_runs(coarse, position, threads);
  constexpr std::size_t kChunk = std::size_t{1} << 16;  // particles per task of the loops that write per particle
  ParticleCells at{std::vector<std::int8_t>(mass.size(), 0), std::vector<std::uint32_t>(mass.size(), 0)};
  core::parallel_for(threads, mass.size(), kChunk, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t p = b; p < e; ++p) {
      Cell c;
      if (!coarse_cell_of(coarse, tree.level_lattice(0), {position[3 * p], position[3 * p + 1], position[3 * p + 2]},
                          c))
        at.level[p] = -1;
      else
        at.slot[p] = static_cast<std::uint32_t>(coarse.linear({c.index[0], c.index[1], c.index[2]}));
    }
  });
  for (int level = 0; level < params.levels; ++level) {
    const core::PageVector<double> m = level_mass(tree, level, params.assignment, position, mass, at, runs);
    const auto l = static_cast<std::size_t>(level);
    const std::vector<std::int64_t> split = cells_to_split(tree, level, m, params, threads, heavy[l]);
    if (split.empty() || level + 1 == params.levels) break;  // no masses are counted on the finest level
    tree.split_cells(level, split, threads);
    core::parallel_for(threads, mass.size(), kChunk, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t p = b; p < e; ++p) {
        if (at.level[p] != level) continue;
        const std::int64_t first = tree.child_slot(level, at.slot[p], 0);
        if (first < 0) continue;
        const Cell child = child_holding(
            tree.cell_at_slot(level, at.slot[p]),
            tree.level_lattice(level + 1).position({position[3 * p], position[3 * p + 1], position[3 * p + 2]}));
        at.level[p] = static_cast<std::int8_t>(level + 1);
        at.slot[p] = static_cast<std::uint32_t>(first + octant_at(child.index, 0));
      }
    });
  }
  return heavy;
}

}  // namespace

LevelCodes balance_closure(const grid::GridGeometry& coarse, const RefinementParams& params,
                           const LevelCodes& flagged) {
  const auto levels = static_cast<std::size_t>(params.levels);
  LevelCodes required(levels + 1);
  for (std::size_t l = levels; l >= 1; --l) {
    // The parents of the cells that must be split at level l, grown by 1 + buffer on level l-1. Both
    // lists are sorted, and a parent's code is its child's >> 3, which keeps the order: a merge, no sort.
    const std::vector<std::uint64_t> none;
    const std::vector<std::uint64_t>& f = l < flagged.size() ? flagged[l] : none;
    std::vector<std::uint64_t> need(f.size() + required[l].size());
    std::merge(f.begin(), f.end(), required[l].begin(), required[l].end(), need.begin());
    for (std::uint64_t& c : need) c >>= 3;
    need.erase(std::unique(need.begin(), need.end()), need.end());
    required[l - 1] = dilate_codes(coarse, static_cast<int>(l) - 1, std::move(need), 1 + params.buffer);
  }
  return required;
}

Octree Octree::from_split_cells(const grid::GridGeometry& coarse, int levels, LevelCodes split, int threads) {
  // The cells' codes are at hand (sorted): the tree never holds them, its largest part (8 bytes a cell).
  Octree tree(coarse, levels);
  tree.forget_cell_codes();
  // The split cells of each numbering chunk (by their coarse cell's code), for number_leaves: counted
  // from the sorted codes at hand, where a walk of every leaf would count the leaves.
  const auto [per_chunk, chunks, codes_end] = tree.numbering_chunks();
  std::vector<std::uint64_t> split_in_chunk(static_cast<std::size_t>(chunks), 0);
  for (int level = 0; level < levels && static_cast<std::size_t>(level) < split.size(); ++level) {
    const std::vector<std::uint64_t>& codes = split[static_cast<std::size_t>(level)];
    std::vector<std::pair<std::uint64_t, std::int64_t>> parent;  // (code, slot), in code order
    parent.reserve(codes.size());
    // Siblings come one after another: a parent's first child is found once for them all.
    std::uint64_t last_parent = ~std::uint64_t{0};
    std::int64_t first_child = -1;
    std::size_t chunk = 0;  // the numbering chunk of the code's coarse cell (the codes ascend)
    std::uint64_t chunk_end = per_chunk;
    for (const std::uint64_t code : codes) {
      while ((code >> (3 * level)) >= chunk_end && chunk + 1 < split_in_chunk.size()) {
        ++chunk;
        chunk_end += per_chunk;
      }
      ++split_in_chunk[chunk];
      std::int64_t s = -1;
      if (level == 0) {
        s = tree.slot(Cell{0, index_of(code)});
      } else {
        if (code >> 3 != last_parent) {
          last_parent = code >> 3;
          const std::int64_t p = tree.slot(Cell{level - 1, index_of(last_parent)});
          first_child = p < 0 ? -1 : tree.child_slot(level - 1, static_cast<std::size_t>(p), 0);
        }
        if (first_child >= 0) s = first_child + static_cast<std::int64_t>(code & 7);
      }
      if (s < 0) {
        const Index3 i = index_of(code);
        throw core::Error::internal("octree: cell ({},{},{}) of level {} is to be split but its parent is not", i[0],
                                    i[1], i[2], level);
      }
      parent.emplace_back(code, s);
    }
    if (parent.empty()) break;
    if (std::adjacent_find(parent.begin(), parent.end(),
                           [](const auto& a, const auto& b) { return a.first >= b.first; }) != parent.end())
      throw core::Error::internal("octree: the cells to split at level {} are not sorted and distinct", level);
    core::release(split[static_cast<std::size_t>(level)]);
    tree.split_in_code_order(level, parent, false, threads);
  }
  core::release(split);
  tree.number_leaves(threads, split_in_chunk);
  return tree;
}

Octree build_octree(const grid::GridGeometry& coarse, const RefinementParams& params, std::span<const double> position,
                    std::span<const double> mass, int threads, const BalanceExchange* exchange) {
  check_refinement(coarse, params);
  const auto levels = static_cast<std::size_t>(params.levels);
  // Flagged: the heavy cells and those within the buffer of them, on each level's lattice (cells the
  // first build did not reach are flagged too: the balance makes them).
  // Each level's codes are let go once used: the heavy cells once dilated, the required ones once
  // merged, the flags once split (from_split_cells).
  LevelCodes flagged(levels + 1);
  {
    LevelCodes heavy = heavy_cells(coarse, params, position, mass, threads);
    // The levels apart, each on a thread (a level a task: each one's codes alone decide its own).
    core::parallel_for(threads, levels, 1, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t l = b; l < e; ++l)
        flagged[l] = dilate_codes(coarse, static_cast<int>(l), std::move(heavy[l]), params.buffer);
    });
  }
  if (exchange) flagged = exchange->share(std::move(flagged));
  LevelCodes required = balance_closure(coarse, params, flagged);
  core::parallel_for(threads, levels, 1, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t l = b; l < e; ++l) {
      std::vector<std::uint64_t>& f = flagged[l];
      f.insert(f.end(), required[l].begin(), required[l].end());
      std::inplace_merge(f.begin(), f.end() - static_cast<std::ptrdiff_t>(required[l].size()), f.end());
      f.erase(std::unique(f.begin(), f.end()), f.end());
      core::release(required[l]);
    }
  });
  return Octree::from_split_cells(coarse, params.levels, std::move(flagged), threads);
}

}  // namespace phew::mesh
