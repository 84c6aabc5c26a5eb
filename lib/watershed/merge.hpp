// Merging peaks through their key saddles, level by level (PHEW Sec. 2.4-2.7, 3.6), on a peak graph
// distributed over ranks by blocks of peak IDs.
//
// The merging rules of Sec. 2.7 make the result depend only on the set of saddles used: a node only
// merges upward (into a node with a lower ID, i.e. denser), only through its key saddle (the highest;
// equal saddles go to the lower neighbour ID), and the criterion is the relevance or the key saddle
// density. One exception, the noise floor (Criterion::min_mass): a node lighter than the floor merges
// through its key saddle whichever way it points, since a fragment of a few particles must join the
// object it sits on even when its one dense cell outshines that object's peak; such a pair of key
// neighbours keeps the upward merger, so the result still depends only on the graph and the masses.
// Every decision of a level is taken from the graph as it stood at the start of the level;
// chains of mergers within a level are resolved by pointer jumping; then the edges of merged nodes are
// relabelled to their new representatives (keeping the highest saddle of each pair). No rank ever
// holds the whole graph.
#pragma once

#include <phew/core/fixed_sum.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/slab.hpp>

#include <cstdint>
#include <vector>

namespace phew::watershed {

struct Edge {
  std::int64_t from = 0, to = 0;  // node IDs; `from` is owned by this rank
  double saddle = 0;
};

// This rank's part of the graph: nodes [first, last] (IDs) owned by block, their density, whether they
// are still representatives ("alive"), and the edges leaving them.
struct PeakGraph {
  mpi::SlabDecomposition owners;  // over id - 1
  std::int64_t first = 1;         // first owned ID
  std::vector<double> density;    // per owned node
  std::vector<char> alive;        // per owned node
  std::vector<Edge> edges;        // from alive owned nodes; one edge per neighbour, the highest saddle
  // Per owned node, in fixed point (exact in any order, so a floor decides the same on any ranks):
  // its mass and the mass merged into it. Only a criterion with a mass floor reads it (may stay empty).
  std::vector<core::FixedInt> mass;

  PeakGraph(std::int64_t n_nodes, const mpi::Comm& comm);
  std::size_t local(std::int64_t id) const { return static_cast<std::size_t>(id - first); }
  int owner(std::int64_t id) const { return owners.owner(id - 1); }
  // Keeps the highest saddle per (from, to) and sorts edges by (from, to).
  void normalise_edges();
};

struct Criterion {
  enum class Kind { relevance, saddle } kind = Kind::relevance;
  double value = 0;               // relevance threshold, or absolute saddle density threshold
  double isolated_density = 0;    // relevance of an isolated node is density / this (the density threshold)
  bool discard_isolated = false;  // noise removal: an isolated irrelevant node is discarded
  // Noise removal: a node lighter than this (PeakGraph::mass units; 0: no floor) is noise too, however
  // dense its peak: it merges through its key saddle, into a less dense neighbour if need be (the
  // neighbour keeps its ID), unless that neighbour merges into it.
  core::FixedInt min_mass = 0;
};

// The key saddle of a node: the highest saddle, ties to the lower neighbour ID. to == 0: isolated.
struct KeySaddle {
  std::int64_t to = 0;
  double saddle = 0;
};

// One merger of a level: `node` merged through its key saddle into `into` (its key neighbour).
struct Merger {
  std::int64_t node = 0, into = 0;
  std::int64_t level = 0;  // 1, 2, ...
  double saddle = 0;
};

struct MergeOutcome {
  std::vector<Merger> mergers;          // of nodes owned here, in level then ID order
  std::vector<std::int64_t> discarded;  // owned nodes discarded (isolated and irrelevant)
  std::vector<int> rounds_per_level;    // pointer-jumping rounds of each level (same on all ranks)
  int levels = 0;                       // levels that merged something
  std::int64_t n_light = 0;             // owned nodes merged or discarded for their mass alone
};

// The key saddle of every alive owned node (indexed like density; to == 0 when isolated).
std::vector<KeySaddle> key_saddles(const PeakGraph& g);

// Merges level by level until a level merges nothing; updates the graph (alive flags, edges).
// Collective. `shuffle_seed` != 0 shuffles the local processing order (a test hook: the result must not
// depend on it).
MergeOutcome merge_levels(PeakGraph& g, const Criterion& c, const mpi::Comm& comm, unsigned shuffle_seed = 0);

// The root of each owned node in the forest of `into` pointers (0 = no pointer: the node is a root),
// by pointer jumping across ranks. Returns roots indexed like density. Collective.
std::vector<std::int64_t> resolve_roots(const PeakGraph& g, const std::vector<std::int64_t>& into,
                                        const mpi::Comm& comm, int* rounds = nullptr);

}  // namespace phew::watershed
