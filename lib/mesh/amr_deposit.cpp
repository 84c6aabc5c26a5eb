#include <phew/mesh/amr_deposit.hpp>

#include <phew/core/fixed_sum.hpp>
#include <phew/mesh/coarse_runs.hpp>
#include <phew/mpi/exact_sums.hpp>
#include <phew/mpi/route.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

namespace phew::mesh {
namespace {

struct Particle {
  std::array<double, 3> x;
  double m;
  std::int64_t cell;  // its coarse cell (linear index)
};

// The coarse cell of a point (wrapped), or nothing outside an open grid.
std::optional<Index3> coarse_cell(const grid::GridGeometry& g, const std::array<double, 3>& x) {
  Cell c{0, {0, 0, 0}};
  const auto u = lattice_position(g, 0, x);
  for (std::size_t d = 0; d < 3; ++d) c.index[d] = static_cast<std::int64_t>(std::floor(u[d]));
  for (std::size_t d = 0; d < 3; ++d)
    if (!g.periodic && (c.index[d] < 0 || c.index[d] >= g.shape[d])) return std::nullopt;
  for (std::size_t d = 0; d < 3; ++d) c.index[d] = grid::fold_index(c.index[d], g.shape[d], true);
  return c.index;
}

}  // namespace

std::vector<std::size_t> by_coarse_cell(const grid::GridGeometry& coarse, std::span<const double> position) {
  const std::size_t n = position.size() / 3;
  std::vector<std::int64_t> cell(n, -1);  // linear index; -1 outside an open grid
  std::vector<std::uint64_t> start(coarse.cells() + 1, 0);
  for (std::size_t p = 0; p < n; ++p) {
    const auto u = lattice_position(coarse, 0, {position[3 * p], position[3 * p + 1], position[3 * p + 2]});
    Cell c{0, {0, 0, 0}};
    for (std::size_t d = 0; d < 3; ++d) c.index[d] = static_cast<std::int64_t>(std::floor(u[d]));
    if (!normalise_cell(coarse, c)) continue;
    cell[p] = coarse.linear({c.index[0], c.index[1], c.index[2]});
    ++start[static_cast<std::size_t>(cell[p]) + 1];
  }
  for (std::size_t c = 0; c + 1 < start.size(); ++c) start[c + 1] += start[c];
  std::vector<std::size_t> order(start.back());
  for (std::size_t p = 0; p < n; ++p)
    if (cell[p] >= 0) order[start[static_cast<std::size_t>(cell[p])]++] = p;
  return order;
}

std::int64_t amr_margin(const RefinementParams& params) {
  // Per level the rule reaches one cell for the kernel's counts, `buffer` cells for the buffer and one
  // for the balance; the levels' cells halve, so all levels together reach less than twice level 0's
  // share. The deposit adds a cloud (TSC: 1.5 cells) and the leaf a particle falls in; one more for
  // rounding onto plane boundaries.
  return 2 * (params.buffer + 2) + 3;
}

AmrDeposit deposit_on_octree(const grid::GridGeometry& coarse, const RefinementParams& params,
                             std::span<const double> position, std::span<const double> mass, const mpi::Comm& comm) {
  AmrDeposit out;
  std::vector<Particle> mine;
  mine.reserve(mass.size());
  double heaviest = 0;
  for (std::size_t p = 0; p < mass.size(); ++p) {
    const std::array<double, 3> x{position[3 * p], position[3 * p + 1], position[3 * p + 2]};
    const auto cell = coarse_cell(coarse, x);
    if (!cell) {
      ++out.particles_outside;
      continue;
    }
    mine.push_back({x, mass[p], coarse.linear({(*cell)[0], (*cell)[1], (*cell)[2]})});
    heaviest = std::max(heaviest, std::abs(mass[p]));
  }
  out.particles_in = comm.sum(static_cast<std::uint64_t>(mine.size()));
  out.particles_outside = comm.sum(out.particles_outside);
  // The unit of the total's fixed-point sum: below the heaviest particle times the particles, values
  // every decomposition agrees on.
  const core::FixedScale scale = core::FixedScale::for_total(comm.max(heaviest) * static_cast<double>(out.particles_in));

  // The ranks' runs of coarse cells on the Morton curve, cut by particles.
  const CoarseRuns runs = [&] {
    std::vector<std::int64_t> cells(mine.size());
    for (std::size_t p = 0; p < mine.size(); ++p) cells[p] = mine[p].cell;
    return CoarseRuns::by_particles(coarse, params.levels, cells, comm);
  }();
  out.cuts = runs.cuts();

  // Each particle to every rank whose run holds a coarse cell within `margin` coarse cells of its own on
  // each axis, in rank order of the sources and each source's order: the global order. One rank holds
  // every particle already.
  std::vector<Particle> window;
  if (comm.size() == 1) {
    window = std::move(mine);
  } else {
    const CoarseRuns::RanksNear near = runs.ranks_near(amr_margin(params));
    window = mpi::scatter_to(comm, std::move(mine), [&](const Particle& particle, auto&& emit) {
      for (const std::int32_t r : near.of(particle.cell)) emit(static_cast<int>(r));
    });
  }

  // The window's particles in the canonical order (by_coarse_cell): the tree's and the leaves' sums then
  // also touch memory a coarse cell at a time. Every rank holding a leaf holds every particle whose
  // cloud reaches it, in the same order.
  std::vector<double> wpos(3 * window.size()), wmass(window.size());
  {
    std::vector<double> x(3 * window.size());
    for (std::size_t p = 0; p < window.size(); ++p)
      for (std::size_t d = 0; d < 3; ++d) x[3 * p + d] = window[p].x[d];
    const std::vector<std::size_t> order = by_coarse_cell(coarse, x);  // every window particle is inside
    wpos.resize(3 * order.size());
    wmass.resize(order.size());
    for (std::size_t at = 0; at < order.size(); ++at) {
      for (std::size_t d = 0; d < 3; ++d) wpos[3 * at + d] = x[3 * order[at] + d];
      wmass[at] = window[order[at]].m;
    }
  }
  window = {};
  std::vector<std::uint64_t> leaves;  // keys
  std::vector<double> leaf_mass;
  {
    const Octree tree = build_octree(coarse, params, wpos, wmass);
    leaves = tree.leaf_keys();
    leaf_mass = deposit_on_leaves(tree, leaves, params.assignment, wpos, wmass);
  }  // the tree and the window's particles are not needed beyond here
  wpos = {};
  wmass = {};

  // This rank's leaves: those of its run of coarse cells, one run of the key order. Their total (exact,
  // in fixed point) and their counts per level.
  const auto first = std::lower_bound(leaves.begin(), leaves.end(), static_cast<std::uint64_t>(runs.first_key(comm.rank())));
  const auto last = std::lower_bound(first, leaves.end(), static_cast<std::uint64_t>(runs.end_key(comm.rank())));
  out.leaves_per_level.assign(static_cast<std::size_t>(params.levels) + 1, 0);
  out.leaves.reserve(static_cast<std::size_t>(last - first));
  core::FixedInt total = 0;
  for (auto it = first; it != last; ++it) {
    const double m = leaf_mass[static_cast<std::size_t>(it - leaves.begin())];
    out.leaves.push_back({*it, m});
    total += scale.to_fixed(m);
    ++out.leaves_per_level[static_cast<std::size_t>(*it & 0xF)];
  }
  comm.sum_each(std::span<std::uint64_t>(out.leaves_per_level));
  out.mass_total = scale.to_double(mpi::exact_total(comm, total));
  return out;
}

}  // namespace phew::mesh
