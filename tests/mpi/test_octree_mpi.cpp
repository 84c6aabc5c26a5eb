// The adaptive mesh over ranks (lib/mesh/amr_deposit): the leaves and their densities have the bits of the
// serial build over every particle (build_octree + deposit_on_leaves), for any number of ranks and any
// split of the particles and threads per rank, with dense blobs refined to the finest level across the
// boundaries of the ranks' runs of coarse cells and of the threads' runs of coarse planes; the ranks'
// runs hold equal shares of the particles.
#include <phew/io/amr_grid_file.hpp>
#include <phew/mesh/amr_deposit.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <variant>

namespace phew::mesh {
namespace {

struct Case {
  std::vector<double> pos, mass;
};

// Narrow blobs on the planes that split 40 coarse planes between 2, 3 and 4 ranks (and across the
// periodic boundary), in a thin background: refinement to the finest level on every boundary.
Case blobs_on_boundaries(std::size_t n, double box, unsigned seed, double width = 0.01) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> x(0.0, box), mu(0.5, 2.0);
  const double centres[] = {0.5, 0.25, 0.334, 0.667, 0.75, 0.0, 0.1};
  Case c;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t b = i % 8;
    for (int d = 0; d < 3; ++d) {
      double v = b == 7 ? x(rng)
                        : std::normal_distribution<double>(d == 0 ? centres[b] * box : 0.5 * box,
                                                           (b % 2 ? 1 : 0.2) * width * box)(rng);
      v = v - box * std::floor(v / box);
      c.pos.push_back(v >= box ? 0.0 : v);
    }
    c.mass.push_back(mu(rng));
  }
  return c;
}

struct LeafMass {
  std::uint64_t key = 0;
  double density = 0;  // the leaf's mass over its level's cell volume
};

// The canonical order of the particles' sums: particle indices grouped by coarse cell (linear index,
// ascending), in their order within a cell; particles outside an open grid are left out.
std::vector<std::size_t> by_coarse_cell(const grid::GridGeometry& g, const std::vector<double>& position) {
  std::vector<std::pair<std::int64_t, std::size_t>> cell_and_index;
  const LevelLattice level0(g, 0);
  for (std::size_t p = 0; p < position.size() / 3; ++p) {
    const auto u = level0.position({position[3 * p], position[3 * p + 1], position[3 * p + 2]});
    Cell c{0, {0, 0, 0}};
    for (std::size_t d = 0; d < 3; ++d) c.index[d] = static_cast<std::int64_t>(std::floor(u[d]));
    if (normalise_cell(g, c)) cell_and_index.emplace_back(g.linear({c.index[0], c.index[1], c.index[2]}), p);
  }
  std::sort(cell_and_index.begin(), cell_and_index.end());
  std::vector<std::size_t> order;
  for (const auto& [cell, p] : cell_and_index) order.push_back(p);
  return order;
}

// The serial build over every particle, in the canonical order of the sums (by_coarse_cell).
std::vector<LeafMass> serial(const grid::GridGeometry& g, const RefinementParams& p, const Case& in) {
  Case c;
  for (const std::size_t i : by_coarse_cell(g, in.pos)) {
    c.pos.insert(c.pos.end(), {in.pos[3 * i], in.pos[3 * i + 1], in.pos[3 * i + 2]});
    c.mass.push_back(in.mass[i]);
  }
  const Octree tree = build_octree(g, p, c.pos, c.mass);
  const auto leaves = tree.leaves();
  const auto mass = deposit_on_leaves(tree, p.assignment, c.pos, c.mass);
  std::vector<LeafMass> out;
  for (std::size_t n = 0; n < leaves.size(); ++n)
    out.push_back({cell_key(leaves[n], p.levels),
                   mass[n] / (g.cell_volume() / static_cast<double>(std::uint64_t{1} << (3 * leaves[n].level)))});
  return out;
}

// The same densities as a float32 file holds them.
std::vector<LeafMass> as_float(std::vector<LeafMass> leaves) {
  for (LeafMass& l : leaves) l.density = static_cast<float>(l.density);
  return leaves;
}

// A rank's keys, listed from its run's levels as the writer lists them.
std::vector<std::uint64_t> keys_of(const AmrDeposit& result, const grid::GridGeometry& g, int levels) {
  LeafKeyCursor cursor(g, levels, result.leaves);
  std::vector<std::uint64_t> keys(result.leaves.size());
  for (std::uint64_t& key : keys) key = cursor.next();
  return keys;
}

// Rank r takes particles [b, e) of a split chosen by `seed` (uneven, some ranks empty).
std::vector<LeafMass> distributed(const grid::GridGeometry& g, const RefinementParams& p, const Case& c, unsigned seed,
                                  AmrDeposit& result, const mpi::Comm& comm, int threads = 1,
                                  bool float_density = false) {
  const std::size_t n = c.mass.size();
  std::vector<std::size_t> cut{0};
  std::mt19937_64 rng(seed);
  for (int r = 1; r < comm.size(); ++r)
    cut.push_back(seed % 3 == 0 && r == 1 ? 0 : std::uniform_int_distribution<std::size_t>(0, n)(rng));
  cut.push_back(n);
  std::sort(cut.begin(), cut.end());
  const auto r = static_cast<std::size_t>(comm.rank());
  const std::size_t b = cut[r], e = cut[r + 1];
  result = deposit_on_octree(g, p,
                             std::vector<double>(c.pos.begin() + static_cast<std::ptrdiff_t>(3 * b),
                                                 c.pos.begin() + static_cast<std::ptrdiff_t>(3 * e)),
                             std::vector<double>(c.mass.begin() + static_cast<std::ptrdiff_t>(b),
                                                 c.mass.begin() + static_cast<std::ptrdiff_t>(e)),
                             comm, threads, float_density);
  std::vector<double> density;
  std::visit([&](const auto& d) { density.assign(d.begin(), d.end()); }, result.density);
  EXPECT_EQ(std::holds_alternative<std::vector<float>>(result.density), float_density);
  EXPECT_EQ(result.leaves.size(), density.size());
  const auto keys = comm.all_gatherv<std::uint64_t>(keys_of(result, g, p.levels));
  const auto all_density = comm.all_gatherv<double>(density);
  std::vector<LeafMass> all(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) all[i] = {keys[i], all_density[i]};
  return all;
}

void expect_same(const std::vector<LeafMass>& got, const std::vector<LeafMass>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t n = 0; n < got.size(); ++n) {
    ASSERT_EQ(got[n].key, want[n].key) << what << " leaf " << n;
    ASSERT_EQ(std::memcmp(&got[n].density, &want[n].density, sizeof(double)), 0)
        << what << " leaf " << n << " " << got[n].density << " " << want[n].density;
  }
}

// RAMSES' dark-matter refinement (8 particle masses of 1) with `levels`, the kernel and the buffer.
RefinementParams refinement(int levels, grid::Assignment a, int buffer) {
  RefinementParams p;
  p.levels = levels;
  p.refine_particles = 8;
  p.particle_mass = 1.0;
  p.buffer = buffer;
  p.assignment = a;
  return p;
}

TEST(AmrDeposit, EqualsTheSerialBuildOnAnyRanksAndSplits) {
  const mpi::Comm comm;
  // Narrow and wide blobs: the nested shells of levels of the wide ones cross the runs' edges and the
  // edges of the windows of copied planes, where a margin too narrow would change what splits.
  const Case c = blobs_on_boundaries(16000, 40.0, 3, 0.05);
  grid::GridGeometry g;
  g.shape = {40, 12, 10};
  g.extent = {40.0, 12.0, 10.0};
  int cases = 0;
  const std::pair<grid::Assignment, int> kernels_and_buffers[] = {
      {grid::Assignment::cic, 1}, {grid::Assignment::tsc, 2}, {grid::Assignment::ngp, 0}};
  for (const auto& [a, buffer] : kernels_and_buffers) {
    const RefinementParams p = refinement(4, a, buffer);
    const auto want = serial(g, p, c);
    AmrDeposit r;
    const std::string what = std::string(grid::to_string(a)) + " buffer " + std::to_string(buffer);
    // Threads within each rank too: 3 runs of the 40 coarse planes, the blobs on their edges.
    expect_same(distributed(g, p, c, static_cast<unsigned>(17 + cases), r, comm, 3), want, what + ", 3 threads");
    expect_same(distributed(g, p, c, static_cast<unsigned>(31 + cases), r, comm, 2, true), as_float(want),
                what + ", 2 threads, float densities");
    const auto got = distributed(g, p, c, static_cast<unsigned>(17 + cases), r, comm);
    expect_same(got, want, what);
    EXPECT_GT(r.leaves_per_level[4], 0u) << what;
    std::uint64_t leaves = 0;
    for (auto l : r.leaves_per_level) leaves += l;
    EXPECT_EQ(leaves, want.size());
    EXPECT_EQ(r.particles_in, c.mass.size());
    double total = 0;
    for (double m : c.mass) total += m;
    EXPECT_NEAR(r.mass_total, total, 1e-9 * total);
    ++cases;
  }
}

TEST(AmrDeposit, RunsCutTheCurveOnEveryAxisToo) {
  // A cubic grid wide enough that the windows of copied cells end inside it on every axis: the runs of
  // the Morton curve cut x first, then y and z (at 4 ranks, about 2 x 2 x 1 blocks, at 8, run by hand,
  // 2 x 2 x 2), so a blob's shells cross y and z cuts too.
  const mpi::Comm comm;
  const Case c = blobs_on_boundaries(16000, 40.0, 7, 0.05);
  grid::GridGeometry g;
  g.shape = {36, 36, 36};
  g.extent = {40.0, 40.0, 40.0};
  for (const auto& [a, buffer] : {std::pair{grid::Assignment::ngp, 0}, std::pair{grid::Assignment::cic, 1}}) {
    const RefinementParams p = refinement(3, a, buffer);
    ASSERT_LT(2 * amr_margin(p) + 1, g.shape[1]);
    AmrDeposit r;
    for (const int threads : {1, 2})
      expect_same(distributed(g, p, c, 29, r, comm, threads), serial(g, p, c),
                  "24^3, buffer " + std::to_string(buffer) + ", " + std::to_string(threads) + " threads");
  }
}

// The runs are cut by particles: each rank's run of coarse cells holds its share of the particles, give
// or take the heaviest coarse cell, however the particles are spread in the snapshot; its leaves are one
// run of the key order inside its cut, and the runs of ranks 0, 1, ... are the mesh.
TEST(AmrDeposit, RunsHoldEqualSharesOfTheParticles) {
  const mpi::Comm comm;
  const Case c = blobs_on_boundaries(16000, 40.0, 11, 0.05);
  grid::GridGeometry g;
  g.shape = {20, 20, 20};
  g.extent = {40.0, 40.0, 40.0};
  const RefinementParams p = refinement(2, grid::Assignment::cic, 1);
  AmrDeposit r;
  const auto all = distributed(g, p, c, 5, r, comm);
  ASSERT_EQ(r.cuts.size(), static_cast<std::size_t>(comm.size()) + 1);
  std::vector<std::uint64_t> per_rank(static_cast<std::size_t>(comm.size()), 0), per_cell(g.cells(), 0);
  const int key_shift = 3 * p.levels + 4;
  for (std::size_t i = 0; i < c.mass.size(); ++i) {
    grid::CellIndex at{};
    for (std::size_t d = 0; d < 3; ++d) {
      const auto v = static_cast<std::int64_t>(std::floor(c.pos[3 * i + d] / 2.0));
      (d == 0 ? at.i : d == 1 ? at.j : at.k) = v;
    }
    ++per_cell[static_cast<std::size_t>(g.linear(at))];
    const auto key = static_cast<std::int64_t>(
        morton3(static_cast<std::uint64_t>(at.i), static_cast<std::uint64_t>(at.j), static_cast<std::uint64_t>(at.k))
        << key_shift);
    ++per_rank[static_cast<std::size_t>(std::upper_bound(r.cuts.begin(), r.cuts.end(), key) - r.cuts.begin() - 1)];
  }
  const std::uint64_t heaviest = *std::max_element(per_cell.begin(), per_cell.end());
  for (int q = 0; q < comm.size(); ++q)
    EXPECT_LE(per_rank[static_cast<std::size_t>(q)], c.mass.size() / static_cast<std::size_t>(comm.size()) + heaviest)
        << "rank " << q;
  for (const std::uint64_t key : keys_of(r, g, p.levels)) {
    EXPECT_GE(static_cast<std::int64_t>(key), r.cuts[static_cast<std::size_t>(comm.rank())]);
    EXPECT_LT(static_cast<std::int64_t>(key), r.cuts[static_cast<std::size_t>(comm.rank()) + 1]);
  }
  expect_same(all, serial(g, p, c), "20^3, 2 levels");
}

TEST(AmrDeposit, OpenRegionsAndTinyGridsToo) {
  const mpi::Comm comm;
  const Case c = blobs_on_boundaries(12000, 40.0, 5);
  RefinementParams p;
  p.levels = 3;
  p.refine_particles = 4;
  grid::GridGeometry region;
  region.shape = {30, 8, 8};
  region.origin = {5.0, 16.0, 16.0};
  region.extent = {30.0, 8.0, 8.0};
  region.periodic = false;
  AmrDeposit r;
  expect_same(distributed(region, p, c, 4, r, comm, 3), serial(region, p, c), "open region, 3 threads");
  expect_same(distributed(region, p, c, 4, r, comm), serial(region, p, c), "open region");
  expect_same(distributed(region, p, c, 9, r, comm, 1, true), as_float(serial(region, p, c)), "open region, float");
  EXPECT_GT(r.particles_outside, 0u);
  EXPECT_EQ(r.particles_in + r.particles_outside, c.mass.size());
  grid::GridGeometry tiny;  // fewer planes than ranks at 4, and every window the whole grid
  tiny.shape = {3, 4, 5};
  tiny.extent = {40.0, 40.0, 40.0};
  expect_same(distributed(tiny, p, c, 6, r, comm), serial(tiny, p, c), "3 planes");
}

}  // namespace
}  // namespace phew::mesh

namespace phew::mesh {
namespace {

// A mesh of 2.6 M leaves on a coarse grid whose sides are not powers of two (codes left out between
// coarse cells), every 7th coarse cell split: its keys, by sorting every leaf's cell_key (not by the
// curve's stepping the cursor does).
std::vector<std::uint64_t> sorted_leaf_keys(const grid::GridGeometry& g) {
  std::vector<std::uint64_t> keys;
  for (std::int64_t i = 0; i < g.shape[0]; ++i)
    for (std::int64_t j = 0; j < g.shape[1]; ++j)
      for (std::int64_t k = 0; k < g.shape[2]; ++k) {
        const Cell c{0, {i, j, k}};
        if (g.linear({i, j, k}) % 7 != 3) {
          keys.push_back(cell_key(c, 1));
        } else {
          for (int o = 0; o < 8; ++o) keys.push_back(cell_key(child(c, o), 1));
        }
      }
  std::sort(keys.begin(), keys.end());
  return keys;
}

// The leaves' file written piece by piece from each rank's LeafRun, its keys listed as written, equals
// the mesh: runs cut unevenly (some ranks empty, cuts off the pieces' boundaries), compressed or not,
// float32 or float64 from float or double densities.
TEST(AmrGridFile, RanksWriteTheirRunsPieceByPiece) {
  const mpi::Comm comm;
  grid::GridGeometry g;
  g.shape = {131, 97, 160};
  g.extent = {131, 97, 160};
  const std::vector<std::uint64_t> keys = sorted_leaf_keys(g);
  const std::uint64_t n = keys.size();
  ASSERT_GT(n, 2 * io::kLeafPiece);
  const auto density_of = [](std::uint64_t leaf) { return 1.0 + static_cast<double>(leaf % 1000) / 3.0; };
  grid::GridMeta meta;
  meta.geometry = g;
  meta.density_units = "Msun/kpc^3";
  meta.mass_units = "Msun";
  meta.length_units = "kpc";
  const model::AmrRefinement refinement{1, 8, 8, 1, {0, 0}};
  std::string dir = "phew_amr_pieces_np" + std::to_string(comm.size());
  dir = (std::filesystem::temp_directory_path() / dir).string();
  if (comm.rank() == 0) std::filesystem::create_directories(dir);
  comm.barrier();
  int cases = 0;
  for (const unsigned seed : {1u, 2u})
    for (const bool compress : {false, true})
      for (const bool single : {false, true}) {
        std::vector<std::uint64_t> cut{0};
        std::mt19937_64 rng(seed);
        for (int r = 1; r < comm.size(); ++r)
          cut.push_back(seed == 2 && r == 1 ? 0 : std::uniform_int_distribution<std::uint64_t>(0, n)(rng));
        cut.push_back(n);
        std::sort(cut.begin(), cut.end());
        const std::uint64_t first = cut[static_cast<std::size_t>(comm.rank())],
                            last = cut[static_cast<std::size_t>(comm.rank()) + 1];
        LeafRun run;
        run.first_key = first < last ? keys[first] : 0;
        for (std::uint64_t leaf = first; leaf < last; ++leaf)
          run.level.push_back(static_cast<std::int8_t>(keys[leaf] & 0xF));
        std::vector<float> as_float;
        std::vector<double> as_double;
        for (std::uint64_t leaf = first; leaf < last; ++leaf) {
          as_float.push_back(static_cast<float>(density_of(leaf)));
          as_double.push_back(density_of(leaf));
        }
        const std::string path = dir + "/amr_" + std::to_string(cases) + ".h5";
        {
          io::File f = io::File::create(path, comm);
          LeafKeyCursor cursor(g, 1, run);
          const io::NextKeys next = [&](std::span<std::uint64_t> out) {
            for (std::uint64_t& key : out) key = cursor.next();
          };
          const io::Precision precision = single ? io::Precision::f32 : io::Precision::f64;
          if (seed % 2)
            io::write_amr_grid(f, meta, refinement, std::span<const float>(as_float), next, precision, compress, comm);
          else
            io::write_amr_grid(f, meta, refinement, std::span<const double>(as_double), next, precision, compress,
                               comm);
        }
        comm.barrier();
        if (comm.rank() == 0) {
          const io::File f = io::File::open_read(path);
          const auto back = io::read_amr_leaf_rows<double>(f, 0, n);  // checks the levels against the keys too
          ASSERT_EQ(back.key, keys) << "seed " << seed;
          for (std::uint64_t leaf = 0; leaf < n; ++leaf) {
            const double want =
                single || seed % 2 ? static_cast<double>(static_cast<float>(density_of(leaf))) : density_of(leaf);
            ASSERT_EQ(back.density[leaf], want) << "leaf " << leaf << ", seed " << seed;
          }
          EXPECT_EQ(io::amr_density_is_float32(f), single);
        }
        comm.barrier();
        ++cases;
      }
  if (comm.rank() == 0) std::filesystem::remove_all(dir);
  EXPECT_EQ(cases, 8);
}

}  // namespace
}  // namespace phew::mesh
