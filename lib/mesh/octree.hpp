// An adaptive mesh: an octree over every cell of a coarse grid, refined where the particles are, as
// RAMSES refines on particles (m_refine, nexpand; docs/thresholds.md, "An adaptive mesh").
//
// Level 0 is the coarse grid (any shape, periodic or a region of an open box). A cell of level l is
// heavy when it holds more than `refine_particles` particles' worth of mass, counted with the
// assignment kernel at the cell's own size from the particles inside that level's cells (RAMSES'
// m_refine); the cells within `buffer` cells of a heavy cell are flagged with it (RAMSES' nexpand).
// RAMSES' balance then works from the finest level down (its flag_fine: test_flag, then smooth_fine):
// the parent of every cell flagged or required at level l+1 is required at level l with the cells
// within 1 + `buffer` of it. Every flagged and required cell is split: the coarser neighbours of a split
// cell are split rather than the split declined, so leaves touching by a face, an edge or a corner differ
// by one level at most, and the threshold surface around a refined core is resolved as RAMSES resolves
// it. Up to `levels` levels above the coarse grid.
//
// The masses are counted level by level on the tree that the heavy cells and their buffers make (the
// cells a level's masses come from are those the coarser levels split); the balance is then closed once
// over those flags. RAMSES reaches its mesh step by step as it runs, re-counting the masses of the cells
// the balance made; counting them once more changes nothing on the shared RAMSES run and 1 % of the
// leaves on a clustered benchmark box (docs/thresholds.md, "An adaptive mesh").
//
// This is the core within one process: the tree of its particles, in their order. The sums of each
// level and of each leaf run in the particles' order, on any number of threads (plane_runs.hpp), so the
// same particles in the same order give the same bits.
#pragma once

#include <phew/core/raw_vector.hpp>
#include <phew/grid/assignment.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mesh/cell_key.hpp>
#include <phew/mesh/leaf_run.hpp>
#include <phew/mesh/level_lattice.hpp>
#include <phew/mesh/plane_runs.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace phew::mesh {

struct RefinementParams {
  int levels = 0;               // levels above the coarse grid (RAMSES: levelmax - levelmin)
  double refine_particles = 8;  // split a cell holding more than this many particles' mass (m_refine)
  double particle_mass = 1;     // the mass of one particle for refine_particles (RAMSES' mass_sph)
  int buffer = 1;               // cells around a split cell also split (nexpand)
  grid::Assignment assignment = grid::Assignment::cic;
};

// A cell's indices wrapped into its level's lattice (periodic), or false when it lies outside an open grid.
bool normalise_cell(const grid::GridGeometry& coarse, Cell& c);

// A cloud's cells along axis d of the level-`level` lattice (the 1-3 cells its kernel spans,
// grid::weights_1d): normalise_cell one axis at a time. Each one's index wrapped into the lattice, and
// whether it is kept: inside an open grid and, unless `coarse_index` is -1, inside that coarse cell's
// index along the axis.
struct CloudAxis {
  std::array<std::int64_t, 3> index;
  std::array<bool, 3> kept;
};
inline CloudAxis cloud_axis(const grid::GridGeometry& coarse, int level, std::size_t d, const grid::Weights1D& w,
                            std::int64_t coarse_index = -1) {
  CloudAxis a{};
  const std::int64_t n = coarse.shape[d] << level;
  for (int i = 0; i < w.width; ++i) {
    std::int64_t j = w.first + i;
    bool in = true;
    if (j < 0 || j >= n) {
      if (coarse.periodic)
        j = ((j % n) + n) % n;
      else
        in = false;
    }
    a.index[static_cast<std::size_t>(i)] = j;
    a.kept[static_cast<std::size_t>(i)] = in && (coarse_index < 0 || (j >> level) == coarse_index);
  }
  return a;
}

// Calls f(cell, unwrapped indices, weight) for each cell of a cloud on the level-`level` lattice (its
// kernel's weights along the axes, w) that cloud_axis keeps (inside coarse cell `coarse` only, when
// given), x slowest: cell normalised, weight the product of the three weights.
template <typename F>
void for_each_cloud_cell(const grid::GridGeometry& g, int level, const grid::Weights1D (&w)[3],
                         const std::optional<Index3>& coarse, F&& f) {
  const CloudAxis axis[3] = {cloud_axis(g, level, 0, w[0], coarse ? (*coarse)[0] : -1),
                             cloud_axis(g, level, 1, w[1], coarse ? (*coarse)[1] : -1),
                             cloud_axis(g, level, 2, w[2], coarse ? (*coarse)[2] : -1)};
  for (std::size_t i = 0; i < static_cast<std::size_t>(w[0].width); ++i) {
    if (!axis[0].kept[i]) continue;
    for (std::size_t j = 0; j < static_cast<std::size_t>(w[1].width); ++j) {
      if (!axis[1].kept[j]) continue;
      for (std::size_t k = 0; k < static_cast<std::size_t>(w[2].width); ++k) {
        if (!axis[2].kept[k]) continue;
        f(Cell{level, {axis[0].index[i], axis[1].index[j], axis[2].index[k]}},
          Index3{w[0].first + static_cast<long>(i), w[1].first + static_cast<long>(j),
                 w[2].first + static_cast<long>(k)},
          w[0].w[i] * w[1].w[j] * w[2].w[k]);
      }
    }
  }
}

// Which cells exist and which are split. Level 0: every cell of the coarse grid. Level l > 0: the
// children of the split cells of level l-1, sorted by their Morton order on the level-l lattice.
class Octree {
 public:
  Octree(const grid::GridGeometry& coarse, int levels);
  // The tree whose leaves include `leaves` (every ancestor of each is split): the whole mesh, or the part
  // of it a rank holds (its coarse cells and those around them; elsewhere the coarse cells stay leaves).
  static Octree from_leaves(const grid::GridGeometry& coarse, int levels, const std::vector<Cell>& leaves);
  // The tree whose split cells are `split` (Morton codes per level, sorted; each one's parent split),
  // without its cells' codes (forget_cell_codes). Each level's codes are let go once split.
  static Octree from_split_cells(const grid::GridGeometry& coarse, int levels,
                                 std::vector<std::vector<std::uint64_t>> split, int threads = 1);

  const grid::GridGeometry& coarse() const { return coarse_; }
  const LevelLattice& level_lattice(int level) const { return lattice_[static_cast<std::size_t>(level)]; }
  int levels() const { return levels_; }
  // Cells per axis of the level-l lattice.
  Index3 lattice(int level) const;
  // The size of a cell of level l along each axis.
  std::array<double, 3> cell_size(int level) const;
  double cell_volume(int level) const;

  // The cell's indices wrapped into the lattice (periodic), or false when it lies outside an open grid.
  bool normalise(Cell& c) const { return normalise_cell(coarse_, c); }
  // Whether a (normalised) cell exists, and whether it is split. -1 when it does not exist.
  std::int64_t slot(const Cell& c) const {  // inline: the deposit asks for every cell of every cloud
    int leaf_level = 0;
    std::int64_t leaf_slot = 0;
    return slot_or_leaf(c, leaf_level, leaf_slot);
  }
  // The same walk, which for a cell that does not exist also gives the leaf covering it (its level
  // and slot): covering_leaf without walking down again from the coarse cell once per level.
  std::int64_t slot_or_leaf(const Cell& c, int& leaf_level, std::int64_t& leaf_slot) const {
    std::int64_t s = coarse_.linear({c.index[0] >> c.level, c.index[1] >> c.level, c.index[2] >> c.level});
    for (int l = 0; l < c.level; ++l) {
      const std::uint32_t first = first_child_[static_cast<std::size_t>(l)][static_cast<std::size_t>(s)];
      if (first & kLeafBit) {
        leaf_level = l;
        leaf_slot = s;
        return -1;
      }
      s = static_cast<std::int64_t>(first) + octant_at(c.index, c.level - l - 1);  // the level-(l+1) ancestor
    }
    return s;
  }
  bool split(const Cell& c) const;
  // The slot of child `octant` of the cell in slot s of a level, or -1 when that cell is a leaf: a walk
  // down the tree without searching.
  std::int64_t child_slot(int level, std::size_t s, int octant) const {
    const std::uint32_t first = first_child_[static_cast<std::size_t>(level)][s];
    return (first & kLeafBit) ? -1 : static_cast<std::int64_t>(first) + octant;
  }
  // The leaf in slot s of a level: its place in key order (number_leaves). Not for split cells.
  std::uint32_t leaf_number(int level, std::size_t s) const {
    return first_child_[static_cast<std::size_t>(level)][s] & ~kLeafBit;
  }
  // The cell in a slot of a level (slot() inverted).
  Cell cell_at_slot(int level, std::size_t s) const;
  // Its Morton code on its level's lattice (cell_key.hpp's morton3 of its indices), as the tree holds it.
  std::uint64_t code_at_slot(int level, std::size_t s) const;
  // The leaf that holds a (normalised) cell of level `c.level` or a part of it: the cell itself, or the
  // coarser leaf it lies in. Not for split cells (their leaves are finer).
  Cell covering_leaf(Cell c) const;
  // The leaf holding a point of the grid (the grid's NGP rule at every level), or level -1 outside an open grid.
  Cell leaf_at(const std::array<double, 3>& x) const;

  std::uint64_t cells(int level) const;  // existing cells of a level
  std::uint64_t leaf_count() const;
  // Every leaf in key order (cell_key): the canonical order of the mesh; as keys (8 bytes a leaf, where
  // a Cell takes 32), on `threads` threads. The tree must be numbered.
  std::vector<Cell> leaves() const;
  std::vector<std::uint64_t> leaf_keys(int threads = 1) const;
  // Numbers the leaves in key order, each in its own slot (leaf_number), and lists their levels in that
  // order, on `threads` threads; the trees build_octree, from_leaves and from_split_cells make are
  // numbered. Returns the number of leaves. Error(usage) beyond 2^31 - 1 leaves.
  std::uint64_t number_leaves(int threads = 1);
  // The same, each numbering chunk's split cells already counted (`split_in_chunk`, numbering_chunks()'s
  // chunks): its leaves are its coarse cells and 7 more a split cell, so only one walk is made.
  std::uint64_t number_leaves(int threads, const std::vector<std::uint64_t>& split_in_chunk);
  // The chunks of coarse Morton codes the numbering runs on: `codes` each, `count` of them, over the
  // codes [0, `end`) of the cube of a power of two holding the coarse grid.
  struct NumberingChunks {
    std::uint64_t codes, count, end;
  };
  NumberingChunks numbering_chunks() const;
  bool numbered() const { return numbered_; }
  // The leaves numbered [first, last) as a LeafRun (their levels, copied from the numbering's list; the
  // keys follow).
  LeafRun leaf_run(std::uint64_t first, std::uint64_t last) const;
  // The same, the numbering's list of levels handed over (moved when the run is every leaf): the tree
  // holds no levels after (leaf_run no longer works), so the run's bytes are not held twice.
  LeafRun take_leaf_run(std::uint64_t first, std::uint64_t last);
  // The leaves before the key of a coarse cell in key order (the number of the cell's first leaf), or
  // every leaf for a key past them all (CoarseRuns' last cut). The tree must be numbered.
  std::uint64_t leaves_before(std::int64_t coarse_key) const;

  // Lets go of the cells' Morton codes (8 bytes a cell), once the tree is built: everything but
  // cell_at_slot() and split_cells() still works (deposit_on_leaves, leaf_keys).
  void forget_cell_codes();

  // Used while building, once per level: splits the given existing cells of the finest level so far (in
  // any order), on `threads` threads. The leaves' numbers are then gone.
  void split_cells(int level, const std::vector<std::int64_t>& slots, int threads = 1);

 private:
  grid::GridGeometry coarse_;
  int levels_;
  std::vector<LevelLattice> lattice_;  // per level
  // Per level: Morton codes of the existing cells on the level's lattice (level 0: empty, all exist),
  // and for each cell (level 0: by linear index) the slot of its first child, or for a leaf kLeafBit
  // with its number in key order beside it (kLeaf before the leaves are numbered), as RAMSES' son array
  // holds 0 for a leaf: no second array for the leaves' places. Children of a split cell are 8
  // consecutive slots in octant order (a child's code is its parent's code << 3 | octant), so a cell's
  // slot is found from its coarse cell down, one step per level.
  static constexpr std::uint32_t kLeafBit = std::uint32_t{1} << 31;
  static constexpr std::uint32_t kLeaf = ~std::uint32_t{0};
  // (Raw: filled on the threads when a level is split, not zeroed first on one.)
  std::vector<core::RawVector<std::uint64_t>> codes_;
  std::vector<core::RawVector<std::uint32_t>> first_child_;
  bool numbered_ = false;
  std::uint64_t numbered_leaves_ = 0;
  // The numbering's: each leaf's level in key order (1 byte a leaf), and the chunks of coarse codes it
  // numbered on the threads (`numbering_chunk_` codes each), with the number of each chunk's first leaf.
  std::vector<std::int8_t> leaf_level_;
  std::uint64_t numbering_chunk_ = 0;
  std::vector<std::uint64_t> chunk_first_leaf_;
  // The key of the leaf numbered n (n < leaf_count()): its chunk found by its number, then walked.
  std::uint64_t key_of_leaf(std::uint64_t n) const;
  // Error(internal) unless the tree is numbered and still holds the numbering's levels.
  void check_levels_listed() const;
  bool has_codes_ = true;  // codes_ lists every cell (not after forget_cell_codes)
  // Splits the cells of a level given as (code, slot), in code order, each once; their children's codes
  // are kept only when asked (split_cells needs them to split the next level).
  void split_in_code_order(int level, const std::vector<std::pair<std::uint64_t, std::int64_t>>& parent,
                           bool keep_codes, int threads);

  // Calls f(level, slot, code) for the leaves of the subtree of the cell in slot s of a level (code: its
  // Morton code), in key order.
  template <typename F>
  void walk_subtree(int level, std::size_t s, std::uint64_t code, F& f) const;
  // Calls f(level, slot, code) for the leaves of the coarse cells whose Morton codes lie in [b, e), in key
  // order.
  template <typename F>
  void walk_codes(std::uint64_t b, std::uint64_t e, F&& f) const;
  // Calls f(number, level, code) for every leaf of a numbered tree, in no particular order, on threads.
  template <typename F>
  void for_each_numbered_leaf(int threads, F&& f) const;
};

// The leaves that touch `leaf` by a face, an edge or a corner (PHEW's neighbours on an adaptive mesh,
// Bleuler et al. 2015, Sec. 2.1: the same level, one level up, one level down), each once, in key
// order; across the periodic boundary, not the leaf itself.
std::vector<Cell> touching_leaves(const Octree& tree, const Cell& leaf);

// The coarse cell holding a point, wrapped into a periodic grid (the grid's NGP rule), or false when it
// lies outside an open grid. `level0`: LevelLattice(coarse, 0) of the same grid, made once for a loop.
bool coarse_cell_of(const grid::GridGeometry& coarse, const LevelLattice& level0, const std::array<double, 3>& x,
                    Cell& c);

// The refinement options' own rules, checked once for every caller (cic-project's option check and the
// octree's build): --levels from 0 to kMaxLevels, --refine a positive finite number of particle masses,
// --buffer from 0 to kMaxBuffer. Throws Error(usage).
inline constexpr int kMaxBuffer = 8;
void check_refinement_options(int levels, double refine_particles, int buffer);
// Those, and what the coarse grid adds: a finest lattice beyond 2^19 cells per axis, a coarse grid of
// 2^32 cells or more. Throws Error(usage).
void check_refinement(const grid::GridGeometry& coarse, const RefinementParams& params);

// The particles cut into runs of whole coarse planes for `threads` threads (plane_runs.hpp), when they
// come plane by plane (the deposit's canonical order, coarse cell by coarse cell); else one run.
PlaneRuns particle_runs(const grid::GridGeometry& coarse, std::span<const double> position, int threads);

// Cells of each level's lattice by their Morton codes (a child's code is its parent's << 3 | octant),
// sorted, per level 0..levels.
using LevelCodes = std::vector<std::vector<std::uint64_t>>;

// RAMSES' balance, from the finest level down: the cells that must be split at each level because of
// the flags of finer levels: at level l the cells within 1 + buffer of the parent of a cell flagged, or
// required, at level l+1. Cells need not exist yet.
LevelCodes balance_closure(const grid::GridGeometry& coarse, const RefinementParams& params, const LevelCodes& flagged);

// How the ranks close the balance together, each on the window of particles it holds
// (amr_deposit.cpp): `share` turns the flags a rank found on its window into those of every cell of the
// window as the rank owning the cell found them. One process: none.
struct BalanceExchange {
  std::function<LevelCodes(LevelCodes)> share;
};

// Builds the tree over particles (positions [n][3], masses [n]) by the rule above. Positions of a
// periodic grid are expected wrapped into it; particles outside an open grid are ignored. On `threads`
// threads when the particles come coarse plane by coarse plane, with the bits of one.
// Throws Error(usage) when levels exceeds kMaxLevels or the finest lattice would exceed 2^19 cells per axis.
Octree build_octree(const grid::GridGeometry& coarse, const RefinementParams& params, std::span<const double> position,
                    std::span<const double> mass, int threads = 1, const BalanceExchange* exchange = nullptr);

// The leaves' masses: each particle's cloud (the assignment kernel at the size of the particle's own
// leaf) shared among the leaves it overlaps, in proportion to the kernel's integral over each leaf:
// over a leaf of the same level the usual kernel weight, over a coarser leaf the weights of the
// cells of the particle's level inside it, over finer leaves the integral over each. The total mass is
// conserved (a periodic grid; on an open grid, the parts of clouds outside it are dropped, as on the
// uniform grid). Masses per leaf, in the order of tree.leaves().
std::vector<double> deposit_on_leaves(const Octree& tree, grid::Assignment assignment, std::span<const double> position,
                                      std::span<const double> mass);
// On `threads` threads, as build_octree: the same bits. The tree must be numbered (Octree::numbered).
std::vector<double> deposit_on_leaves(const Octree& tree, grid::Assignment assignment, std::span<const double> position,
                                      std::span<const double> mass, int threads);
// The same sums handed over as they complete, never held whole, for the leaves numbered [first, last)
// only (a rank's run). The particles must come filed by coarse cell (linear index ascending, as the
// deposit's canonical order has them). The coarse planes are cut into runs of about equal numbers of
// particles, one a thread: inside a run each particle adds its cloud to the leaves of the planes
// strictly inside it, in their order; the coarse cells of a run's first and last planes gather their
// sums from the particles of the 27 cells around each, in their order. Each coarse cell's sums are
// handed to complete(first leaf, masses, thread) whole (leaves [first leaf, first leaf +
// masses.size()), each leaf once; `thread` in [0, threads), the one making the call: calls come at once
// from different threads, on different leaves). The same bits as deposit_on_leaves. The particles are
// taken, and their pages go back once the cells around their coarse plane are done. Throws
// Error(internal) for particles not filed.
using CompleteLeaves = std::function<void(std::uint64_t first, std::span<const double> masses, int thread)>;
void deposit_on_leaves_streamed(const Octree& tree, grid::Assignment assignment, core::RawVector<double> position,
                                core::RawVector<double> mass, int threads, std::uint64_t first, std::uint64_t last,
                                const CompleteLeaves& complete);

}  // namespace phew::mesh
