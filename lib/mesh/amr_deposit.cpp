#include <phew/mesh/amr_deposit.hpp>

#include <phew/core/fixed_sum.hpp>
#include <phew/core/memory.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/core/log.hpp>
#include <phew/core/radix_sort.hpp>
#include <phew/mesh/coarse_runs.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/mpi/exact_sums.hpp>
#include <phew/mpi/route.hpp>

#include <algorithm>
#include <cmath>

namespace phew::mesh {
namespace {

struct CoarseParticle {
  std::array<double, 3> x;
  double m;
  std::int64_t cell;  // its coarse cell (linear index)
};

}  // namespace

std::int64_t amr_margin(const RefinementParams& params) {
  // The flags: per level the rule reaches one cell for the kernel's counts and `buffer` cells for the
  // buffer; the levels' cells halve, so all levels together reach less than twice level 0's share. The
  // balance's closure over them: at each level 1 + buffer cells around a parent, one more for the parent
  // itself, halving too. The deposit adds a cloud (TSC: 1.5 cells) and the leaf a particle falls in; one
  // more for rounding onto plane boundaries.
  const std::int64_t flags = 2 * (params.buffer + 1), closure = 2 * (params.buffer + 2);
  return flags + closure + 3;
}

namespace {

// The particles inside the grid in the canonical order: grouped by coarse cell (`cell`: linear index,
// -1 outside an open grid; ascending), in their order within a cell. A stable counting sort in two
// passes, each on the threads: the particles' indices by coarse plane (x, the slowest axis of the linear
// index; fixed chunks of particles, each counting its own), then each plane's by their cell of the plane
// (a plane a task), which writes them out. The same order on any number of threads, and the counts of a
// plane's cells stay in the cache where one array over every coarse cell did not.
void file_by_coarse_cell(const grid::GridGeometry& coarse, std::span<const std::int64_t> cell, const auto& position_of,
                         const auto& mass_of, int threads, core::RawVector<double>& position,
                         core::RawVector<double>& mass) {
  const std::size_t n = cell.size();
  const auto planes = static_cast<std::size_t>(coarse.shape[0]);
  const auto plane_cells = static_cast<std::size_t>(coarse.shape[1] * coarse.shape[2]);
  threads = std::max(threads, 1);
  // A cell's plane, cell / plane_cells, as a product and one correction instead of a division a particle.
  const double per_plane = 1.0 / static_cast<double>(plane_cells);
  const auto plane_of = [&](std::int64_t c) {
    auto q = static_cast<std::size_t>(static_cast<double>(c) * per_plane);
    if (q * plane_cells > static_cast<std::size_t>(c))
      --q;
    else if ((q + 1) * plane_cells <= static_cast<std::size_t>(c))
      ++q;
    return q;
  };
  // At most 256 chunks of particles (their counts per plane), of 4096 at least.
  const std::size_t chunk = std::max<std::size_t>(std::size_t{1} << 12, (n + 255) / 256);
  const std::size_t chunks = (n + chunk - 1) / chunk;
  // count[c * planes + q]: chunk c's particles in plane q, then where the first of them goes (plane
  // by plane, and within a plane chunk by chunk: the particles' order).
  std::vector<std::uint64_t> count(chunks * planes, 0);
  core::parallel_for(threads, chunks, 1, [&](std::size_t c0, std::size_t c1, int) {
    for (std::size_t c = c0; c < c1; ++c)
      for (std::size_t p = c * chunk; p < std::min(n, (c + 1) * chunk); ++p)
        if (cell[p] >= 0) ++count[c * planes + plane_of(cell[p])];
  });
  std::vector<std::uint64_t> plane_begin(planes + 1, 0);
  std::uint64_t at = 0;
  for (std::size_t q = 0; q < planes; ++q) {
    plane_begin[q] = at;
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::uint64_t k = count[c * planes + q];
      count[c * planes + q] = at;
      at += k;
    }
  }
  plane_begin[planes] = at;
  core::RawVector<std::size_t> order(at);
  core::parallel_for(threads, chunks, 1, [&](std::size_t c0, std::size_t c1, int) {
    for (std::size_t c = c0; c < c1; ++c)
      for (std::size_t p = c * chunk; p < std::min(n, (c + 1) * chunk); ++p)
        if (cell[p] >= 0) order[count[c * planes + plane_of(cell[p])]++] = p;
  });
  core::release(count);
  // Not zeroed first on one thread: each page is first written, and faults in, on the thread filing its plane.
  position.resize(3 * at);
  mass.resize(at);
  std::vector<std::vector<std::uint64_t>> start(static_cast<std::size_t>(threads));
  core::parallel_for(threads, planes, 1, [&](std::size_t q0, std::size_t q1, int thread) {
    std::vector<std::uint64_t>& first = start[static_cast<std::size_t>(thread)];
    for (std::size_t q = q0; q < q1; ++q) {
      const std::uint64_t b = plane_begin[q], e = plane_begin[q + 1];
      if (b == e) continue;
      const std::int64_t plane_first = static_cast<std::int64_t>(q * plane_cells);  // the plane's first cell
      first.assign(plane_cells + 1, 0);
      for (std::uint64_t i = b; i < e; ++i) ++first[static_cast<std::size_t>(cell[order[i]] - plane_first) + 1];
      first[0] = b;
      for (std::size_t k = 0; k < plane_cells; ++k) first[k + 1] += first[k];
      for (std::uint64_t i = b; i < e; ++i) {
        const std::size_t p = order[i];
        const std::uint64_t to = first[static_cast<std::size_t>(cell[p] - plane_first)]++;
        const std::array<double, 3> x = position_of(p);
        for (std::size_t d = 0; d < 3; ++d) position[3 * to + d] = x[d];
        mass[to] = mass_of(p);
      }
    }
  });
}

}  // namespace

AmrDeposit deposit_on_octree(const grid::GridGeometry& coarse, const RefinementParams& params,
                             std::vector<double> position, std::vector<double> mass, const mpi::Comm& comm, int threads,
                             bool float_density) {
  // Before the keys' shifts and the cuts rely on it; every rank finds the same, and says it once.
  mpi::agree(comm, [&] { check_refinement(coarse, params); });
  AmrDeposit out;
  // Each particle's coarse cell (-1 outside an open grid), on threads, each with its count and its
  // heaviest (a sum of integers and a maximum: the same for any threads).
  const std::size_t n = mass.size();
  core::RawVector<std::int64_t> cell(n);  // written on the threads below, each page where it is first written
  struct alignas(64) Found {
    std::uint64_t inside = 0;
    double heaviest = 0;
  };
  std::vector<Found> found(static_cast<std::size_t>(std::max(threads, 1)));
  const LevelLattice level0(coarse, 0);
  core::parallel_for(threads, n, std::size_t{1} << 16, [&](std::size_t b, std::size_t e, int thread) {
    Found& f = found[static_cast<std::size_t>(thread)];
    for (std::size_t p = b; p < e; ++p) {
      Cell c;
      if (!coarse_cell_of(coarse, level0, {position[3 * p], position[3 * p + 1], position[3 * p + 2]}, c)) {
        cell[p] = -1;
        continue;
      }
      cell[p] = coarse.linear({c.index[0], c.index[1], c.index[2]});
      ++f.inside;
      f.heaviest = std::max(f.heaviest, std::abs(mass[p]));
    }
  });
  std::uint64_t inside = 0;
  double heaviest = 0;
  for (const Found& f : found) {
    inside += f.inside;
    heaviest = std::max(heaviest, f.heaviest);
  }
  out.particles_in = comm.sum(inside);
  out.particles_outside = comm.sum(static_cast<std::uint64_t>(n) - inside);
  // The unit of the total's fixed-point sum: below the heaviest particle times the particles, values
  // every decomposition agrees on.
  const core::FixedScale scale =
      core::FixedScale::for_total(comm.max(heaviest) * static_cast<double>(out.particles_in));

  // The ranks' runs of coarse cells on the Morton curve, cut by particles.
  const CoarseRuns runs = CoarseRuns::by_particles(coarse, params.levels, cell, comm);
  out.cuts = runs.cuts();
  // For each coarse cell, the ranks whose windows hold it.
  const CoarseRuns::RanksNear near = comm.size() > 1 ? runs.ranks_near(amr_margin(params)) : CoarseRuns::RanksNear{};

  // The window: this rank's particles and those of every coarse cell within `margin` coarse cells of its
  // run on each axis, filed in the canonical order (coarse cell by coarse cell, and within a cell in
  // rank order of the sources and each source's order: the global order). Every rank holding a leaf
  // then holds every particle whose cloud reaches it, in the same order. One rank holds every particle
  // already. What is filed is let go.
  core::RawVector<double> wpos, wmass;
  if (comm.size() == 1) {
    file_by_coarse_cell(
        coarse, cell,
        [&](std::size_t p) {
          return std::array<double, 3>{position[3 * p], position[3 * p + 1], position[3 * p + 2]};
        },
        [&](std::size_t p) { return mass[p]; }, threads, wpos, wmass);
    core::release(position);
    core::release(mass);
  } else {
    std::vector<CoarseParticle> mine;
    mine.reserve(inside);
    for (std::size_t p = 0; p < n; ++p)
      if (cell[p] >= 0) mine.push_back({{position[3 * p], position[3 * p + 1], position[3 * p + 2]}, mass[p], cell[p]});
    core::release(position);
    core::release(mass);
    const std::vector<CoarseParticle> window =
        mpi::scatter_to(comm, std::move(mine), [&](const CoarseParticle& particle, auto&& emit) {
          for (const std::int32_t r : near.of(particle.cell)) emit(static_cast<int>(r));
        });
    std::vector<std::int64_t> window_cell(window.size());
    for (std::size_t p = 0; p < window.size(); ++p) window_cell[p] = window[p].cell;
    file_by_coarse_cell(
        coarse, window_cell, [&](std::size_t p) { return window[p].x; }, [&](std::size_t p) { return window[p].m; },
        threads, wpos, wmass);
  }
  core::release(cell);
  core::log::verbose("the window of this rank's run of coarse cells: {} particles, filed by coarse cell",
                     core::log::thousands(static_cast<long long>(wmass.size())));

  // The balance's flags: each rank's of its own coarse cells, to every rank whose window holds the cell.
  struct Flag {
    std::int64_t level;
    std::uint64_t code;
  };
  const auto coarse_cell = [&](const Flag& f) {
    const std::uint64_t c = f.code >> (3 * f.level);
    return coarse.linear({static_cast<std::int64_t>(gather_bits_3(c >> 2)),
                          static_cast<std::int64_t>(gather_bits_3(c >> 1)),
                          static_cast<std::int64_t>(gather_bits_3(c))});
  };
  BalanceExchange exchange{[&](LevelCodes flagged) {
    std::vector<Flag> mine;
    for (std::size_t l = 0; l < flagged.size(); ++l)
      for (const std::uint64_t code : flagged[l]) {
        const Flag f{static_cast<std::int64_t>(l), code};
        if (runs.owner(coarse_cell(f)) == comm.rank()) mine.push_back(f);
      }
    LevelCodes window(flagged.size());
    for (const Flag& f : mpi::scatter_to(comm, std::move(mine), [&](const Flag&f, auto&&emit) {
           for (const std::int32_t r : near.of(coarse_cell(f))) emit(static_cast<int>(r));
         }))
      window[static_cast<std::size_t>(f.level)].push_back(f.code);
    for (auto& codes : window) core::radix_sort_values(codes);
    return window;
  }};

  const auto rank = comm.rank();
  out.leaves_per_level.assign(static_cast<std::size_t>(params.levels) + 1, 0);
  core::FixedInt total = 0;
  // The densities of this rank's leaves, filled out of order as the deposit completes them: pages
  // untouched until written (they are made a std::vector once the tree is gone).
  std::variant<core::RawVector<float>, core::RawVector<double>> density;
  if (float_density)
    density = core::RawVector<float>();
  else
    density = core::RawVector<double>();
  {
    // The cells' codes go once the tree is built (build_octree), the particles as they are deposited,
    // and the leaves' masses are made densities coarse cell by coarse cell.
    Octree tree = build_octree(coarse, params, wpos, wmass, threads, comm.size() > 1 ? &exchange : nullptr);
    core::log::verbose("refined: {} leaves in the window",
                       core::log::thousands(static_cast<long long>(tree.leaf_count())));
    // This rank's leaves: those of its run of coarse cells, [first, last) of the window's key order, as
    // their levels (LeafRun: the keys follow from them when written). Their counts per level, their
    // total (exact, in fixed point, in any order) and their densities.
    const std::uint64_t first = tree.leaves_before(runs.first_key(rank)), last = tree.leaves_before(runs.end_key(rank));
    out.leaves = tree.take_leaf_run(first, last);
    const std::vector<std::int8_t>& level = out.leaves.level;
    for (const std::int8_t l : level) ++out.leaves_per_level[static_cast<std::size_t>(l)];
    // Each level's cell volume (exact: the coarse one over a power of two), for the uniform grid's one
    // division of a leaf's mass by its volume.
    std::vector<double> volume(static_cast<std::size_t>(params.levels) + 1);
    for (std::size_t l = 0; l < volume.size(); ++l)
      volume[l] = coarse.cell_volume() / static_cast<double>(std::uint64_t{1} << (3 * l));
    std::visit(
        [&](auto& d) {
          d.resize(last - first);
          // Written coarse cell by coarse cell, plane by plane, so all over the key order at once: in huge
          // pages a 2 MiB page (a block of some 20-40 coarse cells a side) is resident from its first
          // plane on, in 4 KiB pages each page faults on its own. On the 2.1 M box at four levels: 0.89x
          // cic-project's time for 1.04x its peak (275 against 264 MiB; 74 k faults -> 51 k).
          core::advise_pages(d.data(), d.size() * sizeof(d[0]), core::Pages::huge);
        },
        density);
    struct alignas(64) Part {  // a thread's share of the total, on a cache line of its own
      core::FixedInt sum = 0;
    };
    std::vector<Part> totals(static_cast<std::size_t>(std::max(threads, 1)));
    deposit_on_leaves_streamed(
        tree, params.assignment, std::move(wpos), std::move(wmass), threads, first, last,
        [&](std::uint64_t b, std::span<const double> masses, int thread) {
          core::FixedInt& part = totals[static_cast<std::size_t>(thread)].sum;
          std::visit(
              [&](auto& d) {
                using Real = typename std::decay_t<decltype(d)>::value_type;
                const std::int8_t* const leaf_level = level.data() + (b - first);
                Real* const to = d.data() + (b - first);
                for (std::uint64_t i = 0; i < masses.size(); ++i) {
                  // Most leaves are empty (72 % on the 2.1 M box at four levels: the buffers and the
                  // balance refine around the particles): their zero needs no conversion and no division
                  // (a sum of terms is never -0).
                  if (masses[i] == 0) {
                    to[i] = 0;
                    continue;
                  }
                  part += scale.to_fixed(masses[i]);
                  to[i] = static_cast<Real>(masses[i] / volume[static_cast<std::size_t>(leaf_level[i])]);
                }
              },
              density);
        });
    for (const Part& t : totals) total += t.sum;
  }  // the tree is let go here
  std::visit([&](auto& d) { out.density = core::to_vector_releasing(std::move(d)); }, density);
  comm.sum_each(std::span<std::uint64_t>(out.leaves_per_level));
  out.mass_total = scale.to_double(mpi::exact_total(comm, total));
  return out;
}

}  // namespace phew::mesh
