// Watershed segmentation of a density field into peak patches (PHEW Sec. 2.2, 3.1), on any mesh that
// offers cells with densities, global indices and neighbours, some of them ghosts of other ranks
// (see WatershedMesh): the uniform grid's blocks (mesh::BlockMesh) and the octree (mesh::OctreeMesh);
// docs/architecture.md ("The mesh") says what a mesh offers.
//
// Order: cells are ranked by (density descending, global index ascending), so ties are broken the same
// way on every decomposition. A test cell (density strictly above the threshold) whose neighbours all
// come after it is a peak; every other test cell belongs to the patch its chain of densest neighbours
// ends in. Peak IDs are 1, 2, 3... in the same order (docs/formats.md,
// "Canonical IDs and ties").
#pragma once

#include <phew/grid/cell_set.hpp>
#include <phew/mpi/comm.hpp>

#include <concepts>
#include <cstdint>
#include <vector>

namespace phew::watershed {

template <typename M>
concept WatershedMesh = requires(const M& m, std::size_t s, const grid::CellSet& t, std::vector<std::int64_t>& v,
                                 const mpi::Comm& c) {
  { m.slots() } -> std::convertible_to<std::size_t>;
  { m.first_local() } -> std::convertible_to<std::size_t>;
  { m.end_local() } -> std::convertible_to<std::size_t>;
  { m.is_local(s) } -> std::convertible_to<bool>;
  { m.is_boundary(s) } -> std::convertible_to<bool>;  // a local slot other ranks hold as a ghost
  { m.density(s) } -> std::convertible_to<double>;
  { m.global_index(s) } -> std::convertible_to<std::int64_t>;
  m.for_each_neighbour(s, [](std::size_t) {});
  // Ghost members of `t` get the values their owners hold for those cells: `v` holds one value per
  // member of t, ghosts too, in slot order (the members of a ghost cell are the same on both sides).
  m.update_ghost_members(t, v, c);
};

// True when cell a comes before cell b in the canonical order.
inline bool denser(double rho_a, std::int64_t a, double rho_b, std::int64_t b) {
  return rho_a > rho_b || (rho_a == rho_b && a < b);
}

struct PeakCell {
  double density;
  std::int64_t cell;  // global index
};

// Labels are held for the test cells only (ghosts too), so the memory goes with the structures, not
// with the grid: 1/4 byte per cell for the set, 8 bytes per test cell for the labels.
struct Segmentation {
  grid::CellSet tests;              // the test cells among the slots
  std::vector<std::int64_t> label;  // per test cell, in slot order: peak ID
  // The peak ID of any slot; 0 below the threshold.
  std::int64_t label_of(std::size_t s) const { return tests.contains(s) ? label[tests.rank(s)] : 0; }
  // Peaks are numbered 1..n_peaks, densest first; rank r holds the block of IDs that
  // mpi::SlabDecomposition(max(n_peaks, 1), ranks) gives it (no rank holds them all).
  std::uint64_t n_peaks = 0;        // over all ranks
  std::int64_t first_peak = 1;      // the ID of own_peaks[0]
  std::vector<PeakCell> own_peaks;  // this rank's block, in ID order
  const PeakCell& own_peak(std::int64_t id) const { return own_peaks[static_cast<std::size_t>(id - first_peak)]; }
  std::vector<std::size_t> peak_slots;  // this rank's local peak cells, ascending
  std::uint64_t test_cells = 0;         // over all ranks
  int rounds = 0;                       // ghost-label exchange rounds until nothing changed
};

// Segments the mesh, the densest neighbours found on `threads` threads (the same result for any
// number). Collective.
template <WatershedMesh Mesh>
Segmentation segment(const Mesh& mesh, double threshold, const mpi::Comm& comm, int threads = 1);

// Slots of a rank's run handed to a thread at a time (a few hundred kB of densities).
inline constexpr std::size_t kSlotsPerChunk = std::size_t{1} << 15;

}  // namespace phew::watershed

#include <phew/watershed/watershed_impl.hpp>
