// Cloud in leaves: each particle's cloud, at the size of its own leaf, shared among the leaves it
// overlaps (octree.hpp, deposit_on_leaves).
#include <phew/mesh/octree.hpp>

#include <phew/core/error.hpp>
#include <phew/core/threads.hpp>

#include <algorithm>
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
            const std::array<double, 3> x{position[3 * p], position[3 * p + 1], position[3 * p + 2]};
            const Cell leaf = tree.leaf_at(x);
            if (leaf.level < 0) return;
            deposit.add({assignment, leaf.level, tree.level_lattice(leaf.level).position(x), mass[p]}, sink);
          },
          [&](std::size_t leaf, double m) { out[leaf] += m; });
  return out;
}

}  // namespace phew::mesh
