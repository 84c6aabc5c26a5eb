// The adaptive mesh as a mesh for the watershed (watershed::WatershedMesh; docs/architecture.md, "The
// mesh"): this rank's leaves, a run of the canonical key order made of whole coarse cells, plus as
// ghosts every leaf of the coarse cells around them that another rank holds. A leaf's neighbours are the
// leaves touching it by a face, an edge or a corner (octree.hpp, touching_leaves), all of which lie in
// its own coarse cell or the 26 around it.
//
// Slots are the local and ghost leaves in key order, so the local ones are contiguous and slot order is
// global index order (the key). A leaf's chunk is its coarse cell, never split between ranks.
#pragma once

#include <phew/core/raw_vector.hpp>
#include <phew/grid/cell_set.hpp>
#include <phew/mesh/octree.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace phew::mesh {

// Real: how the densities are held, float for a float32 file (as stored: the same doubles where they
// are compared) or double.
template <typename Real>
class BasicOctreeMesh {
 public:
  // `keys` and `density`: this rank's leaves in key order (every leaf of its coarse cells, the runs of
  // ranks 0, 1, ... the whole mesh). Fetches the ghosts from their owners. Collective.
  BasicOctreeMesh(const grid::GridGeometry& coarse, int levels, std::vector<std::uint64_t> keys,
                  std::vector<Real> density, const mpi::Comm& comm);
  // The mesh of some of the leaves only (the watershed's: those above its threshold), each rank's taken
  // from its run of keys [cuts[rank], cuts[rank + 1]) (CellSpace::rank_cuts). A leaf's neighbours are
  // those among them that touch it; the ghosts are those of the other ranks. Collective.
  BasicOctreeMesh(const grid::GridGeometry& coarse, int levels, const std::vector<std::int64_t>& cuts,
                  std::vector<std::uint64_t> keys, std::vector<Real> density, const mpi::Comm& comm);

  std::size_t slots() const { return key_.size(); }
  std::size_t first_local() const { return first_; }
  std::size_t end_local() const { return end_; }
  bool is_local(std::size_t s) const { return s >= first_ && s < end_; }
  bool is_boundary(std::size_t s) const { return is_local(s) && boundary_[s - first_] != 0; }
  double density(std::size_t s) const { return density_[s]; }
  std::int64_t global_index(std::size_t s) const { return static_cast<std::int64_t>(key_[s]); }
  std::int64_t chunk(std::size_t s) const;  // the leaf's coarse cell (linear index)
  Cell cell(std::size_t s) const { return cell_of_key(key_[s], levels_); }
  int levels() const { return levels_; }
  const grid::GridGeometry& coarse() const { return coarse_; }

  // The leaves touching local leaf s, each once, in a fixed order (the 26 directions, then octants; the
  // watershed's results do not depend on it): at most 6 faces x 4 + 12 edges x 2 + 8 corners of finer leaves.
  using Neighbours = std::array<std::uint32_t, 56>;
  std::size_t neighbours_of(std::size_t s, Neighbours& out) const { return neighbours_of(s, out.data()); }
  // The same into `out`, room for 56 (keep_neighbours writes them straight into its lists).
  std::size_t neighbours_of(std::size_t s, std::uint32_t* out) const;
  template <typename F>
  void for_each_neighbour(std::size_t s, F&& f) const {
    if (!kept_.empty() && is_local(s)) {
      const std::size_t i = s - first_;
      const core::RawVector<std::uint32_t>& list = kept_[i / kept_chunk_];
      const std::size_t e = (i + 1) % kept_chunk_ != 0 && i + 1 < end_ - first_ ? kept_at_[i + 1] : list.size();
      for (std::size_t k = kept_at_[i]; k < e; ++k) f(static_cast<std::size_t>(list[k]));
      return;
    }
    Neighbours n;
    const std::size_t count = neighbours_of(s, n);
    for (std::size_t i = 0; i < count; ++i) f(static_cast<std::size_t>(n[i]));
  }
  // Finds the neighbours of every local leaf once, on `threads` threads, and keeps them for the passes
  // that follow (the watershed and its saddles each ask for all of them): 4 bytes a neighbour and 4 a
  // leaf. For a mesh of the test leaves (a few neighbours each), not of every leaf. `chunk`: slots per
  // list (the threads' share; any size gives the same neighbours).
  void keep_neighbours(int threads, std::size_t chunk = std::size_t{1} << 14);

  // Ghost members of `members` get their owners' values (one value per member, in slot order). A ghost
  // leaf is a member on its owner too (the same density decides). Collective.
  void update_ghost_members(const grid::CellSet& members, std::vector<std::int64_t>& values,
                            const mpi::Comm& comm) const;

 private:
  grid::GridGeometry coarse_;
  int levels_;
  std::uint64_t serial_;  // this mesh's number among those made in the process (neighbours_of's memo)
  bool every_leaf_;       // every leaf of the ranks' runs, so every neighbour is found (else some only)
  std::vector<std::uint64_t> key_;
  std::vector<Real> density_;
  std::size_t first_ = 0, end_ = 0;
  std::vector<char> boundary_;  // per local slot
  // The coarse cells among the slots: the first key of each one's subtree, and its first slot (+ the end).
  std::vector<std::uint64_t> coarse_begin_;
  std::vector<std::size_t> coarse_slot_;
  // Ghost exchange: for each rank, the local slots it holds as ghosts (in key order), and the ghost
  // slots this rank holds of it (in key order).
  std::vector<std::vector<std::uint32_t>> send_, receive_;
  // keep_neighbours: the local slots' neighbours in chunks of kept_chunk_ slots (one list per chunk, so
  // that threads fill them apart), and where each slot's begin in its chunk's list.
  std::size_t kept_chunk_ = 1;
  std::vector<core::RawVector<std::uint32_t>> kept_;
  std::vector<std::uint32_t> kept_at_;

  void build(const std::vector<std::int64_t>& cuts, std::vector<std::uint64_t> keys, std::vector<Real> density,
             const mpi::Comm& comm);
};

using OctreeMesh = BasicOctreeMesh<double>;
using OctreeMesh32 = BasicOctreeMesh<float>;

}  // namespace phew::mesh
