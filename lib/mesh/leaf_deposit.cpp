// Cloud in leaves: each particle's cloud, at the size of its own leaf, shared among the leaves it
// overlaps (octree.hpp, deposit_on_leaves).
#include <phew/mesh/octree.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>

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
    const grid::Weights1D w[3] = {grid::weights_1d(c.assignment, c.u[0]), grid::weights_1d(c.assignment, c.u[1]),
                                  grid::weights_1d(c.assignment, c.u[2])};
    for (int i = 0; i < w[0].width; ++i)
      for (int j = 0; j < w[1].width; ++j)
        for (int k = 0; k < w[2].width; ++k) {
          const Index3 unwrapped{w[0].first + i, w[1].first + j, w[2].first + k};
          Cell t{c.level, unwrapped};
          if (!tree_.normalise(t)) continue;  // outside an open grid: dropped, as on the uniform grid
          // Every leaf the cell gives mass to lies in its coarse cell (an ancestor, or descendants).
          const std::int64_t plane = t.index[0] >> t.level;
          const auto add_at = [&](int level, std::int64_t slot, double m) {
            sink(plane, static_cast<std::size_t>(tree_.leaf_number(level, static_cast<std::size_t>(slot))), m);
          };
          const double weight = c.mass * (w[0].w[i] * w[1].w[j] * w[2].w[k]);
          const std::int64_t s = tree_.slot(t);
          if (s < 0) {
            const Cell leaf = tree_.covering_leaf(t);  // a coarser leaf: the whole cell's weight
            add_at(leaf.level, tree_.slot(leaf), weight);
          } else if (tree_.child_slot(t.level, static_cast<std::size_t>(s), 0) < 0) {
            add_at(t.level, s, weight);
          } else {
            const std::array<double, 3> lower{static_cast<double>(unwrapped[0]), static_cast<double>(unwrapped[1]),
                                              static_cast<double>(unwrapped[2])};
            share_among_children(c, t.level, s, lower, 1.0, add_at);
          }
        }
  }

 private:
  // A split cell (in `slot` of `level`; its unwrapped lower corner `lower` and size `size` in the
  // cloud's cell units): each child gets the kernel's integral over it.
  template <typename AddAt>
  void share_among_children(const LeafCloud& c, int level, std::int64_t slot, const std::array<double, 3>& lower,
                            double size, const AddAt& add_at) const {
    const double half = 0.5 * size;
    for (int o = 0; o < 8; ++o) {
      const std::array<double, 3> lo{lower[0] + half * (o >> 2 & 1), lower[1] + half * (o >> 1 & 1),
                                     lower[2] + half * (o & 1)};
      const double w = kernel_integral(c.assignment, c.u[0], lo[0], lo[0] + half) *
                       kernel_integral(c.assignment, c.u[1], lo[1], lo[1] + half) *
                       kernel_integral(c.assignment, c.u[2], lo[2], lo[2] + half);
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

}  // namespace

void deposit_on_leaves_streamed(const Octree& tree, grid::Assignment assignment, std::vector<double> position,
                                std::vector<double> mass, int threads, const CompleteLeaves& complete) {
  if (!tree.numbered()) throw core::Error::internal("deposit_on_leaves: the tree's leaves are not numbered");
  const std::uint64_t n = tree.leaf_count();
  core::PageVector<double> sums;
  sums.resize(n);  // mapped from the system, zero pages until written; a small one from the heap, zeroed
  if (n * sizeof(double) < core::kPageVectorMapped) std::fill(sums.begin(), sums.end(), 0.0);

  // Each page's leaves' coarse planes, [low, high]: those of the coarse cells whose leaves it holds.
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) / sizeof(double);
  const std::size_t pages = static_cast<std::size_t>((n + page - 1) / page);
  std::vector<std::int32_t> low(pages, INT32_MAX), high(pages, -1);
  const grid::GridGeometry& g = tree.coarse();
  const std::int64_t plane_cells = g.shape[1] * g.shape[2];
  for (std::int64_t c = 0; c < static_cast<std::int64_t>(g.cells()); ++c) {
    const auto plane = static_cast<std::int32_t>(c / plane_cells);
    for (std::uint64_t p = end_leaf(tree, c, 0) / page, last = end_leaf(tree, c, 7) / page; p <= last; ++p) {
      low[p] = std::min(low[p], plane);
      high[p] = std::max(high[p], plane);
    }
  }

  const PlaneRuns runs = particle_runs(g, position, threads, true);
  // Each run's pages: those whose planes are all its own inner planes, by their last plane.
  std::vector<std::vector<std::pair<std::int32_t, std::size_t>>> owned(static_cast<std::size_t>(runs.runs()));
  for (int r = 0; r < runs.runs(); ++r) {
    const auto [first, last] = runs.inner_planes(r);
    auto& mine = owned[static_cast<std::size_t>(r)];
    for (std::size_t p = 0; p < pages; ++p)
      if (low[p] >= first && high[p] <= last) mine.emplace_back(high[p], p);
    std::sort(mine.begin(), mine.end());
  }
  core::release(low);
  // The pages go back a block at a time, once all of a block's pages are handed over: a page at a time,
  // the calls and the other threads' TLB flushes each one makes cost more than the deposit saves.
  constexpr std::size_t kBlock = 16;
  std::vector<std::atomic<std::uint32_t>> left((pages + kBlock - 1) / kBlock);
  for (std::size_t b = 0; b < left.size(); ++b)
    left[b].store(static_cast<std::uint32_t>(std::min(pages, (b + 1) * kBlock) - b * kBlock));
  std::vector<char> handed(pages, 0);
  const auto hand_over = [&](std::size_t p) {
    const std::uint64_t b = p * page, e = std::min(n, b + page);
    complete(b, std::span<const double>(sums.data() + b, e - b));
    handed[p] = 1;
    if (left[p / kBlock].fetch_sub(1) == 1) {
      const std::uint64_t block = p / kBlock * kBlock * page;
      core::release_pages(reinterpret_cast<char*>(sums.data() + block),
                          sums.data() + std::min(n, block + kBlock * page));
    }
  };
  // Where each run's particles visited for the last time have been given back to.
  std::vector<std::size_t> next(owned.size(), 0);
  std::vector<std::pair<char*, char*>> given(owned.size());
  for (int r = 0; r < runs.runs(); ++r) {
    const std::size_t from = runs.edge_particles(r)[1];
    given[static_cast<std::size_t>(r)] = {reinterpret_cast<char*>(position.data() + 3 * from),
                                          reinterpret_cast<char*>(mass.data() + from)};
  }

  const LeafDeposit deposit(tree);
  runs.sum(
      [&](std::size_t p, auto&& sink) {
        deposit.add_particle(assignment, {position[3 * p], position[3 * p + 1], position[3 * p + 2]}, mass[p], sink);
      },
      [&](std::size_t leaf, double m) { sums[leaf] += m; },
      [&](int r, std::int64_t plane, std::size_t end) {
        const auto run = static_cast<std::size_t>(r);
        auto& mine = owned[run];
        for (std::size_t& i = next[run]; i < mine.size() && mine[i].first + PlaneRuns::kReach < plane; ++i)
          hand_over(mine[i].second);
        // Particles before the run's high edge planes are not visited again.
        const std::size_t upto = std::min(end, runs.edge_particles(r)[2]);
        given[run].first = core::release_pages(given[run].first, position.data() + 3 * upto);
        given[run].second = core::release_pages(given[run].second, mass.data() + upto);
      });
  for (std::size_t p = 0; p < pages; ++p)
    if (!handed[p]) hand_over(p);
}

}  // namespace phew::mesh
