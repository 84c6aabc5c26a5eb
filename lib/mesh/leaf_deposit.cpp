// Cloud in leaves: each particle's cloud, at the size of its own leaf, shared among the leaves it
// overlaps (octree.hpp, deposit_on_leaves).
#include <phew/mesh/octree.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>

#include <algorithm>
#include <bit>
#include <atomic>
#include <cmath>
#include <optional>
#include <ranges>

namespace phew::mesh {
namespace {

// The integral of a particle's 1-D kernel (centred at u, in cells of the particle's level) over [lo, hi].
// The kernels are those of lib/grid/assignment.hpp: over one whole cell these integrals are its weights.
double kernel_integral(grid::Assignment a, double u, double lo, double hi) {
  switch (a) {
    case grid::Assignment::ngp:
      return lo <= u && u < hi ? 1.0 : 0.0;
    case grid::Assignment::cic:
      return std::max(0.0, std::min(hi, u + 0.5) - std::max(lo, u - 0.5));
    case grid::Assignment::tsc: {
      // A triangle of half-width 1 and height 1 (the top hat convolved with itself): its cumulative integral.
      const auto cumulative = [](double t) {
        if (t <= -1) return 0.0;
        if (t <= 0) return 0.5 * (t + 1) * (t + 1);
        if (t <= 1) return 1.0 - 0.5 * (1 - t) * (1 - t);
        return 1.0;
      };
      return cumulative(hi - u) - cumulative(lo - u);
    }
  }
  return 0.0;
}

struct LeafCloud {
  grid::Assignment assignment;
  int level;                // the particle's leaf level: the unit of u
  std::array<double, 3> u;  // position in cells of that level
  double mass;
};

// Where each particle's cloud goes: the leaves (as their places in the output) and the mass each gets,
// handed to a sink(coarse plane, leaf, mass) (plane_runs.hpp: the threads' sums in the particles' order).
class LeafDeposit {
 public:
  explicit LeafDeposit(const Octree& tree) : tree_(tree) {}

  // A particle's cloud at the size of the leaf it lies in; nothing outside an open grid.
  template <typename Sink>
  void add_particle(grid::Assignment a, const std::array<double, 3>& x, double mass, Sink&& sink) const {
    const Cell leaf = tree_.leaf_at(x);
    if (leaf.level < 0) return;
    add({a, leaf.level, tree_.level_lattice(leaf.level).position(x), mass}, sink);
  }

  template <typename Sink>
  void add(const LeafCloud& c, Sink&& sink) const {
    add_where(c, std::nullopt, [&](const Cell& t, int level, std::int64_t slot, double m) {
      // Every leaf the cell gives mass to lies in its coarse cell (an ancestor, or descendants).
      sink(t.index[0] >> t.level, static_cast<std::size_t>(tree_.leaf_number(level, static_cast<std::size_t>(slot))),
           m);
    });
  }

  // The terms of the cloud's cells t (normalised, of the cloud's level), those inside coarse cell
  // `coarse` only when it is given, in the order add() makes them: add_at(t, leaf level, leaf slot, mass).
  template <typename AddAt>
  void add_where(const LeafCloud& c, const std::optional<Index3>& coarse, AddAt&& add_at) const {
    const grid::Weights1D w[3] = {grid::weights_1d(c.assignment, c.u[0]), grid::weights_1d(c.assignment, c.u[1]),
                                  grid::weights_1d(c.assignment, c.u[2])};
    // Outside an open grid: dropped, as on the uniform grid.
    for_each_cloud_cell(tree_.coarse(), c.level, w, coarse, [&](const Cell& t, const Index3& unwrapped, double w3) {
      const auto at = [&](int level, std::int64_t slot, double m) { add_at(t, level, slot, m); };
      const double weight = c.mass * w3;
      int leaf_level = 0;
      std::int64_t leaf_slot = 0;
      const std::int64_t s = tree_.slot_or_leaf(t, leaf_level, leaf_slot);
      if (s < 0) {
        at(leaf_level, leaf_slot, weight);  // a coarser leaf: the whole cell's weight
      } else if (tree_.child_slot(t.level, static_cast<std::size_t>(s), 0) < 0) {
        at(t.level, s, weight);
      } else {
        const std::array<double, 3> lower{static_cast<double>(unwrapped[0]), static_cast<double>(unwrapped[1]),
                                          static_cast<double>(unwrapped[2])};
        share_among_children(c, t.level, s, lower, 1.0, at);
      }
    });
  }

 private:
  // A split cell (in `slot` of `level`; its unwrapped lower corner `lower` and size `size` in the
  // cloud's cell units): each child gets the kernel's integral over it.
  template <typename AddAt>
  void share_among_children(const LeafCloud& c, int level, std::int64_t slot, const std::array<double, 3>& lower,
                            double size, const AddAt& add_at) const {
    const double half = 0.5 * size;
    // The kernel's integral over each half of the cell along each axis, once: the children's weights
    // are their products (the same products, in the same order, as three integrals a child).
    double along[3][2];
    for (std::size_t d = 0; d < 3; ++d)
      for (std::size_t h = 0; h < 2; ++h) {
        const double lo = lower[d] + half * static_cast<double>(h);
        along[d][h] = kernel_integral(c.assignment, c.u[d], lo, lo + half);
      }
    for (int o = 0; o < 8; ++o) {
      const std::array<double, 3> lo{lower[0] + half * (o >> 2 & 1), lower[1] + half * (o >> 1 & 1),
                                     lower[2] + half * (o & 1)};
      const double w = along[0][o >> 2 & 1] * along[1][o >> 1 & 1] * along[2][o & 1];
      if (w == 0) continue;
      const std::int64_t k = tree_.child_slot(level, static_cast<std::size_t>(slot), o);
      if (tree_.child_slot(level + 1, static_cast<std::size_t>(k), 0) >= 0)
        share_among_children(c, level + 1, k, lo, half, add_at);
      else
        add_at(level + 1, k, c.mass * w);
    }
  }

  const Octree& tree_;
};

}  // namespace

std::vector<double> deposit_on_leaves(const Octree& tree, grid::Assignment assignment, std::span<const double> position,
                                      std::span<const double> mass) {
  return deposit_on_leaves(tree, assignment, position, mass, 1);
}

std::vector<double> deposit_on_leaves(const Octree& tree, grid::Assignment assignment, std::span<const double> position,
                                      std::span<const double> mass, int threads) {
  if (!tree.numbered()) throw core::Error::internal("deposit_on_leaves: the tree's leaves are not numbered");
  std::vector<double> out(tree.leaf_count(), 0.0);
  const LeafDeposit deposit(tree);
  particle_runs(tree.coarse(), position, threads)
      .sum(
          [&](std::size_t p, auto&& sink) {
            deposit.add_particle(assignment, {position[3 * p], position[3 * p + 1], position[3 * p + 2]}, mass[p],
                                 sink);
          },
          [&](std::size_t leaf, double m) { out[leaf] += m; });
  return out;
}

namespace {

// The number of the first or the last leaf of a coarse cell (linear index): its leaves are one run of
// the key order, from its first child's first child ... to its last child's last child.
std::uint64_t end_leaf(const Octree& tree, std::int64_t coarse_cell, int octant) {
  int level = 0;
  auto s = static_cast<std::size_t>(coarse_cell);
  for (std::int64_t k; (k = tree.child_slot(level, s, octant)) >= 0; ++level) s = static_cast<std::size_t>(k);
  return tree.leaf_number(level, s);
}

// A particle's leaf level and the coarse cells around its own that its cloud reaches: bit 2d the one
// below along axis d, bit 2d + 1 the one above (a cloud is at most one cell of its level wide, and its
// level's cells lie inside coarse cells, so it reaches no further). Level -1: outside an open grid.
struct Reach {
  std::int8_t level = -1;
  std::uint8_t sides = 0;
};

// The bits a particle in coarse cell P needs to reach cell P + delta.
std::uint8_t sides_needed(const std::array<int, 3>& delta) {
  std::uint8_t need = 0;
  for (std::size_t d = 0; d < 3; ++d)
    if (delta[d] != 0) need |= static_cast<std::uint8_t>(1u << (2 * d + (delta[d] > 0 ? 1 : 0)));
  return need;
}

// Runs of planes per thread of the deposit (deposit_on_leaves_streamed): fewer and longer runs leave
// more planes to be summed particle by particle; more keep the threads on planes near each other, so
// the densities' huge pages (each spanning 20-40 coarse planes of the Morton order) fill in as the
// particles' pages go back. On the 2.1 M box at two threads, medians of six alternating runs: one run
// a thread 0.236 s of deposit and a 304 MiB peak, two 0.251 s and 298 MiB, four 0.254 s and 284 MiB;
// sixteen runs a thread of equal numbers of planes, all gathered, took 0.35 s (276 MiB).
constexpr int kRunsPerThread = 4;

// Where the particles of each cell of one coarse plane begin (particles filed by coarse cell): the
// cell (y, z)'s are [begin[y nz + z], begin[y nz + z + 1]).
struct PlaneCells {
  std::int64_t plane = -1;
  std::vector<std::size_t> begin;
  // Per cell, the sides any of its particles' clouds reach (Reach::sides, or-ed): a cell around one
  // whose particles together lack a side it needs has none that reaches it, and is not scanned.
  std::vector<std::uint8_t> sides;
};

}  // namespace

void deposit_on_leaves_streamed(const Octree& tree, grid::Assignment assignment, core::RawVector<double> position,
                                core::RawVector<double> mass, int threads, std::uint64_t first, std::uint64_t last,
                                const CompleteLeaves& complete) {
  if (!tree.numbered()) throw core::Error::internal("deposit_on_leaves: the tree's leaves are not numbered");
  const grid::GridGeometry& g = tree.coarse();
  const std::size_t n = mass.size();
  const LevelLattice level0(g, 0);
  const auto coarse_of = [&](std::size_t p, Cell& c) {
    return coarse_cell_of(g, level0, {position[3 * p], position[3 * p + 1], position[3 * p + 2]}, c);
  };
  const auto linear_of = [&](std::size_t p) {
    Cell c;
    return coarse_of(p, c) ? g.linear({c.index[0], c.index[1], c.index[2]}) : std::int64_t{-1};
  };
  threads = std::max(threads, 1);

  const std::int64_t nx = g.shape[0], ny = g.shape[1], nz = g.shape[2];
  // A lattice of at most 2 cells along a periodic axis: the cells around one may be one cell, reached
  // from either side; every particle is then offered to the exact test below.
  const bool tiny = g.periodic && (nx <= 2 || ny <= 2 || nz <= 2);

  // Each particle's leaf level and reach, on threads; and that they come filed by coarse cell.
  std::vector<Reach> reach(n);
  std::atomic<bool> filed = true;
  core::parallel_for(threads, n, std::size_t{1} << 14, [&](std::size_t b, std::size_t e, int) {
    std::int64_t before = b > 0 ? linear_of(b - 1) : -1;
    for (std::size_t p = b; p < e; ++p) {
      const std::array<double, 3> x{position[3 * p], position[3 * p + 1], position[3 * p + 2]};
      const Cell leaf = tree.leaf_at(x);  // inside its coarse cell (leaf_at walks down from it)
      const std::int64_t cell =
          leaf.level < 0
              ? -1
              : g.linear({leaf.index[0] >> leaf.level, leaf.index[1] >> leaf.level, leaf.index[2] >> leaf.level});
      if (cell < before) filed.store(false, std::memory_order_relaxed);
      before = cell;
      if (leaf.level < 0) continue;
      const std::array<double, 3> u = tree.level_lattice(leaf.level).position(x);
      Reach r{static_cast<std::int8_t>(leaf.level), 0};
      for (std::size_t d = 0; d < 3; ++d) {
        const grid::Weights1D w = grid::weights_1d(assignment, u[d]);
        const std::int64_t own = leaf.index[d] >> leaf.level;
        const std::int64_t low = (w.first >> leaf.level) - own, high = ((w.first + w.width - 1) >> leaf.level) - own;
        if (low < -1 || high > 1)
          throw core::Error::internal("deposit: a cloud of level {} reaches {} coarse cells away", leaf.level,
                                      std::max(-low, high));
        if (low < 0) r.sides |= static_cast<std::uint8_t>(1u << (2 * d));
        if (high > 0) r.sides |= static_cast<std::uint8_t>(1u << (2 * d + 1));
      }
      reach[p] = r;
    }
  });
  if (!filed) throw core::Error::internal("deposit_on_leaves_streamed: the particles are not filed by coarse cell");

  // Where each coarse plane's particles begin (planes ascend with the particles).
  const auto plane_of = [&](std::size_t p) {
    Cell c;
    return coarse_of(p, c) ? c.index[0] : std::int64_t{-1};
  };
  std::vector<std::size_t> plane_begin(static_cast<std::size_t>(nx) + 1);
  for (std::int64_t x = 0; x <= nx; ++x)
    plane_begin[static_cast<std::size_t>(x)] = *std::ranges::partition_point(
        std::views::iota(std::size_t{0}, n), [&](std::size_t p) { return plane_of(p) < x; });
  const auto plane_cells = [&](std::int64_t plane, PlaneCells& out) {
    out.plane = plane;
    out.begin.assign(static_cast<std::size_t>(ny * nz) + 1, 0);
    out.sides.assign(static_cast<std::size_t>(ny * nz), 0);
    const std::size_t b = plane_begin[static_cast<std::size_t>(plane)],
                      e = plane_begin[static_cast<std::size_t>(plane) + 1];
    std::size_t next = 0;  // the next cell whose beginning is not set yet
    for (std::size_t p = b; p < e; ++p) {
      Cell c;
      coarse_of(p, c);
      const auto cell = static_cast<std::size_t>(c.index[1] * nz + c.index[2]);
      while (next <= cell) out.begin[next++] = p;
      if (reach[p].level >= 0) out.sides[cell] |= reach[p].sides;
    }
    while (next < out.begin.size()) out.begin[next++] = e;
  };
  // A plane's particles go back once the planes that read them, it and those beside it, are done.
  std::vector<std::atomic<std::uint8_t>> done(static_cast<std::size_t>(nx)), released(static_cast<std::size_t>(nx));
  const auto wrap = [&](std::int64_t x) { return g.periodic ? (x + nx) % nx : x; };
  const auto finished = [&](std::int64_t x) {
    return x < 0 || x >= nx || done[static_cast<std::size_t>(x)].load(std::memory_order_acquire) != 0;
  };
  const auto plane_done = [&](std::int64_t x) {
    done[static_cast<std::size_t>(x)].store(1, std::memory_order_release);
    for (int d = -1; d <= 1; ++d) {
      const std::int64_t q = wrap(x + d);
      if (q < 0 || q >= nx || !finished(wrap(q - 1)) || !finished(q) || !finished(wrap(q + 1))) continue;
      if (released[static_cast<std::size_t>(q)].exchange(1) != 0) continue;
      const std::size_t b = plane_begin[static_cast<std::size_t>(q)], e = plane_begin[static_cast<std::size_t>(q) + 1];
      core::release_pages(reinterpret_cast<char*>(position.data() + 3 * b), position.data() + 3 * e);
      core::release_pages(reinterpret_cast<char*>(mass.data() + b), mass.data() + e);
    }
  };

  // The wrapped indices around i along an axis of n cells, ascending, with their offsets from i (one
  // each: a tiny lattice's repeats dropped); none beyond an open grid.
  struct Near {
    std::int64_t index;
    int delta;
  };
  const auto near = [&](std::int64_t i, std::int64_t cells, std::array<Near, 3>& out) {
    std::size_t k = 0;
    for (int d = -1; d <= 1; ++d) {
      std::int64_t j = i + d;
      if (j < 0 || j >= cells) {
        if (!g.periodic) continue;
        j = (j + cells) % cells;
      }
      // In place by index (an insertion sort of three), a repeat dropped.
      std::size_t at = k;
      while (at > 0 && out[at - 1].index > j) --at;
      if (at > 0 && out[at - 1].index == j) continue;
      for (std::size_t m = k; m > at; --m) out[m] = out[m - 1];
      out[at] = {j, d};
      ++k;
    }
    return k;
  };
  // The sides a particle of the cell at offset (dx, dy, dz) must reach to add to this one.
  std::array<std::uint8_t, 27> need{};
  for (int dx = -1; dx <= 1; ++dx)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dz = -1; dz <= 1; ++dz)
        need[static_cast<std::size_t>(9 * (dx + 1) + 3 * (dy + 1) + dz + 1)] = tiny ? 0 : sides_needed({-dx, -dy, -dz});

  // Each leaf gets its terms in the particles' order (the bits of deposit_on_leaves) and is handed over
  // complete, with its coarse cell's leaves: inside a run of planes particle by particle, on the run's
  // first and last planes coarse cell by coarse cell, gathered from the particles of the 27 cells around
  // each, cell after cell in linear order and each cell's in their order. Nothing is summed twice and no
  // array of every leaf's sums is held.
  const LeafDeposit deposit(tree);
  const Reach* const reaches = reach.data();
  const double* const positions = position.data();
  const double* const masses = mass.data();
  // The planes strictly inside a run of planes [x0, x1), summed particle by particle: each particle of
  // the run, in their order, adds its whole cloud at once to the leaves of those planes it reaches, where
  // the gather (below) visits it once for every coarse cell its cloud reaches and scans the particles of
  // the 26 cells around each (2.5 visits a particle and 14 particles scanned on the 2.1 M box). Every
  // term of these planes' leaves comes from the run's own particles (a cloud reaches one plane either
  // side), so each leaf gets its terms in the particles' order: the same bits. The sums of the three
  // planes a particle reaches are held, one buffer a plane; a plane is handed over once the particles
  // of the plane after it are done.
  struct PlaneSums {
    std::vector<std::uint64_t> first_leaf;  // per cell (y nz + z) of the plane: its first leaf's number
    std::vector<std::size_t> at;            // per cell: where its leaves' sums begin in `sums` (and the end)
    std::vector<double> sums;
  };
  const auto make_plane_sums = [&](std::int64_t x, PlaneSums& out) {
    const auto cells = static_cast<std::size_t>(ny * nz);
    out.first_leaf.resize(cells);
    out.at.resize(cells + 1);
    std::size_t size = 0;
    for (std::int64_t y = 0; y < ny; ++y)
      for (std::int64_t z = 0; z < nz; ++z) {
        const std::int64_t own = g.linear({x, y, z});
        const std::uint64_t l0 = end_leaf(tree, own, 0), l1 = end_leaf(tree, own, 7) + 1;
        const auto c = static_cast<std::size_t>(y * nz + z);
        out.first_leaf[c] = l0;
        out.at[c] = size;
        if (l1 > first && l0 < last) size += l1 - l0;  // none kept for leaves not asked for
      }
    out.at[cells] = size;
    out.sums.assign(size, 0.0);
  };
  const auto sum_inner_planes = [&](std::int64_t x0, std::int64_t x1, int thread) {
    std::array<PlaneSums, 3> window;  // planes q - 1, q, q + 1 by plane % 3
    const auto sums_of = [&](std::int64_t x) -> PlaneSums& { return window[static_cast<std::size_t>(x % 3)]; };
    const std::int64_t inner_first = x0 + 1, inner_last = x1 - 2;
    for (std::int64_t x = inner_first; x <= std::min(inner_first + 1, inner_last); ++x) make_plane_sums(x, sums_of(x));
    const auto add_at = [&](const Cell& t, int level, std::int64_t slot, double m) {
      const std::int64_t x = t.index[0] >> t.level;
      if (x < inner_first || x > inner_last) return;  // the run's first or last plane: gathered
      PlaneSums& plane = sums_of(x);
      const auto c = static_cast<std::size_t>((t.index[1] >> t.level) * nz + (t.index[2] >> t.level));
      const std::size_t b = plane.at[c];
      if (b == plane.at[c + 1]) return;  // not among the leaves asked for
      plane.sums[b + (tree.leaf_number(level, static_cast<std::size_t>(slot)) - plane.first_leaf[c])] += m;
    };
    for (std::int64_t q = x0; q < x1; ++q) {
      // Plane q's particles reach planes q - 1 ... q + 1: the one after is made ready.
      if (q + 1 > inner_first + 1 && q + 1 <= inner_last) make_plane_sums(q + 1, sums_of(q + 1));
      const std::size_t e = plane_begin[static_cast<std::size_t>(q) + 1];
      for (std::size_t p = plane_begin[static_cast<std::size_t>(q)]; p < e; ++p) {
        if (reaches[p].level < 0) continue;
        const std::array<double, 3> xp{positions[3 * p], positions[3 * p + 1], positions[3 * p + 2]};
        deposit.add_where({assignment, reaches[p].level, tree.level_lattice(reaches[p].level).position(xp), masses[p]},
                          std::nullopt, add_at);
      }
      // Plane q - 1 has every term now.
      const std::int64_t done_x = q - 1;
      if (done_x < inner_first || done_x > inner_last) continue;
      const PlaneSums& plane = sums_of(done_x);
      for (std::size_t c = 0; c + 1 < plane.at.size(); ++c) {
        const std::size_t b = plane.at[c], leaves = plane.at[c + 1] - b;
        if (leaves == 0) continue;
        const std::uint64_t l0 = plane.first_leaf[c];
        const std::uint64_t from = std::max(l0, first), to = std::min(l0 + leaves, last);
        complete(from, std::span<const double>(plane.sums.data() + b + (from - l0), to - from), thread);
      }
      plane_done(done_x);
    }
  };

  // Runs of planes, a task each, of about equal numbers of particles (a clustered box's planes differ
  // in work by far more than their number). A run's first and last planes are gathered cell by cell
  // (the particles of the planes beside them belong to other runs); the planes between, whose every
  // term comes from the run's own particles, are summed particle by particle (sum_inner_planes). So
  // the runs are long (kRunsPerThread).
  std::vector<std::size_t> run_begin{0};  // planes
  const auto runs = static_cast<std::size_t>(kRunsPerThread * threads);
  for (std::size_t r = 1; r < runs; ++r) {
    const std::size_t share = n * r / runs;  // the run starts at the plane holding this particle
    const auto x = static_cast<std::size_t>(std::ranges::upper_bound(plane_begin, share) - plane_begin.begin() - 1);
    if (x > run_begin.back() && x < static_cast<std::size_t>(nx)) run_begin.push_back(x);
  }
  run_begin.push_back(static_cast<std::size_t>(nx));
  core::parallel_for(threads, run_begin.size() - 1, 1, [&](std::size_t run, std::size_t, int thread) {
    const std::size_t task_x0 = run_begin[run], task_x1 = run_begin[run + 1];
    // The planes x - 1 ... x + 2 of the cells around an octet's two, each made once per run of planes
    // (the one used longest ago makes way).
    std::array<PlaneCells, 4> cached;
    std::array<std::uint64_t, 4> used{0, 0, 0, 0};
    std::uint64_t clock = 0;
    const auto cells_of = [&](std::int64_t plane) -> const PlaneCells& {
      std::size_t at = 0;
      for (std::size_t k = 0; k < cached.size(); ++k) {
        if (cached[k].plane == plane) {
          used[k] = ++clock;
          return cached[k];
        }
        if (used[k] < used[at]) at = k;
      }
      plane_cells(plane, cached[at]);
      used[at] = ++clock;
      return cached[at];
    };
    std::vector<double> sums;
    // Per plane of the octet: the planes around it (x - 1, x, x + 1 wrapped, ascending).
    std::array<std::array<Near, 3>, 2> xs{};
    std::array<std::size_t, 2> nxs{};
    std::array<std::array<const PlaneCells*, 3>, 2> planes{};
    std::array<Near, 3> ys{}, zs{};
    // Per row of the octet (plane a, row b: 2a + b) inside the lattice, per cell along z, the cells
    // around it (bit 9(dx+1) + 3(dy+1) + dz+1) whose particles reach it: found for the whole row at
    // once without branches, so that each cell visits only those (2.2 of 27 on the 2.1 M box) instead
    // of testing all 27 in turn.
    std::array<std::vector<std::uint32_t>, 4> row_reach;
    std::array<bool, 4> inner_row{};
    for (auto& r : row_reach) r.assign(static_cast<std::size_t>(nz), 0);
    const auto find_row_reach = [&](std::size_t a, std::int64_t y, std::vector<std::uint32_t>& out) {
      std::ranges::fill(out, 0u);
      for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 3; ++j) {
          const std::uint8_t* const around =
              planes[a][i]->sides.data() + static_cast<std::size_t>((y + static_cast<std::int64_t>(j) - 1) * nz);
          for (std::size_t k = 0; k < 3; ++k) {
            const std::size_t at = 9 * i + 3 * j + k;
            const std::uint8_t sides = need[at];
            const std::uint8_t* const from = around + k - 1;  // the cell around z: from[z]
            std::uint32_t* const to = out.data();
            for (std::size_t z = 1; z + 1 < static_cast<std::size_t>(nz); ++z)
              to[z] |= static_cast<std::uint32_t>((from[z] & sides) == sides) << at;
          }
        }
    };
    // Coarse cell (x, y, z), plane a of the octet: its leaves' sums, handed over complete.
    const auto gather_cell = [&](std::size_t a, std::int64_t x, std::int64_t y, std::int64_t z,
                                 const std::vector<std::uint32_t>* reach_row) {
      const std::int64_t own = g.linear({x, y, z});
      const std::uint64_t l0 = end_leaf(tree, own, 0), l1 = end_leaf(tree, own, 7) + 1;
      if (l1 <= first || l0 >= last) return;  // not among the leaves asked for
      sums.assign(l1 - l0, 0.0);
      const std::optional<Index3> own_cell = Index3{x, y, z};  // only the clouds' cells inside it
      const auto add_at = [&](const Cell&, int level, std::int64_t slot, double m) {
        sums[tree.leaf_number(level, static_cast<std::size_t>(slot)) - l0] += m;
      };
      // The particles of one cell around whose clouds reach `sides` of theirs, in their order.
      const auto gather = [&](const PlaneCells& plane, std::size_t cell, std::uint8_t sides) {
        const std::size_t e = plane.begin[cell + 1];
        for (std::size_t p = plane.begin[cell]; p < e; ++p) {
          // Most particles of a cell around do not reach this one: skipped in a tight loop over
          // their two bytes (the arrays' addresses held in locals, not reloaded).
          while (p < e && (reaches[p].level < 0 || (reaches[p].sides & sides) != sides)) ++p;
          if (p == e) break;
          const std::array<double, 3> xp{positions[3 * p], positions[3 * p + 1], positions[3 * p + 2]};
          deposit.add_where(
              {assignment, reaches[p].level, tree.level_lattice(reaches[p].level).position(xp), masses[p]}, own_cell,
              add_at);
        }
      };
      // The cells around in linear order: x, then y, then z ascending.
      if (reach_row != nullptr && z > 0 && z + 1 < nz) {
        for (std::uint32_t m = (*reach_row)[static_cast<std::size_t>(z)]; m != 0; m &= m - 1) {
          const auto at = static_cast<std::size_t>(std::countr_zero(m));
          const std::int64_t cell =
              (y + static_cast<std::int64_t>(at / 3 % 3) - 1) * nz + z + static_cast<std::int64_t>(at % 3) - 1;
          gather(*planes[a][at / 9], static_cast<std::size_t>(cell), need[at]);
        }
      } else {
        const std::size_t nys = near(y, ny, ys), nzs = near(z, nz, zs);
        for (std::size_t i = 0; i < nxs[a]; ++i)
          for (std::size_t j = 0; j < nys; ++j) {
            const std::size_t row = static_cast<std::size_t>(ys[j].index * nz);
            for (std::size_t k = 0; k < nzs; ++k) {
              const std::size_t cell = row + static_cast<std::size_t>(zs[k].index);
              const std::uint8_t sides =
                  need[static_cast<std::size_t>(9 * (xs[a][i].delta + 1) + 3 * (ys[j].delta + 1) + zs[k].delta + 1)];
              if ((planes[a][i]->sides[cell] & sides) != sides) continue;  // none of its particles reaches
              gather(*planes[a][i], cell, sides);
            }
          }
      }
      const std::uint64_t b = std::max(l0, first), e = std::min(l1, last);
      complete(b, std::span<const double>(sums.data() + (b - l0), e - b), thread);
    };
    // Octet by octet (2 x 2 x 2 coarse cells, fewer at the run's and the lattice's ends), each in Morton
    // order: their leaves are one run of the key order, and their cells' slots lie together on every
    // level, so the tree and the densities are read and written where the cache has them. Which cell
    // goes first changes no sum: each leaf's terms come in the order of the cells around it.
    const auto gather_planes = [&](std::size_t x0, std::size_t x1) {
      for (auto x = static_cast<std::int64_t>(x0); x < static_cast<std::int64_t>(x1); x += 2) {
        const std::size_t xn = std::min<std::int64_t>(2, static_cast<std::int64_t>(x1) - x);
        for (std::size_t a = 0; a < xn; ++a) {
          nxs[a] = near(x + static_cast<std::int64_t>(a), nx, xs[a]);
          for (std::size_t i = 0; i < nxs[a]; ++i) planes[a][i] = &cells_of(xs[a][i].index);  // four fit the cache
        }
        for (std::int64_t y = 0; y < ny; y += 2) {
          const std::size_t yn = std::min<std::int64_t>(2, ny - y);
          for (std::size_t a = 0; a < xn; ++a)
            for (std::size_t b = 0; b < yn; ++b) {
              const std::int64_t xa = x + static_cast<std::int64_t>(a), yb = y + static_cast<std::int64_t>(b);
              // Inside the lattice the cells around are x, y, z - 1, +0, +1: in linear order, none wrapped.
              inner_row[2 * a + b] = !tiny && xa > 0 && xa + 1 < nx && yb > 0 && yb + 1 < ny && nz > 2;
              if (inner_row[2 * a + b]) find_row_reach(a, yb, row_reach[2 * a + b]);
            }
          for (std::int64_t z = 0; z < nz; z += 2) {
            const std::size_t zn = std::min<std::int64_t>(2, nz - z);
            for (std::size_t a = 0; a < xn; ++a)
              for (std::size_t b = 0; b < yn; ++b)
                for (std::size_t c = 0; c < zn; ++c)
                  gather_cell(a, x + static_cast<std::int64_t>(a), y + static_cast<std::int64_t>(b),
                              z + static_cast<std::int64_t>(c), inner_row[2 * a + b] ? &row_reach[2 * a + b] : nullptr);
          }
        }
        for (std::size_t a = 0; a < xn; ++a) plane_done(x + static_cast<std::int64_t>(a));
      }
    };
    const auto first_plane = static_cast<std::int64_t>(task_x0), end_plane = static_cast<std::int64_t>(task_x1);
    if (tiny || end_plane - first_plane < 3) {
      gather_planes(task_x0, task_x1);
      return;
    }
    gather_planes(task_x0, task_x0 + 1);
    sum_inner_planes(first_plane, end_plane, thread);
    gather_planes(task_x1 - 1, task_x1);
  });
}

}  // namespace phew::mesh
