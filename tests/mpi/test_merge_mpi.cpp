// The distributed merge on 1-4 ranks: analytic graphs with known clumps, levels, parents and haloes;
// random graphs against a serial reference of the paper's algorithm; processing-order invariance.
#include <phew/watershed/merge.hpp>

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace phew::watershed {
namespace {

struct Graph {
  std::vector<double> density;  // by ID - 1; IDs are in canonical (density-descending) order
  std::vector<double> mass;     // by ID - 1 (whole numbers: the reference adds them as doubles); empty: 1 each
  std::map<std::pair<std::int64_t, std::int64_t>, double> saddles;  // (a < b) -> density
};

struct Result {
  std::vector<std::int64_t> clump;   // per peak: level-0 clump, 0 = discarded
  std::vector<std::int64_t> halo;    // per level-0 clump (by ID - 1): its halo; 0 for non-clumps
  std::vector<std::int64_t> parent;  // per clump: the clump it merged into (itself if none)
  std::vector<std::int64_t> level;   // per clump: level of that merger (0 if none)
  bool operator==(const Result&) const = default;
};

// The parallel path: each rank builds its block of the graph, merges, and the result is gathered.
Result distributed(const Graph& gr, double R, double threshold, std::optional<double> S, unsigned shuffle = 0,
                   double floor = 0) {
  const mpi::Comm comm;
  const auto n = static_cast<std::int64_t>(gr.density.size());
  PeakGraph g(n, comm);
  for (std::size_t i = 0; i < g.density.size(); ++i)
    g.density[i] = gr.density[static_cast<std::size_t>(g.first - 1) + i];
  const core::FixedScale scale = core::FixedScale::for_terms(1000.0);
  Criterion noise_rule{Criterion::Kind::relevance, R, threshold, true};
  if (floor > 0) {
    for (std::size_t i = 0; i < g.density.size(); ++i)
      g.mass.push_back(scale.to_fixed(gr.mass.empty() ? 1.0 : gr.mass[static_cast<std::size_t>(g.first - 1) + i]));
    noise_rule.min_mass = scale.to_fixed(floor);
  }
  for (const auto& [ab, s] : gr.saddles) {
    if (g.owner(ab.first) == comm.rank()) g.edges.push_back({ab.first, ab.second, s});
    if (g.owner(ab.second) == comm.rank()) g.edges.push_back({ab.second, ab.first, s});
  }
  g.normalise_edges();
  const MergeOutcome noise = merge_levels(g, noise_rule, comm, shuffle);
  std::vector<std::int64_t> into(g.density.size(), 0);
  for (const Merger& m : noise.mergers) into[g.local(m.node)] = m.into;
  const auto root = resolve_roots(g, into, comm);
  std::set<std::int64_t> discarded(noise.discarded.begin(), noise.discarded.end());
  const auto all_discarded = comm.all_gatherv<std::int64_t>(noise.discarded);
  discarded.insert(all_discarded.begin(), all_discarded.end());
  const std::vector<char> is_clump(g.alive);
  MergeOutcome tree;
  if (S) tree = merge_levels(g, {Criterion::Kind::saddle, *S, threshold, false}, comm, shuffle);
  std::vector<std::int64_t> into2(g.density.size(), 0), parent(g.density.size()), level(g.density.size(), 0);
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = g.first + static_cast<std::int64_t>(i);
  for (const Merger& m : tree.mergers) {
    into2[g.local(m.node)] = m.into;
    parent[g.local(m.node)] = m.into;
    level[g.local(m.node)] = m.level;
  }
  const auto halo = resolve_roots(g, into2, comm);
  std::vector<std::int64_t> clump(root), h(halo);
  for (std::size_t i = 0; i < clump.size(); ++i) {
    if (discarded.count(clump[i])) clump[i] = 0;
    if (!is_clump[i]) h[i] = parent[i] = level[i] = 0;
  }
  // clump[] of a peak whose root was discarded: resolved above only when the root is in this block;
  // the gathered vectors are checked against the reference, which uses the global discarded set.
  Result r{comm.all_gatherv<std::int64_t>(clump), comm.all_gatherv<std::int64_t>(h),
           comm.all_gatherv<std::int64_t>(parent), comm.all_gatherv<std::int64_t>(level)};
  for (auto& c : r.clump)
    if (discarded.count(c)) c = 0;
  return r;
}

// The paper's serial algorithm on a whole graph (Sec. 2.4-2.6): level by level, key saddles from the
// merged saddle lists, upward merges only, isolated irrelevant peaks discarded; with a noise floor, a
// node lighter than it (with what merged into it) is noise too and merges through its key saddle either
// way, unless that neighbour merges into it (merge.hpp).
Result reference(const Graph& gr, double R, double threshold, std::optional<double> S, double floor = 0) {
  const auto n = static_cast<std::int64_t>(gr.density.size());
  std::vector<std::map<std::int64_t, double>> adj(static_cast<std::size_t>(n) + 1);
  for (const auto& [ab, s] : gr.saddles) {
    adj[static_cast<std::size_t>(ab.first)][ab.second] = s;
    adj[static_cast<std::size_t>(ab.second)][ab.first] = s;
  }
  std::vector<std::int64_t> rep(static_cast<std::size_t>(n) + 1);
  for (std::int64_t i = 0; i <= n; ++i) rep[static_cast<std::size_t>(i)] = i;
  std::vector<char> alive(static_cast<std::size_t>(n) + 1, 1), discarded(static_cast<std::size_t>(n) + 1, 0);
  std::vector<std::int64_t> parent(static_cast<std::size_t>(n) + 1), level(static_cast<std::size_t>(n) + 1, 0);
  for (std::int64_t i = 0; i <= n; ++i) parent[static_cast<std::size_t>(i)] = i;
  std::vector<double> mass(static_cast<std::size_t>(n) + 1, 1.0);
  for (std::size_t i = 0; i < gr.mass.size(); ++i) mass[i + 1] = gr.mass[i];

  auto run = [&](bool noise) {
    for (std::int64_t lev = 1;; ++lev) {
      std::map<std::int64_t, std::int64_t> into, down;
      for (std::int64_t p = 1; p <= n; ++p) {
        if (!alive[static_cast<std::size_t>(p)]) continue;
        const auto& nb = adj[static_cast<std::size_t>(p)];
        std::int64_t key = 0;
        double ks = 0;
        for (const auto& [q, s] : nb)
          if (key == 0 || s > ks) {
            key = q;
            ks = s;
          }
        const double rho = gr.density[static_cast<std::size_t>(p - 1)];
        bool merge;
        if (noise) {
          const bool light = floor > 0 && mass[static_cast<std::size_t>(p)] < floor;
          if (rho >= R * (key ? ks : threshold) && !light) continue;
          if (key == 0) {
            alive[static_cast<std::size_t>(p)] = 0;
            discarded[static_cast<std::size_t>(p)] = 1;
            continue;
          }
          merge = key < p;
          if (!merge && light) down[p] = key;
        } else {
          merge = key != 0 && ks > *S && key < p;
        }
        if (merge) into[p] = key;
      }
      for (const auto& [p, q] : down) {
        const auto it = into.find(q);
        if (it == into.end() || it->second != p) into[p] = q;
      }
      down.clear();
      if (into.empty()) return;
      for (auto& [p, q] : into) {
        if (!noise) {
          parent[static_cast<std::size_t>(p)] = q;
          level[static_cast<std::size_t>(p)] = lev;
        }
      }
      auto root = [&](std::int64_t p) {
        while (into.count(p)) p = into[p];
        return p;
      };
      std::map<std::int64_t, std::int64_t> r;
      for (auto& [p, q] : into) r[p] = root(p);
      std::vector<double> gained(mass.size(), 0.0);
      for (auto& [p, q] : r) gained[static_cast<std::size_t>(q)] += mass[static_cast<std::size_t>(p)];
      for (std::size_t i = 0; i < mass.size(); ++i) mass[i] += gained[i];
      for (auto& [p, q] : r) {
        alive[static_cast<std::size_t>(p)] = 0;
        for (std::int64_t i = 1; i <= n; ++i)
          if (rep[static_cast<std::size_t>(i)] == p) rep[static_cast<std::size_t>(i)] = q;
      }
      // Merge saddle lists into the representatives, keeping the maximum.
      std::vector<std::map<std::int64_t, double>> next(static_cast<std::size_t>(n) + 1);
      auto R_of = [&](std::int64_t p) { return r.count(p) ? r[p] : p; };
      for (std::int64_t p = 1; p <= n; ++p)
        for (const auto& [q, s] : adj[static_cast<std::size_t>(p)]) {
          const std::int64_t a = R_of(p), b = R_of(q);
          if (a == b) continue;
          auto& slot = next[static_cast<std::size_t>(a)][b];
          slot = std::max(slot, s);
        }
      adj = next;
    }
  };
  run(true);
  Result res;
  std::vector<char> is_clump(alive);
  for (std::int64_t p = 1; p <= n; ++p) {
    const std::int64_t c = rep[static_cast<std::size_t>(p)];
    res.clump.push_back(discarded[static_cast<std::size_t>(c)] ? 0 : c);
  }
  std::vector<std::int64_t> rep0(rep);
  if (S) run(false);
  for (std::int64_t p = 1; p <= n; ++p) {
    const bool clump = is_clump[static_cast<std::size_t>(p)];
    std::int64_t h = p;
    while (parent[static_cast<std::size_t>(h)] != h) h = parent[static_cast<std::size_t>(h)];
    res.halo.push_back(clump ? h : 0);
    res.parent.push_back(clump ? parent[static_cast<std::size_t>(p)] : 0);
    res.level.push_back(clump ? level[static_cast<std::size_t>(p)] : 0);
  }
  return res;
}

Graph random_graph(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Graph g;
  double rho = 100.0;
  for (std::size_t i = 0; i < n; ++i) g.density.push_back(rho *= 0.9 + 0.1 * u(rng));  // descending
  for (std::size_t i = 1; i < n; ++i) {
    const int edges = 1 + static_cast<int>(u(rng) * 3);
    for (int e = 0; e < edges; ++e) {
      const auto j = static_cast<std::size_t>(u(rng) * static_cast<double>(n));
      if (j == i) continue;
      const double s = std::floor(std::min(g.density[i], g.density[j]) * (0.3 + 0.69 * u(rng)) * 4) / 4;  // ties
      const auto key =
          std::make_pair(static_cast<std::int64_t>(std::min(i, j)) + 1, static_cast<std::int64_t>(std::max(i, j)) + 1);
      g.saddles[key] = std::max(g.saddles[key], s);
    }
  }
  return g;
}

TEST(Merge, AnalyticHierarchy) {
  // Peaks 1..6 (denser first). 1 and 2 are big haloes joined by a low saddle; 3 sits inside 1 on a
  // high saddle (substructure); 4 is a noise bump on 3 (relevance 1.1 < 1.5); 5 is an isolated faint
  // peak (5.5 / threshold 5 = 1.1: discarded); 6 is substructure of 2 through a saddle at 3.1.
  Graph g;
  g.density = {100, 80, 40, 33, 5.5, 12};
  g.saddles[{1, 2}] = 6;
  g.saddles[{1, 3}] = 20;
  g.saddles[{3, 4}] = 30;  // 33 / 30 = 1.1
  g.saddles[{2, 6}] = 3.1 * 2;
  g.saddles[{1, 6}] = 5;
  const Result r = distributed(g, 1.5, 5.0, 10.0);
  EXPECT_EQ(r.clump, (std::vector<std::int64_t>{1, 2, 3, 3, 0, 6}));
  // Saddle threshold 10: 3 merges into 1 (saddle 20, level 1); 6 stays (6.2 < 10); 1 and 2 stay apart.
  EXPECT_EQ(r.halo, (std::vector<std::int64_t>{1, 2, 1, 0, 0, 6}));
  EXPECT_EQ(r.parent, (std::vector<std::int64_t>{1, 2, 1, 0, 0, 6}));
  EXPECT_EQ(r.level, (std::vector<std::int64_t>{0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(r, reference(g, 1.5, 5.0, 10.0));
  // A lower saddle threshold joins everything into halo 1 over two levels: 3 and 2 and 6... level by level.
  const Result low = distributed(g, 1.5, 5.0, 5.5);
  EXPECT_EQ(low, reference(g, 1.5, 5.0, 5.5));
  EXPECT_EQ(low.halo, (std::vector<std::int64_t>{1, 1, 1, 0, 0, 1}));
}

TEST(Merge, RandomGraphsMatchTheSerialReference) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const Graph g = random_graph(60, seed);
    for (double R : {1.05, 1.3, 2.0}) {
      EXPECT_EQ(distributed(g, R, 10.0, std::nullopt), reference(g, R, 10.0, std::nullopt)) << seed << " " << R;
      EXPECT_EQ(distributed(g, R, 10.0, 20.0), reference(g, R, 10.0, 20.0)) << seed << " " << R;
    }
  }
}

// Peaks 1..5 (denser first), masses 50, 3, 4, 2, 30, floor 10. 2 (3 particles' mass) sits on 1: it merges
// up into 1 although its relevance is 4. 3 (4) and 4 (2) are key neighbours of each other, the pair on
// its own (isolated from the rest) but for a low saddle to 5: 4 merges up into 3 (light and upward; 3,
// light too, points down to 4 but 4 merges into it, so 3 stays); 3 now weighs 6, still light: at level 2
// it merges down into 5 (its key neighbour now, through the saddle 1), which keeps its ID. 5 (30) stands.
TEST(Merge, TheNoiseFloorMergesLightPeaksEitherWay) {
  Graph g;
  g.density = {100, 90, 80, 70, 20};
  g.mass = {50, 3, 4, 2, 30};
  g.saddles[{1, 2}] = 22.5;  // relevance of 2: 4
  g.saddles[{3, 4}] = 10;    // relevance of 4: 7
  g.saddles[{3, 5}] = 1;
  g.saddles[{4, 5}] = 0.5;
  const Result r = distributed(g, 3.0, 5.0, std::nullopt, 0, 10.0);
  EXPECT_EQ(r.clump, (std::vector<std::int64_t>{1, 1, 5, 5, 5}));
  EXPECT_EQ(r, reference(g, 3.0, 5.0, std::nullopt, 10.0));
  // Without the floor every peak is relevant.
  EXPECT_EQ(distributed(g, 3.0, 5.0, std::nullopt).clump, (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
  // An isolated light peak is discarded.
  Graph lone;
  lone.density = {100};
  lone.mass = {3};
  EXPECT_EQ(distributed(lone, 3.0, 5.0, std::nullopt, 0, 10.0).clump, (std::vector<std::int64_t>{0}));
}

TEST(Merge, RandomGraphsWithANoiseFloorMatchTheSerialReference) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    Graph g = random_graph(60, seed);
    std::mt19937_64 rng(seed + 1000);
    for (std::size_t i = 0; i < g.density.size(); ++i) g.mass.push_back(static_cast<double>(1 + rng() % 30));
    for (double R : {1.3, 3.0})
      for (double floor : {5.0, 12.0, 40.0})
        for (const unsigned shuffle : {0u, 3u})
          EXPECT_EQ(distributed(g, R, 10.0, 20.0, shuffle, floor), reference(g, R, 10.0, 20.0, floor))
              << seed << " " << R << " " << floor;
  }
}

TEST(Merge, ProcessingOrderDoesNotMatter) {
  const Graph g = random_graph(200, 77);
  const Result base = distributed(g, 1.3, 10.0, 15.0);
  for (unsigned shuffle = 1; shuffle <= 25; ++shuffle) EXPECT_EQ(distributed(g, 1.3, 10.0, 15.0, shuffle), base);
}

TEST(Merge, EmptyGraph) {
  const Graph g;
  const Result r = distributed(g, 1.5, 1.0, 1.0);
  EXPECT_TRUE(r.clump.empty());
}

}  // namespace
}  // namespace phew::watershed
