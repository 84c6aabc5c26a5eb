// lib/mesh's octree: keys, the dilation of cells by their codes against every cell's distance, the refinement rule against a dense serial reference written here, the
// one-level balance of touching leaves, the tiling of the box, mass conservation of the leaf deposit,
// the leaf deposit against a brute-force integral of each cloud over each leaf, and no refinement
// equal to the uniform grid's deposit.
#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/grid/deposit.hpp>
#include <phew/mesh/cell_finder.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/mesh/code_dilation.hpp>
#include <phew/mesh/coarse_runs.hpp>
#include <phew/mesh/oct_neighbours.hpp>
#include <phew/mesh/octree.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/slab.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>

namespace phew::mesh {
namespace {

grid::GridGeometry cube(std::int64_t n, double box, bool periodic = true) {
  grid::GridGeometry g;
  g.shape = {n, n, n};
  g.extent = {box, box, box};
  g.periodic = periodic;
  return g;
}

// Gaussian blobs of different widths and masses in a uniform background: dense cores that refine
// several levels, outskirts that refine one, and empty space that does not.
std::vector<double> blobs(std::uint32_t seed, std::size_t n, double box, std::vector<double>& mass, bool equal = true) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(0, box), mass_of(0.5, 2.0);
  const std::array<std::array<double, 4>, 3> blob{
      {{0.3, 0.4, 0.5, 0.02}, {0.72, 0.7, 0.31, 0.05}, {0.98, 0.05, 0.5, 0.03}}};
  std::vector<double> pos;
  mass.clear();
  for (std::size_t p = 0; p < n; ++p) {
    const std::size_t b = p % 4;
    for (int d = 0; d < 3; ++d) {
      double x =
          b == 3 ? uni(rng)
                 : std::normal_distribution<double>(blob[b][static_cast<std::size_t>(d)] * box, blob[b][3] * box)(rng);
      x = x - box * std::floor(x / box);
      if (x >= box) x = 0;
      pos.push_back(x);
    }
    mass.push_back(equal ? 1.0 : mass_of(rng));
  }
  return pos;
}

// The particles in the deposit's canonical order: coarse cell by coarse cell (linear index), those outside
// an open grid first, each cell's in their order.
void file_by_coarse_cell(const grid::GridGeometry& g, std::vector<double>& pos, std::vector<double>& mass) {
  std::vector<std::pair<std::int64_t, std::size_t>> order;
  const LevelLattice level0(g, 0);
  for (std::size_t p = 0; p < mass.size(); ++p) {
    Cell c{0, {0, 0, 0}};
    const auto u = level0.position({pos[3 * p], pos[3 * p + 1], pos[3 * p + 2]});
    for (std::size_t d = 0; d < 3; ++d) c.index[d] = static_cast<std::int64_t>(std::floor(u[d]));
    order.emplace_back(normalise_cell(g, c) ? g.linear({c.index[0], c.index[1], c.index[2]}) : -1, p);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<double> x, m;
  for (const auto& [cell, p] : order) {
    x.insert(x.end(), {pos[3 * p], pos[3 * p + 1], pos[3 * p + 2]});
    m.push_back(mass[p]);
  }
  pos.swap(x);
  mass.swap(m);
}

double total(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

TEST(CellKey, RoundTripsAndOrdersParentsBeforeTheirSubtree) {
  const int levels = 5;
  const Cell c{3, {37, 5, 63}};
  EXPECT_EQ(cell_of_key(cell_key(c, levels), levels), c);
  // The corners of the largest lattice: 2^19 cells per axis at level 15; its keys are positive int64.
  const Cell finest{15, {(1 << 19) - 1, 0, (1 << 19) - 1}}, coarse{5, {511, 57, 0}};
  EXPECT_EQ(cell_of_key(cell_key(finest, 15), 15), finest);
  EXPECT_EQ(cell_of_key(cell_key(coarse, 15), 15), coarse);
  EXPECT_LT(cell_key(coarse, 15), cell_key(finest, 15));
  EXPECT_LT(cell_key(finest, 15), std::uint64_t{1} << 63);
  for (int o = 0; o < 8; ++o) {
    const Cell k = child(c, o);
    EXPECT_EQ(parent(k), c);
    EXPECT_LT(cell_key(c, levels), cell_key(k, levels));
    // The subtree of c ends before c's next sibling on the curve begins.
    const Cell next_sibling{3, {37, 5, 64}};
    EXPECT_LT(cell_key(k, levels), cell_key(next_sibling, levels) | 0xF);
  }
  EXPECT_LT(cell_key(child(c, 0), levels), cell_key(child(c, 1), levels));
  EXPECT_LT(cell_key(child(c, 3), levels), cell_key(child(c, 4), levels));
}

// A level's lattice made once gives the bits of the position worked out in full at each call: the cells
// per length (n 2^l) / L, the offset times it, wrapped into a periodic box. Points near and on the box's
// edges, outside it, at every level, periodic and open, a box not at the origin.
// Every cell of the lattice within r (Chebyshev) of one of the cells, wrapped or clipped: the
// definition, cell by cell, against both of dilate_codes' ways (a bitmap when many cells are given,
// sorted lists when few).
TEST(CodeDilation, GrowsTheCellsAsEveryCellsDistanceSays) {
  std::mt19937_64 rng(47);
  for (const bool periodic : {true, false})
    for (const Index3 shape : {Index3{6, 5, 3}, Index3{8, 8, 8}, Index3{3, 7, 2}, Index3{1, 4, 9}})
      for (const int level : {0, 1})
        for (const int r : {1, 2, 3})
          for (const double fill : {0.002, 0.02, 0.3}) {
            grid::GridGeometry g;
            g.shape = shape;
            g.extent = {1.0, 1.0, 1.0};
            g.periodic = periodic;
            const Index3 n{shape[0] << level, shape[1] << level, shape[2] << level};
            std::vector<Index3> chosen;
            std::vector<std::uint64_t> codes;
            std::bernoulli_distribution pick(fill);
            for (std::int64_t i = 0; i < n[0]; ++i)
              for (std::int64_t j = 0; j < n[1]; ++j)
                for (std::int64_t k = 0; k < n[2]; ++k)
                  if (pick(rng) || (chosen.empty() && i == n[0] - 1 && j == n[1] - 1 && k == n[2] - 1)) {
                    chosen.push_back({i, j, k});
                    codes.push_back(morton3(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j),
                                            static_cast<std::uint64_t>(k)));
                  }
            std::sort(codes.begin(), codes.end());
            // The distance along an axis, the short way round a periodic lattice.
            const auto apart = [&](std::int64_t a, std::int64_t b, std::int64_t cells) {
              const std::int64_t d = std::abs(a - b);
              return periodic ? std::min(d, cells - d) : d;
            };
            std::vector<std::uint64_t> expected;
            for (std::int64_t i = 0; i < n[0]; ++i)
              for (std::int64_t j = 0; j < n[1]; ++j)
                for (std::int64_t k = 0; k < n[2]; ++k)
                  for (const Index3& c : chosen)
                    if (apart(i, c[0], n[0]) <= r && apart(j, c[1], n[1]) <= r && apart(k, c[2], n[2]) <= r) {
                      expected.push_back(morton3(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j),
                                                 static_cast<std::uint64_t>(k)));
                      break;
                    }
            std::sort(expected.begin(), expected.end());
            EXPECT_EQ(dilate_codes(g, level, codes, r), expected)
                << "periodic " << periodic << ", shape " << shape[0] << "x" << shape[1] << "x" << shape[2] << ", level "
                << level << ", r " << r << ", " << codes.size() << " cells";
          }
  // A few cells on a large lattice (the sorted lists) and many on it (the bitmap) give the same set.
  const grid::GridGeometry big = cube(64, 1.0);
  std::vector<std::uint64_t> few{morton3(0, 0, 0), morton3(63, 5, 17), morton3(20, 63, 63)};
  std::vector<std::uint64_t> few_grown = dilate_codes(big, 1, few, 2);
  EXPECT_EQ(few_grown.size(), 3u * 125u);
  std::vector<std::uint64_t> many;
  for (std::uint64_t c = 0; c < (std::uint64_t{1} << 21); c += 97) many.push_back(c);
  many.insert(many.end(), few.begin(), few.end());
  std::sort(many.begin(), many.end());
  many.erase(std::unique(many.begin(), many.end()), many.end());
  const std::vector<std::uint64_t> many_grown = dilate_codes(big, 1, many, 1);
  EXPECT_TRUE(std::is_sorted(many_grown.begin(), many_grown.end()));
  for (const std::uint64_t c : dilate_codes(big, 1, few, 1))
    EXPECT_TRUE(std::binary_search(many_grown.begin(), many_grown.end(), c)) << c;
}

TEST(LevelLattice, GivesTheBitsOfTheFullExpression) {
  std::mt19937_64 rng(41);
  for (const bool periodic : {true, false}) {
    grid::GridGeometry g;
    g.shape = {24, 17, 32};
    g.origin = {-3.7, 0.0, 125.25};
    g.extent = {50.0 / 3.0, 7.1, 1000.0};
    g.periodic = periodic;
    for (int level = 0; level <= 6; ++level) {
      const mesh::LevelLattice lattice(g, level);
      std::uniform_real_distribution<double> f(-0.1, 1.1);
      for (int k = 0; k < 2000; ++k) {
        std::array<double, 3> x{};
        for (std::size_t d = 0; d < 3; ++d) {
          const double t = k % 7 == 0 ? std::nextafter(1.0, 0.0) : k % 11 == 0 ? 0.0 : f(rng);
          x[d] = g.origin[d] + t * g.extent[d];
        }
        const auto u = lattice.position(x);
        for (std::size_t d = 0; d < 3; ++d) {
          const double n = static_cast<double>(g.shape[d] << level);
          double want = (x[d] - g.origin[d]) * (n / g.extent[d]);
          if (periodic) {
            if (want >= n) want -= n;
            if (want < 0) want += n;
            if (!(want >= 0 && want < n)) want = 0;
          }
          ASSERT_EQ(std::memcmp(&u[d], &want, sizeof want), 0) << "level " << level << " axis " << d << " x " << x[d];
        }
      }
    }
  }
}

TEST(Octree, RefusesTooManyLevelsAndTooFineALattice) {
  const std::vector<double> none;
  RefinementParams p;
  p.levels = 16;
  EXPECT_THROW(build_octree(cube(8, 1), p, none, none), core::Error);
  p.levels = 12;
  grid::GridGeometry rod = cube(1, 1);
  rod.shape = {512, 1, 1};
  EXPECT_THROW(build_octree(rod, p, none, none), core::Error);  // 2^21 cells along x
  p.levels = 11;
  EXPECT_THROW(build_octree(rod, p, none, none), core::Error);  // 2^20
  p.levels = 10;
  EXPECT_NO_THROW(build_octree(rod, p, none, none));
  p.refine_particles = 0;
  EXPECT_THROW(build_octree(cube(8, 1), p, none, none), core::Error);
}

// The dense reference of the refinement rule: every level's lattice held whole, each rule step a loop
// over it, the particles' cells found from scratch at each level.
struct DenseTree {
  std::vector<std::vector<char>> exists, split;  // per level, over the whole lattice, C order
};

DenseTree dense_reference(const grid::GridGeometry& g, const RefinementParams& p, const std::vector<double>& pos,
                          const std::vector<double>& mass) {
  const std::int64_t n0 = g.shape[0];
  const auto L = static_cast<std::size_t>(p.levels);
  const auto at = [](std::int64_t n, std::int64_t i, std::int64_t j, std::int64_t k) {
    const auto w = [n](std::int64_t x) { return ((x % n) + n) % n; };
    return static_cast<std::size_t>((w(i) * n + w(j)) * n + w(k));
  };
  // Calls f(i, j, k) for every cell within r of a marked cell of an n^3 lattice (periodic).
  const auto grow = [&](std::int64_t n, const std::vector<char>& marked, int r, auto&& f) {
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t k = 0; k < n; ++k)
          if (marked[at(n, i, j, k)])
            for (int a = -r; a <= r; ++a)
              for (int b = -r; b <= r; ++b)
                for (int c = -r; c <= r; ++c) f(i + a, j + b, k + c);
  };
  // 1. The mass rule level by level: a level's masses from the particles inside its existing cells; the
  // heavy cells and the existing cells within the buffer of them are split to reach the next level.
  std::vector<std::vector<char>> exists, heavy;
  for (std::size_t l = 0; l <= L; ++l) {
    const std::int64_t n = n0 << l;
    exists.emplace_back(static_cast<std::size_t>(n * n * n), l == 0 ? 1 : 0);
    heavy.emplace_back(static_cast<std::size_t>(n * n * n), 0);
  }
  for (std::size_t l = 0; l < L; ++l) {
    const std::int64_t n = n0 << l;
    const double h = g.extent[0] / static_cast<double>(n);
    std::vector<double> m(exists[l].size(), 0.0);
    for (std::size_t q = 0; q < mass.size(); ++q) {
      std::array<double, 3> u{};
      std::array<std::int64_t, 3> cell{};
      for (int d = 0; d < 3; ++d) {
        u[d] = pos[3 * q + d] / h;
        cell[d] = static_cast<std::int64_t>(std::floor(u[d]));
      }
      if (!exists[l][at(n, cell[0], cell[1], cell[2])]) continue;  // the particle counts where its level-l cell exists
      for (std::int64_t a = cell[0] - 1; a <= cell[0] + 1; ++a)
        for (std::int64_t b = cell[1] - 1; b <= cell[1] + 1; ++b)
          for (std::int64_t c = cell[2] - 1; c <= cell[2] + 1; ++c) {
            // CIC: the overlap of the unit cloud centred at u with cell [a, a+1).
            const double w = std::max(0.0, 1 - std::abs(u[0] - (static_cast<double>(a) + 0.5))) *
                             std::max(0.0, 1 - std::abs(u[1] - (static_cast<double>(b) + 0.5))) *
                             std::max(0.0, 1 - std::abs(u[2] - (static_cast<double>(c) + 0.5)));
            if (w > 0 && exists[l][at(n, a, b, c)]) m[at(n, a, b, c)] += mass[q] * w;
          }
    }
    for (std::size_t s = 0; s < m.size(); ++s) heavy[l][s] = m[s] > p.refine_particles * p.particle_mass;
    std::vector<char> split = heavy[l];
    for (int round = 0; round < p.buffer; ++round) {
      std::vector<char> grown = split;
      grow(n, split, 1, [&](std::int64_t i, std::int64_t j, std::int64_t k) {
        if (exists[l][at(n, i, j, k)]) grown[at(n, i, j, k)] = 1;
      });
      split = grown;
    }
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t k = 0; k < n; ++k)
          if (split[at(n, i, j, k)])
            for (int o = 0; o < 8; ++o)
              exists[l + 1][at(2 * n, 2 * i + (o >> 2 & 1), 2 * j + (o >> 1 & 1), 2 * k + (o & 1))] = 1;
  }
  // 2. Flagged: the heavy cells with every cell within the buffer, on the whole lattice. 3. RAMSES'
  // balance as its flag_fine states it, from the finest level down: a cell of level l-1 is required when
  // it lies within 1 + buffer cells of the parent of a cell flagged or required at level l.
  std::vector<std::vector<char>> split(L + 1);
  for (std::size_t l = 0; l <= L; ++l) split[l].assign(heavy[l].size(), 0);
  for (std::size_t l = 0; l < L; ++l)
    grow(n0 << l, heavy[l], p.buffer,
         [&](std::int64_t i, std::int64_t j, std::int64_t k) { split[l][at(n0 << l, i, j, k)] = 1; });
  for (std::size_t l = L - 1; l >= 1; --l) {
    const std::int64_t n = n0 << l;
    std::vector<char> parent(split[l - 1].size(), 0);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t k = 0; k < n; ++k)
          if (split[l][at(n, i, j, k)]) parent[at(n / 2, i / 2, j / 2, k / 2)] = 1;
    grow(n / 2, parent, 1 + p.buffer,
         [&](std::int64_t i, std::int64_t j, std::int64_t k) { split[l - 1][at(n / 2, i, j, k)] = 1; });
  }
  // 4. The tree of those splits.
  DenseTree t;
  for (std::size_t l = 0; l <= L; ++l) {
    t.exists.emplace_back(split[l].size(), l == 0 ? 1 : 0);
    t.split.emplace_back(split[l].size(), 0);
  }
  for (std::size_t l = 0; l < L; ++l) {
    const std::int64_t n = n0 << l;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t k = 0; k < n; ++k) {
          if (!split[l][at(n, i, j, k)]) continue;
          EXPECT_TRUE(t.exists[l][at(n, i, j, k)]) << "a split cell's parent is split";
          t.split[l][at(n, i, j, k)] = 1;
          for (int o = 0; o < 8; ++o)
            t.exists[l + 1][at(2 * n, 2 * i + (o >> 2 & 1), 2 * j + (o >> 1 & 1), 2 * k + (o & 1))] = 1;
        }
  }
  return t;
}

TEST(Octree, SplitsTheCellsTheDenseReferenceSplits) {
  for (const std::uint32_t seed : {1u, 2u, 3u}) {
    std::vector<double> mass;
    const auto pos = blobs(seed, 6000, 10.0, mass);
    const auto g = cube(8, 10.0);
    RefinementParams p;
    p.levels = 3;
    p.refine_particles = seed == 3 ? 40 : 8;
    p.buffer = seed == 2 ? 2 : 1;
    const Octree tree = build_octree(g, p, pos, mass);
    const DenseTree want = dense_reference(g, p, pos, mass);
    std::uint64_t split_cells = 0;
    for (int l = 0; l <= p.levels; ++l) {
      const std::int64_t n = 8 << l;
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t k = 0; k < n; ++k) {
            const std::size_t s = static_cast<std::size_t>((i * n + j) * n + k);
            const Cell c{l, {i, j, k}};
            ASSERT_EQ(tree.slot(c) >= 0, want.exists[static_cast<std::size_t>(l)][s] != 0)
                << "seed " << seed << " level " << l;
            ASSERT_EQ(tree.split(c), want.split[static_cast<std::size_t>(l)][s] != 0)
                << "seed " << seed << " level " << l;
            split_cells += tree.split(c);
          }
    }
    EXPECT_GT(tree.cells(3), 0u) << "the cores reach the finest level";
    EXPECT_GT(split_cells, 0u);
  }
}

// Every leaf, as seen from each cell of the finest lattice, and the leaves seen from touching cells.
TEST(Octree, TouchingLeavesDifferByOneLevelAtMostAndTileTheBox) {
  std::vector<double> mass;
  const auto pos = blobs(7, 8000, 1.0, mass);
  RefinementParams p;
  p.levels = 3;
  p.buffer = 0;  // the balance alone must hold it
  const Octree tree = build_octree(cube(8, 1.0), p, pos, mass);
  const std::int64_t n = 64;
  std::vector<int> level(static_cast<std::size_t>(n * n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t k = 0; k < n; ++k)
        level[static_cast<std::size_t>((i * n + j) * n + k)] =
            tree.leaf_at({(static_cast<double>(i) + 0.5) / 64, (static_cast<double>(j) + 0.5) / 64,
                          (static_cast<double>(k) + 0.5) / 64})
                .level;
  int worst = 0;
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t k = 0; k < n; ++k)
        for (int a = -1; a <= 1; ++a)
          for (int b = -1; b <= 1; ++b)
            for (int c = -1; c <= 1; ++c) {
              const auto w = [n](std::int64_t x) { return ((x % n) + n) % n; };
              worst =
                  std::max(worst, std::abs(level[static_cast<std::size_t>((i * n + j) * n + k)] -
                                           level[static_cast<std::size_t>((w(i + a) * n + w(j + b)) * n + w(k + c))]));
            }
  EXPECT_EQ(worst, 1);
  // The leaves tile the box: their volumes in finest cells add up to the lattice, and each finest
  // cell's leaf is one of them.
  std::uint64_t finest_cells = 0;
  std::map<std::uint64_t, int> keys;
  for (const Cell& c : tree.leaves()) {
    finest_cells += std::uint64_t{1} << (3 * (p.levels - c.level));
    keys[cell_key(c, p.levels)] = c.level;
  }
  EXPECT_EQ(finest_cells, static_cast<std::uint64_t>(n * n * n));
  EXPECT_EQ(keys.size(), tree.leaf_count());
  EXPECT_EQ(tree.leaf_count(), tree.leaves().size());
}

// Two leaves touch when their closed boxes on the finest lattice meet (a face, an edge or a corner),
// in some periodic image: by brute force over every pair.
TEST(Octree, TouchingLeavesAreThoseWhoseBoxesMeet) {
  for (const bool periodic : {true, false}) {
    std::vector<double> mass;
    const auto pos = blobs(21, 3000, 1.0, mass);
    RefinementParams p;
    p.levels = 3;
    p.refine_particles = 5;
    p.buffer = periodic ? 1 : 0;
    grid::GridGeometry g = cube(6, 1.0, periodic);
    g.shape = {6, 5, 4};
    const Octree tree = build_octree(g, p, pos, mass);
    const auto leaves = tree.leaves();
    const std::int64_t f = 8;  // finest cells per coarse cell
    const Index3 n{6 * f, 5 * f, 4 * f};
    const auto meet = [&](const Cell& a, const Cell& b) {
      for (std::size_t d = 0; d < 3; ++d) {
        const std::int64_t sa = f >> a.level, sb = f >> b.level;
        const std::int64_t a0 = a.index[d] * sa, b0 = b.index[d] * sb;
        bool any = false;
        for (const std::int64_t shift : {-n[d], std::int64_t{0}, n[d]}) {
          if (!periodic && shift != 0) continue;
          any = any || (b0 + shift <= a0 + sa && a0 <= b0 + shift + sb);
        }
        if (!any) return false;
      }
      return true;
    };
    std::size_t pairs = 0, across_levels = 0;
    for (const Cell& a : leaves) {
      std::vector<Cell> want;
      for (const Cell& b : leaves)
        if (!(a == b) && meet(a, b)) want.push_back(b);  // leaves() is in key order already
      const auto got = touching_leaves(tree, a);
      ASSERT_EQ(got, want) << "leaf level " << a.level << " (" << a.index[0] << "," << a.index[1] << "," << a.index[2]
                           << ")";
      pairs += got.size();
      for (const Cell& b : got) across_levels += b.level != a.level;
    }
    EXPECT_GT(across_levels, 0u);
    EXPECT_GT(pairs, 26 * leaves.size() / 2);
  }
}

// The galloping search from a hint finds std::lower_bound's answer from every start, for targets below,
// between, on and above the keys (repeated keys too).
TEST(OctNeighbours, FirstAtOrAfterIsTheLowerBoundFromAnyStart) {
  std::mt19937_64 rng(3);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{100}}) {
    std::vector<std::uint64_t> keys(n);
    for (auto& k : keys) k = 10 + 3 * (rng() % 60);
    std::sort(keys.begin(), keys.end());
    for (std::uint64_t target = 0; target < 200; ++target)
      for (std::size_t from = 0; from < n + 2; ++from)
        ASSERT_EQ(first_at_or_after(keys, from, target),
                  static_cast<std::size_t>(std::lower_bound(keys.begin(), keys.end(), target) - keys.begin()))
            << n << " keys, target " << target << ", from " << from;
  }
}

// OctNeighbours (the watershed's test leaves' neighbours, an oct at a time) lists each leaf whose box
// meets the leaf's, once, among all the leaves or some of them: by brute force, on coarse lattices of one
// and two cells along periodic axes too, where the cells either side of an oct are one.
TEST(OctNeighbours, ListTheLeavesWhoseBoxesMeetOnceEach) {
  const int levels = 2;
  const std::int64_t f = 4;  // finest cells per coarse cell
  std::size_t checked = 0, coarser_wrapped = 0;
  for (const Index3 shape : {Index3{2, 2, 2}, Index3{2, 5, 1}, Index3{3, 4, 2}})
    for (const bool periodic : {true, false})
      for (const double refine_particles : {8.0, 300.0}) {
        std::vector<double> mass;
        const auto pos = blobs(5, 3000, 1.0, mass);
        RefinementParams p;
        p.levels = levels;
        p.refine_particles = refine_particles;
        grid::GridGeometry g = cube(1, 1.0, periodic);
        g.shape = shape;
        const Octree tree = build_octree(g, p, pos, mass);
        const auto leaves = tree.leaves();  // key order
        const Index3 n{shape[0] * f, shape[1] * f, shape[2] * f};
        const auto meet = [&](const Cell& a, const Cell& b) {
          for (std::size_t d = 0; d < 3; ++d) {
            const std::int64_t sa = f >> a.level, sb = f >> b.level;
            const std::int64_t a0 = a.index[d] * sa, b0 = b.index[d] * sb;
            bool any = false;
            for (const std::int64_t shift : {-n[d], std::int64_t{0}, n[d]})
              any = any || ((periodic || shift == 0) && b0 + shift <= a0 + sa && a0 <= b0 + shift + sb);
            if (!any) return false;
          }
          return true;
        };
        std::mt19937 rng(7);
        for (const bool some : {false, true}) {
          std::vector<Cell> kept;
          for (const Cell& c : leaves)
            if (!some || rng() % 3 != 0) kept.push_back(c);
          std::vector<std::uint64_t> keys;
          for (const Cell& c : kept) keys.push_back(cell_key(c, levels));
          ASSERT_TRUE(std::is_sorted(keys.begin(), keys.end()));
          OctNeighbours octs(g, levels, keys);
          for (std::size_t s = 0; s < kept.size(); ++s) {
            if (!octs.handles(s)) continue;
            std::vector<std::uint32_t> want;
            for (std::size_t t = 0; t < kept.size(); ++t)
              if (t != s && meet(kept[s], kept[t])) want.push_back(static_cast<std::uint32_t>(t));
            std::array<std::uint32_t, 56> out{};
            std::vector<std::uint32_t> got(out.begin(),
                                           out.begin() + static_cast<std::ptrdiff_t>(octs.neighbours(s, out.data())));
            std::sort(got.begin(), got.end());
            ASSERT_EQ(got, want) << shape[0] << "x" << shape[1] << "x" << shape[2] << (periodic ? " periodic" : " open")
                                 << (some ? ", some leaves" : ", every leaf") << ", leaf " << s;
            ++checked;
            // A coarser neighbour on a periodic lattice of two cells of its level along some axis.
            for (const std::uint32_t t : got)
              for (std::size_t d = 0; d < 3; ++d)
                coarser_wrapped += kept[t].level < kept[s].level && periodic && (shape[d] << kept[t].level) == 2;
          }
        }
      }
  EXPECT_GT(checked, 1000u);
  EXPECT_GT(coarser_wrapped, 0u);
}

// The leaf holding a point, found from the finest lattice's cell at once, is the one a descent finds
// placing the point on each level's lattice in turn (each child chosen inside its parent): random
// points, points on the faces of the finest cells and on the box's edges, just inside and outside, on
// periodic and open grids not at the origin, with sides not a power of two.
TEST(Octree, LeafAtIsTheDescentLevelByLevel) {
  const auto descent = [](const Octree& tree, const std::array<double, 3>& x) {
    Cell c;
    if (!coarse_cell_of(tree.coarse(), tree.level_lattice(0), x, c)) return Cell{-1, {0, 0, 0}};
    while (c.level < tree.levels() && tree.split(c)) {
      const auto u = tree.level_lattice(c.level + 1).position(x);
      Cell k{c.level + 1, {}};
      for (std::size_t d = 0; d < 3; ++d)
        k.index[d] = std::clamp(static_cast<std::int64_t>(std::floor(u[d])), 2 * c.index[d], 2 * c.index[d] + 1);
      c = k;
    }
    return c;
  };
  for (const bool periodic : {true, false}) {
    grid::GridGeometry g;
    g.shape = {6, 5, 7};
    g.origin = {-3.7, 0.1, 125.25};
    g.extent = {0.9, 0.75, 1.3};
    g.periodic = periodic;
    std::vector<double> pos, mass;
    {
      const auto unit = blobs(3, 12000, 1.0, mass);
      for (std::size_t i = 0; i < unit.size(); ++i) pos.push_back(g.origin[i % 3] + unit[i] * g.extent[i % 3]);
    }
    RefinementParams p;
    p.levels = 4;
    p.refine_particles = 4;
    const Octree tree = build_octree(g, p, pos, mass);
    ASSERT_GT(tree.cells(4), 0u);
    std::mt19937_64 rng(17);
    std::uniform_real_distribution<double> uni(-0.05, 1.05);
    std::size_t compared = 0, outside = 0;
    const auto check = [&](const std::array<double, 3>& x) {
      const Cell want = descent(tree, x), got = tree.leaf_at(x);
      ASSERT_EQ(got.level, want.level) << x[0] << " " << x[1] << " " << x[2];
      if (want.level >= 0) {
        ASSERT_EQ(got.index, want.index) << x[0] << " " << x[1] << " " << x[2];
      }
      ++compared;
      outside += want.level < 0;
    };
    for (int i = 0; i < 20000; ++i) {
      std::array<double, 3> x{};
      for (std::size_t d = 0; d < 3; ++d) x[d] = g.origin[d] + uni(rng) * g.extent[d];
      check(x);
      // On the faces of the finest cells near the point, and one step either side of them.
      std::array<double, 3> face = x;
      for (std::size_t d = 0; d < 3; ++d) {
        const double cell = g.extent[d] / static_cast<double>(g.shape[d] << p.levels);
        face[d] = g.origin[d] + std::round((x[d] - g.origin[d]) / cell) * cell;
      }
      check(face);
      for (std::size_t d = 0; d < 3; ++d) {
        std::array<double, 3> y = face;
        y[d] = std::nextafter(face[d], -1e300);
        check(y);
        y[d] = std::nextafter(face[d], 1e300);
        check(y);
      }
    }
    for (std::size_t d = 0; d < 3; ++d)  // the box's edges
      for (const double t : {0.0, 1.0}) {
        std::array<double, 3> x{g.origin[0] + 0.5 * g.extent[0], g.origin[1] + 0.5 * g.extent[1],
                                g.origin[2] + 0.5 * g.extent[2]};
        x[d] = g.origin[d] + t * g.extent[d];
        check(x);
        x[d] = std::nextafter(x[d], -1e300);
        check(x);
      }
    EXPECT_GT(compared, 100000u);
    if (!periodic) {
      EXPECT_GT(outside, 1000u);
    }
  }
}

TEST(Octree, LeafMassesConserveTheMassForEveryKernel) {
  for (const auto a : {grid::Assignment::ngp, grid::Assignment::cic, grid::Assignment::tsc}) {
    std::vector<double> mass;
    const auto pos = blobs(11, 20000, 50.0, mass, false);
    RefinementParams p;
    p.levels = 4;
    p.assignment = a;
    p.particle_mass = 1.25;
    const Octree tree = build_octree(cube(12, 50.0), p, pos, mass);
    EXPECT_GT(tree.cells(4), 0u);
    const auto leaf_mass = deposit_on_leaves(tree, a, pos, mass);
    EXPECT_NEAR(total(leaf_mass), total(mass), 1e-10 * total(mass)) << grid::to_string(a);
    for (double m : leaf_mass) ASSERT_GE(m, 0.0);
  }
}

// The integral of particle q's cloud over a leaf, by brute force: the leaf's box and the cloud's box
// (CIC: a cube of the particle's leaf size) in physical units, over the 27 periodic images.
double cloud_over_leaf(const Octree& tree, const std::array<double, 3>& x, int particle_level, const Cell& leaf) {
  const double box = tree.coarse().extent[0];
  const double h = tree.cell_size(particle_level)[0], hl = tree.cell_size(leaf.level)[0];
  double sum = 0;
  for (int a = -1; a <= 1; ++a)
    for (int b = -1; b <= 1; ++b)
      for (int c = -1; c <= 1; ++c) {
        const std::array<double, 3> shift{a * box, b * box, c * box};
        double v = 1;
        for (int d = 0; d < 3; ++d) {
          const double lo =
              static_cast<double>(leaf.index[static_cast<std::size_t>(d)]) * hl + shift[static_cast<std::size_t>(d)];
          const double overlap = std::min(lo + hl, x[static_cast<std::size_t>(d)] + h / 2) -
                                 std::max(lo, x[static_cast<std::size_t>(d)] - h / 2);
          v *= std::max(0.0, overlap) / h;
        }
        sum += v;
      }
  return sum;
}

TEST(Octree, LeafMassesEqualTheBruteForceIntegralOfEachCloud) {
  std::vector<double> mass;
  const auto pos = blobs(5, 1500, 4.0, mass, false);
  RefinementParams p;
  p.levels = 3;
  p.refine_particles = 6;
  p.buffer = 0;
  const Octree tree = build_octree(cube(8, 4.0), p, pos, mass);
  const auto leaves = tree.leaves();
  const auto got = deposit_on_leaves(tree, grid::Assignment::cic, pos, mass);
  std::vector<double> want(leaves.size(), 0.0);
  for (std::size_t q = 0; q < mass.size(); ++q) {
    const std::array<double, 3> x{pos[3 * q], pos[3 * q + 1], pos[3 * q + 2]};
    const int level = tree.leaf_at(x).level;
    for (std::size_t n = 0; n < leaves.size(); ++n) want[n] += mass[q] * cloud_over_leaf(tree, x, level, leaves[n]);
  }
  int levels_seen = 0;
  for (std::size_t n = 0; n < leaves.size(); ++n) {
    ASSERT_NEAR(got[n], want[n], 1e-9) << "leaf " << n << " level " << leaves[n].level;
    levels_seen |= 1 << leaves[n].level;
  }
  EXPECT_EQ(levels_seen, 0xF) << "leaves on every level";
}

TEST(Octree, WithoutRefinementTheLeavesAreTheUniformGrid) {
  std::vector<double> mass;
  const auto pos = blobs(9, 5000, 3.0, mass, false);
  const auto g = cube(10, 3.0);
  for (const auto a : {grid::Assignment::ngp, grid::Assignment::cic, grid::Assignment::tsc}) {
    RefinementParams p;
    p.levels = 2;
    p.refine_particles = 1e9;
    const Octree tree = build_octree(g, p, pos, mass);
    ASSERT_EQ(tree.leaf_count(), g.cells());
    const auto leaves = tree.leaves();
    const auto got = deposit_on_leaves(tree, a, pos, mass);
    const mpi::Comm self(MPI_COMM_SELF);
    const auto want = grid::deposit(g, a, mpi::BlockDecomposition(g.shape, 1), pos, mass, self).mass;
    for (std::size_t n = 0; n < leaves.size(); ++n) {
      const auto& i = leaves[n].index;
      ASSERT_NEAR(got[n], want[static_cast<std::size_t>(g.linear({i[0], i[1], i[2]}))], 1e-12 * total(mass));
    }
  }
}

TEST(Octree, OpenGridsDropWhatLiesOutsideAsTheUniformGridDoes) {
  std::vector<double> mass;
  const auto pos = blobs(13, 4000, 1.0, mass);
  grid::GridGeometry g = cube(6, 0.6, false);
  g.origin = {0.2, 0.2, 0.2};
  RefinementParams p;
  p.levels = 2;
  const Octree tree = build_octree(g, p, pos, mass);
  const auto got = deposit_on_leaves(tree, grid::Assignment::cic, pos, mass);
  const mpi::Comm self(MPI_COMM_SELF);
  const auto uniform =
      grid::deposit(g, grid::Assignment::cic, mpi::BlockDecomposition(g.shape, 1), pos, mass, self).mass;
  double inside = 0;
  for (std::size_t q = 0; q < mass.size(); ++q) {
    bool in = true;
    for (int d = 0; d < 3; ++d) in = in && pos[3 * q + d] >= 0.2 && pos[3 * q + d] < 0.8;
    inside += in ? mass[q] : 0.0;
  }
  // Only the particles inside count, and only the parts of their clouds beyond the faces are lost:
  // a refined leaf's smaller cloud loses less there than the coarse grid's.
  EXPECT_LE(total(got), inside + 1e-9);
  EXPECT_GE(total(got), total(uniform) - 1e-9);
  EXPECT_GT(tree.cells(2), 0u);
  EXPECT_EQ(tree.leaf_at({0.1, 0.5, 0.5}).level, -1);
}

// mesh::CellSpace on an octree: a point's leaf among the leaves (point + find) is the tree's own
// leaf_at, in a periodic box and in an open one; volumes add up to the box; a chunk is a coarse cell,
// contiguous in key order; the leaves' centres lie inside their cells.
TEST(CellSpace, FindsThePointsLeafAsTheTreeDoesAndMeasuresLeaves) {
  for (const bool periodic : {true, false}) {
    std::vector<double> mass;
    const auto pos = blobs(11, 6000, 1.0, mass);
    RefinementParams p;
    p.levels = 3;
    const grid::GridGeometry g = cube(6, 1.0, periodic);
    const Octree tree = build_octree(g, p, pos, mass);
    const std::vector<Cell> leaves = tree.leaves();
    std::vector<std::int64_t> keys;
    for (const Cell& c : leaves) keys.push_back(static_cast<std::int64_t>(cell_key(c, p.levels)));
    const CellSpace space = CellSpace::octree(g, p.levels);
    double volume = 0;
    std::map<std::int64_t, std::pair<std::size_t, std::size_t>> chunk_rows;  // chunk -> [first, last] row
    for (std::size_t n = 0; n < keys.size(); ++n) {
      volume += space.volume(keys[n]);
      auto [it, fresh] = chunk_rows.try_emplace(space.chunk(keys[n]), n, n);
      if (!fresh) {
        EXPECT_EQ(it->second.second + 1, n) << "chunk " << it->first << " is not contiguous in key order";
        it->second.second = n;
      }
      const auto x = space.centre(keys[n]);
      const Cell at = tree.leaf_at(x);
      EXPECT_EQ(at, leaves[n]) << "the centre of leaf " << n << " is not inside it";
    }
    EXPECT_NEAR(volume, 1.0, 1e-12);
    EXPECT_EQ(chunk_rows.size(), g.cells());
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(-0.1, 1.1);
    for (int t = 0; t < 20000; ++t) {
      const double x[3] = {u(rng), u(rng), u(rng)};
      const Cell want = tree.leaf_at({x[0], x[1], x[2]});
      const std::size_t got = space.find(keys, space.point(x));
      if (want.level < 0) {
        EXPECT_EQ(got, keys.size()) << "a point outside the open grid has no leaf";
      } else {
        ASSERT_LT(got, keys.size());
        EXPECT_EQ(leaves[got], want);
      }
    }
    // Among test cells only: a point in a leaf that is not listed has none.
    std::vector<std::int64_t> some;
    for (std::size_t n = 0; n < keys.size(); n += 3) some.push_back(keys[n]);
    for (int t = 0; t < 5000; ++t) {
      const double x[3] = {u(rng), u(rng), u(rng)};
      const Cell want = tree.leaf_at({x[0], x[1], x[2]});
      const std::size_t got = space.find(some, space.point(x));
      if (got < some.size()) {
        EXPECT_EQ(cell_of_key(static_cast<std::uint64_t>(some[got]), p.levels), want);
      } else if (want.level >= 0) {
        EXPECT_EQ(std::count(some.begin(), some.end(), static_cast<std::int64_t>(cell_key(want, p.levels))), 0);
      }
    }
  }
}

// mesh::CellFinder: the directory in front of the search gives CellSpace::find's answer for every point
// (inside and outside the cells' range, on the octree's leaves and on a uniform grid's sparse cells),
// whatever the cells' spread: clustered, one cell, none.
TEST(CellFinder, AnswersAsCellSpaceFind) {
  std::mt19937_64 rng(17);
  {
    std::vector<double> mass;
    // Four levels under few coarse cells: an unrefined coarse leaf spans many of the directory's buckets,
    // so a point's leaf is often listed in a bucket before the point's own, empty one.
    const auto pos = blobs(3, 20000, 1.0, mass);
    RefinementParams p;
    p.levels = 4;
    p.refine_particles = 200;  // the background's coarse cells stay whole, the blobs refine
    const grid::GridGeometry g = cube(4, 1.0, true);
    const Octree tree = build_octree(g, p, pos, mass);
    std::vector<std::int64_t> keys;
    for (const Cell& c : tree.leaves()) keys.push_back(static_cast<std::int64_t>(cell_key(c, p.levels)));
    const CellSpace space = CellSpace::octree(g, p.levels);
    std::uniform_real_distribution<double> u(0, 1);
    for (const std::size_t stride : {1, 3, 50, 100000}) {
      std::vector<std::int64_t> some;
      for (std::size_t n = stride / 2 % keys.size(); n < keys.size(); n += stride) some.push_back(keys[n]);
      const CellFinder finder(space, some);
      for (int t = 0; t < 20000; ++t) {
        const double x[3] = {u(rng), u(rng), u(rng)};
        const std::int64_t point = space.point(x);
        ASSERT_EQ(finder.find(point), space.find(some, point)) << "stride " << stride << " point " << point;
      }
    }
    const CellFinder none(space, {});
    EXPECT_EQ(none.find(0), 0U);
  }
  grid::GridGeometry g = cube(1, 1.0, true);
  g.shape = {37, 41, 43};
  const CellSpace space = CellSpace::uniform(g);
  const auto total = static_cast<std::int64_t>(g.cells());
  for (const int keep_one_in : {1, 2, 9, 1000}) {
    std::vector<std::int64_t> cells;
    for (std::int64_t c = 0; c < total; ++c)  // a dense clump and a sparse rest
      if ((c > total / 3 && c < total / 3 + 2000) || static_cast<int>(rng() % static_cast<unsigned>(keep_one_in)) == 0)
        cells.push_back(c);
    const CellFinder finder(space, cells);
    for (std::int64_t point = -1; point <= total; ++point)
      ASSERT_EQ(finder.find(point), space.find(cells, point)) << "1 in " << keep_one_in << ", point " << point;
  }
}

// mesh::CellSpace on the uniform grid: a chunk is a pencil (the nz cells of one (i, j)), and the ranks'
// cuts balance the test cells at whole pencils, so that ranks may outnumber the planes: every rank but
// those a dense pencil starves holds cells, and no rank more than its share plus one pencil's.
TEST(CellSpace, UniformCutsBalanceTestCellsAtWholePencils) {
  grid::GridGeometry g = cube(1, 1.0, true);
  g.shape = {3, 4, 5};
  const CellSpace space = CellSpace::uniform(g);
  std::mt19937_64 rng(9);
  std::vector<std::int64_t> cells;
  for (std::int64_t c = 0; c < 60; ++c)
    if (rng() % 3 != 0) cells.push_back(c);
  for (std::int64_t c = 0; c < 60; ++c) EXPECT_EQ(space.chunk(c), c / 5);
  for (const int ranks : {1, 2, 3, 5, 8, 12, 20}) {
    const auto cut =
        space.rank_cuts(ranks, cells.size(), [&](std::uint64_t row) { return static_cast<std::uint64_t>(cells[row]); });
    ASSERT_EQ(cut.size(), static_cast<std::size_t>(ranks) + 1);
    EXPECT_EQ(cut.front(), 0);
    EXPECT_EQ(cut.back(), 60);
    EXPECT_TRUE(std::is_sorted(cut.begin(), cut.end()));
    int busy = 0;
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(cut[static_cast<std::size_t>(r)] % 5, 0)
          << "rank " << r << " of " << ranks << " begins inside a pencil";
      const auto n = std::count_if(cells.begin(), cells.end(), [&](std::int64_t c) {
        return c >= cut[static_cast<std::size_t>(r)] && c < cut[static_cast<std::size_t>(r) + 1];
      });
      EXPECT_LE(static_cast<std::size_t>(n), cells.size() / static_cast<std::size_t>(ranks) + 1 + 5)
          << "rank " << r << " of " << ranks;
      busy += n > 0 ? 1 : 0;
    }
    EXPECT_GE(busy, std::min(ranks, 12) / 2) << ranks << " ranks on 12 pencils";
    if (ranks > 3) {
      EXPECT_GT(busy, 3) << "ranks beyond the 3 planes hold cells";
    }
  }
  // No test cells: one rank holds the (empty) range.
  const auto none = space.rank_cuts(4, 0, {});
  EXPECT_EQ(none, (std::vector<std::int64_t>{0, 60, 60, 60, 60}));
}

// The adaptive deposit's decomposition (mesh::CoarseRuns): each coarse cell's owner is the rank whose
// range of keys holds the cell's key, and the ranks "near" a cell, where its particles go, are exactly
// those owning a cell within the margin on every axis (wrapped when periodic), against a brute force
// over every pair of cells. Random cuts of the curve (empty runs too) on grids of sizes other than
// powers of two, periodic and open, margins 0 to 3.
TEST(CoarseRuns, RanksNearACellAreThoseOwningACellWithinTheMargin) {
  std::mt19937_64 rng(31);
  const grid::CellIndex shapes[] = {{5, 3, 7}, {8, 8, 8}, {1, 6, 2}, {9, 4, 4}};
  int cases = 0;
  for (const auto& shape : shapes)
    for (const bool periodic : {true, false})
      for (const int ranks : {1, 2, 3, 7}) {
        grid::GridGeometry g = cube(1, 1.0, periodic);
        g.shape = {shape.i, shape.j, shape.k};
        const int levels = static_cast<int>(rng() % 3);
        // Cuts at random coarse cells' keys, ascending.
        std::vector<std::int64_t> cut{0};
        for (int r = 1; r < ranks; ++r) {
          const auto c = static_cast<std::int64_t>(rng() % g.cells());
          cut.push_back(static_cast<std::int64_t>(coarse_code(g, c) << (3 * levels + 4)));
        }
        std::sort(cut.begin() + 1, cut.end());
        cut.push_back(std::numeric_limits<std::int64_t>::max());
        const CoarseRuns runs(g, levels, cut);
        const auto n = static_cast<std::int64_t>(g.cells());
        for (std::int64_t c = 0; c < n; ++c) {
          const auto key = static_cast<std::int64_t>(coarse_code(g, c) << (3 * levels + 4));
          const int want = static_cast<int>(std::upper_bound(cut.begin(), cut.end(), key) - cut.begin()) - 1;
          ASSERT_EQ(runs.owner(c), want);
        }
        for (const std::int64_t margin : {0, 1, 3}) {
          const CoarseRuns::RanksNear near = runs.ranks_near(margin);
          // Distance along one axis, wrapped when periodic.
          const auto apart = [&](std::int64_t a, std::int64_t b, std::int64_t size) {
            const std::int64_t d = a > b ? a - b : b - a;
            return periodic ? std::min(d, size - d) : d;
          };
          for (std::int64_t c = 0; c < n; ++c) {
            const auto x = g.cell_at(c);
            std::vector<std::int32_t> want;
            for (std::int64_t o = 0; o < n; ++o) {
              const auto y = g.cell_at(o);
              if (apart(x.i, y.i, g.shape[0]) <= margin && apart(x.j, y.j, g.shape[1]) <= margin &&
                  apart(x.k, y.k, g.shape[2]) <= margin)
                want.push_back(runs.owner(o));
            }
            std::sort(want.begin(), want.end());
            want.erase(std::unique(want.begin(), want.end()), want.end());
            const auto got = near.of(c);
            ASSERT_EQ(std::vector<std::int32_t>(got.begin(), got.end()), want)
                << g.shape[0] << "x" << g.shape[1] << "x" << g.shape[2] << (periodic ? " periodic" : " open") << ", "
                << ranks << " ranks, margin " << margin << ", cell " << c;
          }
          ++cases;
        }
      }
  EXPECT_EQ(cases, 96);
}

// The tree and the leaves' masses on threads (mesh::PlaneRuns) have the bits of one thread: particles
// filed by coarse cell (the deposit's order) and cut into runs of whole coarse planes on grids of 1 to 9
// planes (runs of a plane or two, all edge), periodic and open with particles outside it in front, and
// particles in no order (one run). Blobs straddle the planes, so edge terms are many.
TEST(Octree, ThreadsGiveTheBitsOfOneThread) {
  int cases = 0;
  for (const std::int64_t planes : {1, 2, 3, 5, 9})
    for (const bool periodic : {true, false})
      for (const bool filed : {true, false}) {
        grid::GridGeometry g = cube(6, 10.0, periodic);
        g.shape[0] = planes;
        g.extent[0] = 10.0 * static_cast<double>(planes) / 6.0;
        std::vector<double> mass;
        std::vector<double> pos = blobs(static_cast<std::uint32_t>(planes * 7 + periodic), 6000, 10.0, mass, false);
        for (std::size_t p = 0; p < mass.size(); ++p) pos[3 * p] *= static_cast<double>(planes) / 6.0;
        if (!periodic) {  // an open region inside the particles: some lie outside, some of them first
          g.origin = {0.5, 0.5, 0.5};
          g.extent = {g.extent[0] - 1.0, 9.0, 9.0};
        }
        if (filed) file_by_coarse_cell(g, pos, mass);
        for (const grid::Assignment a : {grid::Assignment::ngp, grid::Assignment::cic, grid::Assignment::tsc}) {
          RefinementParams params;
          params.levels = 3;
          params.refine_particles = 4;
          params.assignment = a;
          const Octree one = build_octree(g, params, pos, mass, 1);
          const auto keys = one.leaf_keys();
          const auto masses = deposit_on_leaves(one, a, pos, mass, 1);
          for (std::size_t n = 0; n < keys.size(); ++n) {  // each leaf numbered with its place in key order
            const Cell leaf = cell_of_key(keys[n], params.levels);
            ASSERT_EQ(one.leaf_number(leaf.level, static_cast<std::size_t>(one.slot(leaf))), n);
            if (n > 0) {
              ASSERT_LT(keys[n - 1], keys[n]) << "leaf " << n;  // the numbers follow the keys
            }
          }
          for (const int threads : {2, 3, 4}) {
            const std::string what = std::to_string(planes) + " planes, " + (periodic ? "periodic" : "open") +
                                     (filed ? ", filed" : ", unfiled") + ", " + std::string(grid::to_string(a)) + ", " +
                                     std::to_string(threads) + " threads";
            const Octree tree = build_octree(g, params, pos, mass, threads);  // without the cells' codes
            ASSERT_EQ(tree.leaf_keys(threads), keys) << what;
            const auto got = deposit_on_leaves(tree, a, pos, mass, threads);
            ASSERT_EQ(got.size(), masses.size()) << what;
            for (std::size_t n = 0; n < got.size(); ++n)
              ASSERT_EQ(std::memcmp(&got[n], &masses[n], sizeof(double)), 0)
                  << what << ", leaf " << n << ": " << got[n] << " " << masses[n];
          }
          EXPECT_GT(keys.size(), g.cells()) << "refined";
          ++cases;
        }
      }
  EXPECT_EQ(cases, 60);
}

}  // namespace
}  // namespace phew::mesh

namespace phew::mesh {
namespace {

// The next coarse code inside a grid equals the brute force over every code of the curve's cube, on
// grids whose sides are and are not powers of two, flat and long ones among them.
TEST(LeafRun, NextCodeInsideIsTheBruteForceScan) {
  for (const std::array<std::int64_t, 3> shape : std::vector<std::array<std::int64_t, 3>>{
           {4, 4, 4}, {5, 3, 7}, {1, 6, 2}, {9, 1, 1}, {1, 1, 1}, {16, 16, 3}, {3, 17, 5}}) {
    int bits = 0;
    while ((std::int64_t{1} << bits) < std::max({shape[0], shape[1], shape[2]})) ++bits;
    const std::uint64_t end = std::uint64_t{1} << (3 * bits);
    std::uint64_t expected = kNoCode;  // the answer for each code, scanned from the top
    for (std::uint64_t code = end + 3; code-- > 0;) {
      if (code < end && static_cast<std::int64_t>(gather_bits_3(code >> 2)) < shape[0] &&
          static_cast<std::int64_t>(gather_bits_3(code >> 1)) < shape[1] &&
          static_cast<std::int64_t>(gather_bits_3(code)) < shape[2])
        expected = code;
      ASSERT_EQ(next_code_inside(code, shape), expected)
          << "code " << code << " of " << shape[0] << "x" << shape[1] << "x" << shape[2];
    }
  }
}

// The keys a LeafRun gives equal the tree's own, for the whole mesh and for runs cut anywhere (as ranks
// cut them, at coarse cells, and elsewhere), one at a time and in batches, on grids whose sides are not
// powers of two and on a cube that is (every code of the curve inside).
// A run taken from the tree is the run it lists, whole (the numbering's levels moved) or in part; the
// tree holds no levels after, and splitting a level drops them too.
TEST(LeafRun, TakenOnceAsListed) {
  std::vector<double> mass;
  const auto pos = blobs(21, 6000, 1.0, mass);
  RefinementParams p;
  p.levels = 3;
  p.refine_particles = 4;
  for (const bool whole : {true, false}) {
    Octree tree = build_octree(cube(6, 1.0), p, pos, mass, 2);
    const std::uint64_t n = tree.leaf_count(), first = whole ? 0 : n / 3, last = whole ? n : n - 5;
    const LeafRun want = tree.leaf_run(first, last);
    ASSERT_EQ(want.size(), last - first);
    const LeafRun got = tree.take_leaf_run(first, last);
    EXPECT_EQ(got.level, want.level);
    EXPECT_EQ(got.first_key, want.first_key);
    EXPECT_THROW(tree.leaf_run(first, last), core::Error);
  }
}

TEST(LeafRun, KeysFollowFromTheLevels) {
  int cases = 0;
  for (const std::array<std::int64_t, 3> shape :
       std::vector<std::array<std::int64_t, 3>>{{6, 6, 6}, {5, 3, 7}, {2, 7, 1}, {4, 4, 4}})
    for (const int levels : {0, 1, 3}) {
      grid::GridGeometry g = cube(1, 10.0);
      g.shape = shape;
      for (std::size_t d = 0; d < 3; ++d) g.extent[d] = 10.0 * static_cast<double>(shape[d]) / 6.0;
      std::vector<double> mass;
      std::vector<double> pos = blobs(static_cast<std::uint32_t>(shape[1] + levels), 4000, 10.0, mass);
      for (std::size_t p = 0; p < mass.size(); ++p)
        for (std::size_t d = 0; d < 3; ++d) pos[3 * p + d] *= static_cast<double>(shape[d]) / 6.0;
      RefinementParams params;
      params.levels = levels;
      params.refine_particles = 4;
      const Octree tree = build_octree(g, params, pos, mass, 1);
      const std::vector<std::uint64_t> keys = tree.leaf_keys();
      const std::uint64_t n = keys.size();
      for (const auto& [first, last] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
               {0, n}, {0, 0}, {n / 3, n / 3 + 1}, {n / 5, n - 2}, {1, n}, {n / 2, n}}) {
        const LeafRun run = tree.leaf_run(first, last);
        ASSERT_EQ(run.size(), last - first);
        LeafKeyCursor cursor(g, levels, run);
        for (std::uint64_t i = first; i < last; ++i)
          ASSERT_EQ(cursor.next(), keys[i]) << "leaf " << i << " of [" << first << ", " << last << ")";
        EXPECT_THROW(cursor.next(), core::Error);  // past the run
        // In batches of 1, 2, 3, ... keys, as the writer asks for them.
        LeafKeyCursor batches(g, levels, run);
        std::vector<std::uint64_t> batch;
        for (std::uint64_t i = first, size = 1; i < last; i += size, ++size) {
          batch.assign(std::min(size, last - i), 0);
          batches.next(batch);
          for (std::size_t k = 0; k < batch.size(); ++k) ASSERT_EQ(batch[k], keys[i + k]) << "leaf " << i + k;
        }
        ++cases;
      }
      if (levels == 0) {
        EXPECT_EQ(n, g.cells());
      } else {
        EXPECT_GT(n, g.cells()) << "refined";
        // A level that does not tile its coarse cell is refused.
        LeafRun bad = tree.leaf_run(0, n);
        for (auto& l : bad.level)
          if (l > 0) {
            l = static_cast<std::int8_t>(l - 1);
            break;
          }
        LeafKeyCursor cursor(g, levels, bad);
        EXPECT_THROW(for (std::uint64_t i = 0; i < n; ++i) cursor.next(), core::Error);
      }
    }
  EXPECT_EQ(cases, 72);
}

}  // namespace
}  // namespace phew::mesh

namespace phew::mesh {
namespace {

// A copy as deposit_on_leaves_streamed takes its particles (buffers it fills without zeroing them first).
core::RawVector<double> raw(const std::vector<double>& v) { return core::RawVector<double>(v.begin(), v.end()); }

// The leaves' masses handed over as they complete (deposit_on_leaves_streamed: summed particle by
// particle inside each thread's run of planes, 5-25 planes here, and gathered coarse cell by coarse cell
// on the runs' first and last planes) are those of deposit_on_leaves bit for bit, each leaf once, on 1-4
// threads, on periodic
// and open grids whose sides are not powers of two, and on a periodic grid of 2 x 1 x 3 coarse cells
// (the cells around one are one cell reached from both sides); a range of leaves gets those only (a
// rank's run is whole coarse cells; any cut works). Particles not filed by coarse cell are refused.
TEST(Octree, LeafMassesGatheredByCoarseCellAreTheWholeDeposit) {
  int cases = 0;
  for (const int shape : {0, 1, 2})
    for (const grid::Assignment a : {grid::Assignment::cic, grid::Assignment::tsc}) {
      const bool periodic = shape != 1;
      grid::GridGeometry g = cube(1, 10.0, periodic);
      if (shape == 2)
        g.shape = {2, 1, 3};
      else
        g.shape = {26, 19, 23};
      g.extent = {static_cast<double>(g.shape[0]), static_cast<double>(g.shape[1]), static_cast<double>(g.shape[2])};
      std::vector<double> mass;
      std::vector<double> pos = blobs(periodic ? 5u : 6u, shape == 2 ? 4000 : 60000, 19.0, mass, false);
      for (std::size_t p = 0; p < mass.size(); ++p)
        for (std::size_t d = 0; d < 3; ++d) pos[3 * p + d] *= g.extent[d] / 19.0;
      if (!periodic) {
        g.origin = {0.5, 0.5, 0.5};
        g.extent = {25.0, 18.0, 22.0};
      }
      file_by_coarse_cell(g, pos, mass);
      RefinementParams params;
      params.levels = 3;
      params.refine_particles = 3;
      params.assignment = a;
      const Octree tree = build_octree(g, params, pos, mass, 1);
      const std::vector<double> whole = deposit_on_leaves(tree, a, pos, mass, 1);
      if (shape != 2) {
        ASSERT_GT(whole.size(), 100000u);
      }
      const std::uint64_t third = whole.size() / 3;
      for (const bool part : {false, true})
        for (const int threads : {1, 2, 3, 4}) {
          const std::string what = std::to_string(shape) + ", " + std::string(grid::to_string(a)) + ", " +
                                   std::to_string(threads) + " threads" + (part ? ", a part" : "");
          std::vector<double> got(whole.size(), -1.0);
          std::vector<int> times(whole.size(), 0);
          // The whole mesh, or its middle third (cut inside coarse cells: their leaves in it only).
          const std::uint64_t first = part ? third : 0, last = part ? 2 * third : whole.size();
          std::mutex lock;
          std::uint64_t lowest = whole.size(), highest = 0;
          deposit_on_leaves_streamed(tree, a, raw(pos), raw(mass), threads, first, last,
                                     [&](std::uint64_t b, std::span<const double> m, int thread) {
                                       EXPECT_GE(thread, 0);
                                       EXPECT_LT(thread, threads);
                                       for (std::size_t i = 0; i < m.size(); ++i) {
                                         got[b + i] = m[i];
                                         ++times[b + i];
                                       }
                                       const std::lock_guard<std::mutex> hold(lock);
                                       lowest = std::min(lowest, b);
                                       highest = std::max(highest, b + m.size());
                                     });
          for (std::size_t n = 0; n < whole.size(); ++n) {
            if (n < first || n >= last) {
              ASSERT_EQ(times[n], 0) << what << ", leaf " << n << " beyond the range";
              continue;
            }
            ASSERT_EQ(times[n], 1) << what << ", leaf " << n;
            ASSERT_EQ(std::memcmp(&got[n], &whole[n], sizeof(double)), 0)
                << what << ", leaf " << n << ": " << got[n] << " " << whole[n];
          }
          EXPECT_EQ(lowest, first) << what;
          EXPECT_EQ(highest, last) << what;
          ++cases;
        }
    }
  EXPECT_EQ(cases, 48);
}

TEST(Octree, LeafMassesGatheredRefuseParticlesNotFiled) {
  grid::GridGeometry g = cube(1, 10.0, true);
  g.shape = {8, 8, 8};
  g.extent = {8.0, 8.0, 8.0};
  std::vector<double> mass;
  std::vector<double> pos = blobs(3u, 2000, 8.0, mass, false);
  RefinementParams params;
  params.levels = 2;
  const Octree tree = build_octree(g, params, pos, mass, 1);
  EXPECT_THROW(deposit_on_leaves_streamed(tree, params.assignment, raw(pos), raw(mass), 2, 0, tree.leaf_count(),
                                          [](std::uint64_t, std::span<const double>, int) {}),
               core::Error);
}

}  // namespace
}  // namespace phew::mesh
