#include <phew/watershed/patches.hpp>

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/mpi/ordered_sum.hpp>
#include <phew/mpi/route.hpp>
#include <phew/watershed/peak_position.hpp>
#include <phew/watershed/saddles.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/mesh/octree_mesh.hpp>
#include <phew/mesh/slab_mesh.hpp>
#include <phew/watershed/watershed.hpp>

#include <type_traits>

namespace phew::watershed {
namespace {

// Cells and mass of every patch, summed at the peak's owner: per (peak, chunk) partial sums,
// accumulated chunk by chunk (a plane, or a coarse cell of the octree) through a dense index of the
// peaks seen in the current chunk, then added in chunk order (mpi::OrderedSum), so the sums do not
// depend on the decomposition.
template <typename Mesh>
std::map<std::int64_t, std::array<double, 2>> patch_sums(const Mesh& mesh, const Segmentation& seg, const mesh::CellSpace& space,
                                                          const mpi::SlabDecomposition& owners, const mpi::Comm& comm) {
  using Sums = mpi::OrderedSum<2>;
  std::vector<Sums::Entry> partial;
  std::vector<std::int32_t> at(seg.n_peaks + 1, -1);
  std::size_t first_entry = 0;
  std::int64_t current = -1;
  seg.tests.for_each(mesh.first_local(), mesh.end_local(), [&](std::size_t s, std::size_t member) {
    const std::int64_t chunk = mesh.chunk(s);
    if (chunk != current) {  // a new chunk: forget the last one's dense index
      for (std::size_t e = first_entry; e < partial.size(); ++e) at[static_cast<std::size_t>(partial[e].key)] = -1;
      first_entry = partial.size();
      current = chunk;
    }
    const std::int64_t l = seg.label[member];
    std::int32_t& k = at[static_cast<std::size_t>(l)];
    if (k < 0) {
      k = static_cast<std::int32_t>(partial.size() - first_entry);
      partial.push_back({l, chunk, {0.0, 0.0}});
    }
    auto& v = partial[first_entry + static_cast<std::size_t>(k)].v;
    v[0] += 1.0;
    v[1] += mesh.density(s) * space.volume(mesh.global_index(s));
  });
  return Sums::at_owners(comm, std::move(partial), [&](std::int64_t id) { return owners.owner(id - 1); });
}

// Peak positions: cell centres, refined by the rank that holds the peak cell, sent to the peak's owner.
// Returns the owner's positions in ID order.
// On the octree: the leaf's centre (no refinement).
template <typename Mesh>
std::vector<std::array<double, 3>> peak_positions(const Mesh& mesh, const Segmentation& seg, const mesh::CellSpace& space, bool refine,
                                                  const mpi::SlabDecomposition& owners, const mpi::Comm& comm) {
  struct Position {
    std::int64_t id;
    std::array<double, 3> x;
  };
  std::vector<Position> mine;
  for (const std::size_t s : seg.peak_slots) {  // ascending: the order the test cells come in
    const std::int64_t id = seg.label_of(s);
    Position pos{id, space.centre(mesh.global_index(s))};
    if constexpr (std::is_same_v<Mesh, mesh::SlabMesh> || std::is_same_v<Mesh, mesh::SlabMesh32>) {
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
Segmented patches_of(const Mesh& mesh, const mesh::CellSpace& space, const grid::GridMeta& grid, const SegmentParams& params,
                     const mpi::Comm& comm, const core::PhaseReport& phase) {
  core::enter(phase, "watershed");
  const Segmentation seg = segment(mesh, params.threshold, comm, params.threads);
  core::log::info("{} test cells, {} peaks ({} label rounds)", core::log::thousands(static_cast<long long>(seg.test_cells)),
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
  const auto totals = patch_sums(mesh, seg, space, owners, comm);
  const std::int64_t first = npeaks ? owners.begin(comm.rank()) + 1 : 1, last = npeaks ? owners.end(comm.rank()) : 0;
  const auto positions = peak_positions(mesh, seg, space, params.refine_positions, owners, comm);
  if (positions.size() != static_cast<std::size_t>(last - first + 1))
    throw core::Error::internal("rank {} received {} peak positions for peaks {}..{}", comm.rank(), positions.size(), first, last);
  for (std::int64_t id = first; id <= last; ++id) {
    const PeakCell& pk = seg.own_peak(id);
    const auto t = totals.find(id);
    if (t == totals.end())
      throw core::Error::internal("peak {} (cell {}) has no cell sums at its owner, rank {}", id, pk.cell, comm.rank());
    out.peaks.push_back({id, pk.cell, positions[static_cast<std::size_t>(id - first)], pk.density,
                         static_cast<std::int64_t>(t->second[0]), t->second[1]});
  }
  // The labels of this rank's test cells, in slot order, which is global index order within a rank's run.
  const std::size_t n_local = seg.tests.rank(mesh.end_local()) - seg.tests.rank(mesh.first_local());
  out.cells.cell.reserve(n_local);
  out.cells.label.reserve(n_local);
  seg.tests.for_each(mesh.first_local(), mesh.end_local(), [&](std::size_t s, std::size_t member) {
    out.cells.cell.push_back(mesh.global_index(s));
    out.cells.label.push_back(seg.label[member]);
  });
  return result;
}

}  // namespace

Segmented segment_patches(const grid::GridMeta& grid, const mpi::SlabDecomposition& slabs, std::vector<double> density,
                          const SegmentParams& params, const mpi::Comm& comm, const core::PhaseReport& phase) {
  const mesh::SlabMesh mesh(grid.geometry, slabs, comm.rank(), std::move(density));
  return patches_of(mesh, mesh::CellSpace::uniform(grid.geometry), grid, params, comm, phase);
}

Segmented segment_patches(const grid::GridMeta& grid, const mpi::SlabDecomposition& slabs, std::vector<float> density,
                          const SegmentParams& params, const mpi::Comm& comm, const core::PhaseReport& phase) {
  const mesh::SlabMesh32 mesh(grid.geometry, slabs, comm.rank(), std::move(density));
  return patches_of(mesh, mesh::CellSpace::uniform(grid.geometry), grid, params, comm, phase);
}

Segmented segment_octree_patches(const grid::GridMeta& grid, const model::AmrRefinement& refinement,
                                 std::vector<std::uint64_t> keys, std::vector<double> density, const SegmentParams& params,
                                 const mpi::Comm& comm, const core::PhaseReport& phase) {
  if (params.refine_positions)
    throw core::Error::usage("--refine-positions fits a 3x3x3 block of equal cells: not on an adaptive mesh");
  const mesh::OctreeMesh mesh(grid.geometry, refinement.levels, std::move(keys), std::move(density), comm);
  Segmented result = patches_of(mesh, mesh::CellSpace::octree(grid.geometry, refinement.levels), grid, params, comm, phase);
  result.patches.refinement = refinement;
  return result;
}

}  // namespace phew::watershed
