#include <phew/watershed/merge.hpp>

#include <phew/core/error.hpp>
#include <phew/core/radix_sort.hpp>
#include <phew/mpi/lookup.hpp>
#include <phew/mpi/route.hpp>

#include <algorithm>
#include <bit>
#include <numeric>
#include <random>

namespace phew::watershed {

PeakGraph::PeakGraph(std::int64_t n_nodes, const mpi::Comm& comm)
    : owners(std::max<std::int64_t>(n_nodes, 1), comm.size()),
      first(owners.begin(comm.rank()) + 1),
      density(static_cast<std::size_t>(n_nodes > 0 ? owners.planes(comm.rank()) : 0), 0.0),
      alive(density.size(), 1) {}

void PeakGraph::normalise_edges() {
  // Ordered by (from, to, highest saddle first): by their owned end with the radix sort, then each
  // node's few edges compared; one comparison sort of every edge took 0.1 s of phew-merge on the
  // adaptive mesh's 523 k edges, sorted again after every merger level.
  for (const Edge& e : edges)
    if (local(e.from) >= density.size())
      throw core::Error::internal("peak graph: an edge from node {}, which this rank does not own", e.from);
  std::vector<Edge> scratch;
  core::radix_sort(
      edges, scratch, [&](const Edge& e) { return static_cast<std::uint64_t>(local(e.from)); },
      static_cast<int>(std::bit_width(density.size())));
  const auto by_end_then_saddle = [](const Edge& a, const Edge& b) {
    if (a.to != b.to) return a.to < b.to;
    return a.saddle > b.saddle;
  };
  for (auto run = edges.begin(); run != edges.end();) {
    const auto end = std::find_if(run, edges.end(), [&](const Edge& e) { return e.from != run->from; });
    std::sort(run, end, by_end_then_saddle);
    run = end;
  }
  edges.erase(std::unique(edges.begin(), edges.end(),
                          [](const Edge& a, const Edge& b) { return a.from == b.from && a.to == b.to; }),
              edges.end());
}

std::vector<KeySaddle> key_saddles(const PeakGraph& g) {
  std::vector<KeySaddle> key(g.density.size());
  for (const Edge& e : g.edges) {
    KeySaddle& k = key[g.local(e.from)];
    if (k.to == 0 || e.saddle > k.saddle || (e.saddle == k.saddle && e.to < k.to)) k = {e.to, e.saddle};
  }
  return key;
}

std::vector<std::int64_t> resolve_roots(const PeakGraph& g, const std::vector<std::int64_t>& into,
                                        const mpi::Comm& comm, int* rounds) {
  // ptr[i]: the current best guess of node i's root; jumps to the pointer's pointer each round, so a
  // chain of length L takes about log2(L) rounds.
  std::vector<std::int64_t> ptr(into.size());
  for (std::size_t i = 0; i < into.size(); ++i) ptr[i] = into[i] ? into[i] : g.first + static_cast<std::int64_t>(i);
  int n = 0;
  for (;;) {
    std::vector<std::int64_t> ask;
    for (std::size_t i = 0; i < ptr.size(); ++i)
      if (ptr[i] != g.first + static_cast<std::int64_t>(i)) ask.push_back(ptr[i]);
    const auto next = mpi::lookup<std::int64_t, std::int64_t>(
        comm, ask, [&](std::int64_t id) { return g.owner(id); }, [&](std::int64_t id) { return ptr[g.local(id)]; });
    bool changed = false;
    std::size_t k = 0;
    for (std::size_t i = 0; i < ptr.size(); ++i) {
      if (ptr[i] == g.first + static_cast<std::int64_t>(i)) continue;
      if (next[k] != ptr[i]) {
        ptr[i] = next[k];
        changed = true;
      }
      ++k;
    }
    ++n;
    if (!comm.any(changed)) break;
  }
  if (rounds) *rounds = n;
  return ptr;
}

MergeOutcome merge_levels(PeakGraph& g, const Criterion& c, const mpi::Comm& comm, unsigned shuffle_seed) {
  MergeOutcome out;
  const std::size_t n = g.density.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(shuffle_seed);

  for (std::int64_t level = 1;; ++level) {
    // 1. Decisions from the graph as it stands: merge upward through the key saddle when the criterion
    // says so (downward too for a node below the mass floor, after the lookup below). The order of this
    // loop does not matter; the test hook shuffles it to prove that.
    if (shuffle_seed) std::shuffle(order.begin(), order.end(), rng);
    const std::vector<KeySaddle> key = key_saddles(g);
    std::vector<std::int64_t> into(n, 0);
    std::vector<Merger> level_mergers;
    std::vector<std::size_t> light_down;  // noise by their mass, but their key neighbour is less dense
    std::vector<char> by_mass(n, 0);      // noise by their mass alone (relevant by density)
    for (std::size_t i : order) {
      if (!g.alive[i]) continue;
      const std::int64_t id = g.first + static_cast<std::int64_t>(i);
      const KeySaddle& k = key[i];
      bool light = false;
      if (c.kind == Criterion::Kind::relevance) {
        const double base = k.to ? k.saddle : c.isolated_density;
        const bool faint = g.density[i] < c.value * base;  // density / base < R, without dividing
        light = c.min_mass > 0 && g.mass[i] < c.min_mass;
        by_mass[i] = light && !faint;
        if (!faint && !light) continue;
        if (k.to == 0) {
          if (c.discard_isolated) {
            g.alive[i] = 0;
            out.discarded.push_back(id);
            out.n_light += by_mass[i];
          }
          continue;
        }
      } else if (k.to == 0 || !(k.saddle > c.value)) {
        continue;
      }
      if (k.to < id) {  // upward: lower ID = denser
        into[i] = k.to;
        level_mergers.push_back({id, k.to, level, k.saddle});
        out.n_light += by_mass[i];
      } else if (light) {
        light_down.push_back(i);
      }
    }
    // A light node merges downward too, unless its neighbour merges into it: key neighbours form no
    // cycle but such pairs (a key neighbour's key neighbour is the node only when the two are each
    // other's), so the pairs are the only cycles to avoid, and the upward merger wins.
    if (comm.any(!light_down.empty())) {
      std::sort(light_down.begin(), light_down.end());
      std::vector<std::int64_t> ask;
      for (std::size_t i : light_down) ask.push_back(key[i].to);
      const auto theirs = mpi::lookup<std::int64_t, std::int64_t>(
          comm, ask, [&](std::int64_t id) { return g.owner(id); }, [&](std::int64_t id) { return into[g.local(id)]; });
      for (std::size_t j = 0; j < light_down.size(); ++j) {
        const std::size_t i = light_down[j];
        const std::int64_t id = g.first + static_cast<std::int64_t>(i);
        if (theirs[j] == id) continue;
        into[i] = key[i].to;
        level_mergers.push_back({id, key[i].to, level, key[i].saddle});
        out.n_light += by_mass[i];
      }
    }
    if (!comm.any(!level_mergers.empty())) break;
    ++out.levels;
    std::sort(level_mergers.begin(), level_mergers.end(),
              [](const Merger& a, const Merger& b) { return a.node < b.node; });
    out.mergers.insert(out.mergers.end(), level_mergers.begin(), level_mergers.end());

    // 2. Chains within the level (a into b into c) end at their root.
    int rounds = 0;
    const std::vector<std::int64_t> rep = resolve_roots(g, into, comm, &rounds);
    out.rounds_per_level.push_back(rounds);
    for (std::size_t i = 0; i < n; ++i)
      if (into[i]) g.alive[i] = 0;
    if (c.min_mass > 0) {  // the mass merged into each representative, added exactly
      struct Gain {
        std::int64_t to;
        core::FixedInt mass;
      };
      std::vector<Gain> gains;
      for (std::size_t i = 0; i < n; ++i)
        if (into[i]) gains.push_back({rep[i], g.mass[i]});
      for (const Gain& x : mpi::route(comm, gains, [&](const Gain& x) { return g.owner(x.to); }))
        g.mass[g.local(x.to)] += x.mass;
    }

    // 3. Edges move to the representatives of both ends; self-loops vanish, parallel edges keep the
    // highest saddle.
    std::vector<std::int64_t> targets;
    targets.reserve(g.edges.size());
    for (const Edge& e : g.edges) targets.push_back(e.to);
    const auto to_rep = mpi::lookup<std::int64_t, std::int64_t>(
        comm, targets, [&](std::int64_t id) { return g.owner(id); }, [&](std::int64_t id) { return rep[g.local(id)]; });
    std::vector<Edge> moved;
    for (std::size_t j = 0; j < g.edges.size(); ++j) {
      const Edge e{rep[g.local(g.edges[j].from)], to_rep[j], g.edges[j].saddle};
      if (e.from != e.to) moved.push_back(e);
    }
    g.edges = mpi::route(comm, moved, [&](const Edge& e) { return g.owner(e.from); });
    g.normalise_edges();
  }
  return out;
}

}  // namespace phew::watershed
