#include <phew/watershed/patches.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/fixed_sum.hpp>
#include <phew/core/log.hpp>
#include <phew/core/threads.hpp>
#include <phew/mpi/exact_sums.hpp>
#include <phew/mpi/route.hpp>
#include <phew/watershed/peak_position.hpp>
#include <phew/watershed/saddles.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/mesh/octree_mesh.hpp>
#include <phew/mesh/block_mesh.hpp>
#include <phew/watershed/watershed.hpp>

#include <type_traits>

namespace phew::watershed {
namespace {

// Cells and mass of every patch, summed at the peak's owner: the owner's block of peak IDs in order,
// {cells, mass}. The masses are fixed-point sums (core::FixedScale: each cell's mass rounded once, far
// below a double's precision, and added exactly), so they do not depend on which rank or block held
// which cells: a patch spans blocks of any shape.
template <typename Mesh>
std::vector<std::array<double, 2>> patch_sums(const Mesh& mesh, const Segmentation& seg, const mesh::CellSpace& space,
                                              const mpi::SlabDecomposition& owners, int threads,
                                              const mpi::Comm& comm) {
  // A bound on every cell's mass: the densest test cell in the largest cell (a coarse cell).
  std::vector<double> densest_of(static_cast<std::size_t>(std::max(threads, 1)), 0.0);
  core::parallel_for(threads, mesh.end_local() - mesh.first_local(), kSlotsPerChunk,
                     [&](std::size_t b, std::size_t e, int thread) {
                       double& d = densest_of[static_cast<std::size_t>(thread)];
                       seg.tests.for_each(mesh.first_local() + b, mesh.first_local() + e,
                                          [&](std::size_t s, std::size_t) { d = std::max(d, mesh.density(s)); });
                     });
  const double densest = *std::max_element(densest_of.begin(), densest_of.end());
  const std::array<core::FixedScale, 2> scales{
      core::FixedScale::for_terms(1.0), core::FixedScale::for_terms(comm.max(densest) * space.grid().cell_volume())};
  const core::FixedInt one = scales[0].to_fixed(1.0);  // the count's term, once
  // Threads take chunks of slots, each summing {cells, mass} per peak into its own partials.
  std::vector<mpi::ExactSums<2>> sums(static_cast<std::size_t>(std::max(threads, 1)), mpi::ExactSums<2>(scales));
  core::parallel_for(
      threads, mesh.end_local() - mesh.first_local(), kSlotsPerChunk, [&](std::size_t b, std::size_t e, int thread) {
        mpi::ExactSums<2>& mine = sums[static_cast<std::size_t>(thread)];
        seg.tests.for_each(mesh.first_local() + b, mesh.first_local() + e, [&](std::size_t s, std::size_t member) {
          mine.add_fixed(seg.label[member],
                         {one, scales[1].to_fixed(mesh.density(s) * space.volume(mesh.global_index(s)))});
        });
      });
  // At the owners, into their block of IDs (dense: every owned peak has cells).
  const std::int64_t first = owners.begin(comm.rank()) + 1;
  std::vector<std::array<core::FixedInt, 2>> total(static_cast<std::size_t>(owners.planes(comm.rank())), {0, 0});
  for (const auto& p : mpi::route(comm, mpi::joined(sums), [&](const auto& q) { return owners.owner(q.key - 1); }))
    for (std::size_t i = 0; i < 2; ++i) total[static_cast<std::size_t>(p.key - first)][i] += p.sum[i];
  std::vector<std::array<double, 2>> out(total.size());
  for (std::size_t i = 0; i < total.size(); ++i)
    out[i] = {scales[0].to_double(total[i][0]), scales[1].to_double(total[i][1])};
  return out;
}

// Peak positions: cell centres, refined by the rank that holds the peak cell, sent to the peak's owner.
// Returns the owner's positions in ID order.
// On the octree: the leaf's centre (no refinement).
template <typename Mesh>
std::vector<std::array<double, 3>> peak_positions(const Mesh& mesh, const Segmentation& seg,
                                                  const mesh::CellSpace& space, bool refine,
                                                  const mpi::SlabDecomposition& owners, const mpi::Comm& comm) {
  struct Position {
    std::int64_t id;
    std::array<double, 3> x;
  };
  std::vector<Position> mine;
  for (const std::size_t s : seg.peak_slots) {  // ascending: the order the test cells come in
    const std::int64_t id = seg.label_of(s);
    Position pos{id, space.centre(mesh.global_index(s))};
    if constexpr (std::is_same_v<Mesh, mesh::BlockMesh> || std::is_same_v<Mesh, mesh::BlockMesh32>) {
      const grid::GridGeometry& g = mesh.grid();
      const auto cell_size = g.cell_size();
      const auto c = mesh.cell(s);
      std::array<double, 3> offset{0, 0, 0};
      if (refine)
        if (const auto nb = mesh.neighbourhood(s)) offset = quadratic_peak_offset(*nb);
      for (std::size_t d = 0; d < 3; ++d)
        pos.x[d] = g.origin[d] + (static_cast<double>(c[d]) + 0.5 + offset[d]) * cell_size[d];
    }
    mine.push_back(pos);
  }
  std::vector<Position> got = mpi::route(comm, mine, [&](const Position& p) { return owners.owner(p.id - 1); });
  std::sort(got.begin(), got.end(), [](const Position& a, const Position& b) { return a.id < b.id; });
  std::vector<std::array<double, 3>> out;
  for (const Position& p : got) out.push_back(p.x);
  return out;
}

// The rows of a segmentation on either mesh. Collective.
template <typename Mesh>
Segmented patches_of(const Mesh& mesh, const mesh::CellSpace& space, const grid::GridMeta& grid,
                     const SegmentParams& params, const mpi::Comm& comm, const core::PhaseReport& phase) {
  core::enter(phase, "watershed");
  const Segmentation seg = segment(mesh, params.threshold, comm, params.threads);
  core::log::info("{} test cells, {} peaks ({} label rounds)",
                  core::log::thousands(static_cast<long long>(seg.test_cells)),
                  core::log::thousands(static_cast<long long>(seg.n_peaks)), seg.rounds);

  Segmented result;
  result.label_rounds = seg.rounds;
  model::Patches& out = result.patches;
  out.grid = grid;
  out.meta = {params.threshold, params.threshold_text, seg.test_cells, params.refine_positions};
  core::enter(phase, "saddles");
  out.saddles = find_saddles(mesh, seg, comm, params.threads);
  core::log::info("{} saddles", core::log::thousands(comm.sum<long long>(static_cast<long long>(out.saddles.size()))));

  core::enter(phase, "peaks");
  // Per-peak rows live on the peak's owner (even blocks of IDs), so no rank holds them all.
  const auto npeaks = static_cast<std::int64_t>(seg.n_peaks);
  const mpi::SlabDecomposition owners(std::max<std::int64_t>(npeaks, 1), comm.size());
  const auto totals = patch_sums(mesh, seg, space, owners, params.threads, comm);
  const std::int64_t first = npeaks ? owners.begin(comm.rank()) + 1 : 1, last = npeaks ? owners.end(comm.rank()) : 0;
  const auto positions = peak_positions(mesh, seg, space, params.refine_positions, owners, comm);
  if (positions.size() != static_cast<std::size_t>(last - first + 1))
    throw core::Error::internal("rank {} received {} peak positions for peaks {}..{}", comm.rank(), positions.size(),
                                first, last);
  for (std::int64_t id = first; id <= last; ++id) {
    const PeakCell& pk = seg.own_peak(id);
    const auto& t = totals[static_cast<std::size_t>(id - first)];
    if (t[0] == 0)
      throw core::Error::internal("peak {} (cell {}) has no cell sums at its owner, rank {}", id, pk.cell, comm.rank());
    out.peaks.push_back({id, pk.cell, positions[static_cast<std::size_t>(id - first)], pk.density,
                         static_cast<std::int64_t>(t[0]), t[1]});
  }
  // The labels of this rank's test cells, in slot order, which is global index order within a rank's run.
  // On threads: each cell has its place (its rank among the local test cells).
  const std::size_t first_member = seg.tests.rank(mesh.first_local());
  const std::size_t n_local = seg.tests.rank(mesh.end_local()) - first_member;
  out.cells.cell.resize(n_local);
  out.cells.label.resize(n_local);
  out.cell_density.resize(n_local);
  core::parallel_for(
      params.threads, mesh.end_local() - mesh.first_local(), kSlotsPerChunk, [&](std::size_t b, std::size_t e, int) {
        seg.tests.for_each(mesh.first_local() + b, mesh.first_local() + e, [&](std::size_t s, std::size_t member) {
          out.cells.cell[member - first_member] = mesh.global_index(s);
          out.cells.label[member - first_member] = seg.label[member];
          out.cell_density[member - first_member] = mesh.density(s);
        });
      });
  return result;
}

// The test cells of a block (and their densities), moved to the ranks that hold equal shares of the
// global index range and sorted: the ranks' cells in rank order are the file's /cells/index
// (io::write_patches). Collective.
void to_index_ranges(grid::CellLabels& cells, std::vector<double>& density, const grid::GridGeometry& g,
                     const mpi::Comm& comm) {
  if (comm.size() == 1) return;  // one block, the whole grid: in global order already
  struct Labelled {
    std::int64_t cell, label;
    double density;
  };
  std::vector<Labelled> mine(cells.cell.size());
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = {cells.cell[i], cells.label[i], density[i]};
  cells = {};
  density.clear();
  const mpi::SlabDecomposition shares(static_cast<std::int64_t>(g.cells()), comm.size());
  std::vector<Labelled> got = mpi::route(comm, mine, [&](const Labelled& c) { return shares.owner(c.cell); });
  core::release(mine);
  const auto by_cell = [](const Labelled& a, const Labelled& b) { return a.cell < b.cell; };
  if (!std::is_sorted(got.begin(), got.end(), by_cell)) std::sort(got.begin(), got.end(), by_cell);
  cells.cell.reserve(got.size());
  cells.label.reserve(got.size());
  density.reserve(got.size());
  for (const Labelled& c : got) {
    cells.cell.push_back(c.cell);
    cells.label.push_back(c.label);
    density.push_back(c.density);
  }
}

// The densest value over the ranks (an empty ghost shell holds zeros). Collective.
template <typename Real>
double densest_of(std::span<const Real> density, const mpi::Comm& comm) {
  double most = 0;
  for (const Real v : density) most = std::max<double>(most, v);
  return comm.max(most);
}

template <typename Real>
Segmented segment_blocks(const grid::GridMeta& grid, const mpi::BlockDecomposition& blocks,
                         core::RawVector<Real> density, const SegmentParams& params, const mpi::Comm& comm,
                         const core::PhaseReport& phase) {
  const double densest = densest_of<Real>(density, comm);
  Segmented result = [&] {
    const mesh::BasicBlockMesh<Real> mesh(grid.geometry, blocks, std::move(density), comm);
    return patches_of(mesh, mesh::CellSpace::uniform(grid.geometry), grid, params, comm, phase);
  }();
  to_index_ranges(result.patches.cells, result.patches.cell_density, grid.geometry, comm);
  result.patches.density_float32 = std::is_same_v<Real, float>;
  result.densest = densest;
  return result;
}

}  // namespace

Segmented segment_patches(const grid::GridMeta& grid, const mpi::BlockDecomposition& blocks,
                          core::RawVector<double> density, const SegmentParams& params, const mpi::Comm& comm,
                          const core::PhaseReport& phase) {
  return segment_blocks(grid, blocks, std::move(density), params, comm, phase);
}

Segmented segment_patches(const grid::GridMeta& grid, const mpi::BlockDecomposition& blocks,
                          core::RawVector<float> density, const SegmentParams& params, const mpi::Comm& comm,
                          const core::PhaseReport& phase) {
  return segment_blocks(grid, blocks, std::move(density), params, comm, phase);
}

namespace {

template <typename Real>
Segmented segment_leaves(const grid::GridMeta& grid, mesh::LeafField& leaves, std::vector<Real> density,
                         const SegmentParams& params, const mpi::Comm& comm, const core::PhaseReport& phase) {
  if (params.refine_positions)
    throw core::Error::usage("--refine-positions fits a 3x3x3 block of equal cells: not on an adaptive mesh");
  // The leaves above the threshold, as tool::read_field reads them: the watershed looks at no other (a
  // densest neighbour denser than a test leaf is a test leaf too).
  if (leaves.cuts.empty())
    throw core::Error::internal("segment_octree_patches: the leaves come without their ranks' cuts (tool::read_field)");
  const int levels = leaves.refinement.levels;
  mesh::BasicOctreeMesh<Real> mesh(grid.geometry, levels, leaves.cuts,
                                   std::move(std::get<std::vector<std::uint64_t>>(leaves.keys)), std::move(density),
                                   comm);
  // The watershed and the saddles each look at every test leaf's neighbours: found once for both.
  core::enter(phase, "neighbours");
  mesh.keep_neighbours(params.threads);
  Segmented result = patches_of(mesh, mesh::CellSpace::octree(grid.geometry, levels), grid, params, comm, phase);
  result.patches.refinement = leaves.refinement;
  result.patches.density_float32 = std::is_same_v<Real, float>;
  result.densest = comm.max(leaves.densest);
  return result;
}

}  // namespace

Segmented segment_octree_patches(const grid::GridMeta& grid, mesh::LeafField leaves, const SegmentParams& params,
                                 const mpi::Comm& comm, const core::PhaseReport& phase) {
  return std::visit(
      [&](auto& density) { return segment_leaves(grid, leaves, std::move(density), params, comm, phase); },
      leaves.density);
}

Segmented segment_field(const grid::GridMeta& grid, mesh::Field field, const SegmentParams& params,
                        const mpi::Comm& comm, const core::PhaseReport& phase) {
  if (auto* leaves = std::get_if<mesh::LeafField>(&field))
    return segment_octree_patches(grid, std::move(*leaves), params, comm, phase);
  auto& block = std::get<mesh::BlockField>(field);
  return std::visit(
      [&](auto& density) { return segment_patches(grid, block.blocks, std::move(density), params, comm, phase); },
      block.density);
}

}  // namespace phew::watershed
