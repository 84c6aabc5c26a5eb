// The watershed on the adaptive mesh (lib/mesh/octree_mesh + the generic watershed::segment and
// find_saddles): the labels of every test leaf and the saddle table equal a serial reference written
// here (neighbours by brute force over every pair of leaves whose boxes meet, the PHEW rules of
// docs/formats.md, "Canonical IDs and ties"), at 1-4 ranks and for uneven splits of the coarse cells.
#include <phew/mesh/oct_neighbours.hpp>
#include <phew/mesh/octree.hpp>
#include <phew/mesh/octree_mesh.hpp>
#include <phew/watershed/saddles.hpp>
#include <phew/watershed/watershed.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>

namespace phew::mesh {
namespace {

struct Mesh {
  grid::GridGeometry g;
  int levels = 3;
  std::vector<Cell> leaves;
  std::vector<std::uint64_t> keys;
  std::vector<double> density;
};

// Blobs of several widths (some on top of each other, so patches touch across levels) in a background.
Mesh make_mesh(unsigned seed, bool periodic, std::array<std::int64_t, 3> shape = {10, 9, 8}, int levels = 3) {
  Mesh m;
  m.levels = levels;
  m.g.shape = shape;
  m.g.extent = {static_cast<double>(shape[0]), static_cast<double>(shape[1]), static_cast<double>(shape[2])};
  m.g.periodic = periodic;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> pos, mass;
  const int nblobs = 9;
  std::vector<std::array<double, 4>> blob;
  for (int b = 0; b < nblobs; ++b)
    blob.push_back({u(rng) * m.g.extent[0], u(rng) * m.g.extent[1], u(rng) * m.g.extent[2], 0.15 + 0.6 * u(rng)});
  for (int p = 0; p < 9000; ++p) {
    const int b = p % (nblobs + 1);
    for (int d = 0; d < 3; ++d) {
      const double box = m.g.extent[static_cast<std::size_t>(d)];
      double x = b == nblobs
                     ? u(rng) * box
                     : std::normal_distribution<double>(blob[static_cast<std::size_t>(b)][static_cast<std::size_t>(d)],
                                                        blob[static_cast<std::size_t>(b)][3])(rng);
      if (periodic) x -= box * std::floor(x / box);
      pos.push_back(periodic && x >= box ? 0.0 : x);
    }
    mass.push_back(1.0);
  }
  RefinementParams params;
  params.levels = m.levels;
  params.refine_particles = 6;
  const Octree tree = build_octree(m.g, params, pos, mass);
  m.leaves = tree.leaves();
  const auto leaf_mass = deposit_on_leaves(tree, params.assignment, pos, mass);
  for (std::size_t n = 0; n < m.leaves.size(); ++n) {
    m.keys.push_back(cell_key(m.leaves[n], m.levels));
    m.density.push_back(leaf_mass[n] / tree.cell_volume(m.leaves[n].level));
  }
  return m;
}

struct Result {
  std::map<std::uint64_t, std::int64_t> label;  // test leaf -> peak ID
  std::vector<watershed::Saddle> saddles;
  std::size_t peaks = 0;
};

// The serial reference: neighbours by brute force, then the rules as written.
Result reference(const Mesh& m, double threshold) {
  const std::int64_t f = std::int64_t{1} << m.levels;
  const std::array<std::int64_t, 3> n{m.g.shape[0] * f, m.g.shape[1] * f, m.g.shape[2] * f};
  const auto meet = [&](const Cell& a, const Cell& b) {
    for (std::size_t d = 0; d < 3; ++d) {
      const std::int64_t sa = f >> a.level, sb = f >> b.level, a0 = a.index[d] * sa, b0 = b.index[d] * sb;
      bool any = false;
      for (const std::int64_t shift : {-n[d], std::int64_t{0}, n[d]})
        if (m.g.periodic || shift == 0) any = any || (b0 + shift <= a0 + sa && a0 <= b0 + shift + sb);
      if (!any) return false;
    }
    return true;
  };
  const std::size_t count = m.leaves.size();
  std::vector<std::size_t> tests;
  for (std::size_t i = 0; i < count; ++i)
    if (m.density[i] > threshold) tests.push_back(i);
  std::map<std::size_t, std::vector<std::size_t>> nb;  // of the test leaves
  for (const std::size_t i : tests)
    for (std::size_t j = 0; j < count; ++j)
      if (j != i && meet(m.leaves[i], m.leaves[j])) nb[i].push_back(j);
  const auto before = [&](std::size_t a, std::size_t b) {
    return m.density[a] > m.density[b] || (m.density[a] == m.density[b] && m.keys[a] < m.keys[b]);
  };
  std::vector<std::size_t> order = tests;
  std::sort(order.begin(), order.end(), before);
  Result r;
  std::map<std::size_t, std::int64_t> label;
  for (const std::size_t i : order) {
    std::size_t best = i;
    for (const std::size_t j : nb[i])
      if (before(j, best)) best = j;
    label[i] = best == i ? static_cast<std::int64_t>(++r.peaks) : label.at(best);
  }
  std::map<std::pair<std::int64_t, std::int64_t>, watershed::Saddle> best;
  for (const std::size_t i : tests)
    for (const std::size_t j : nb[i]) {
      if (!label.count(j) || label[j] == label[i]) continue;
      const std::int64_t li = label[i], lj = label[j];
      const auto ki = static_cast<std::int64_t>(m.keys[i]), kj = static_cast<std::int64_t>(m.keys[j]);
      watershed::Saddle c{std::min(li, lj), std::max(li, lj), 0.5 * (m.density[i] + m.density[j]), li < lj ? ki : kj,
                          li < lj ? kj : ki};
      auto [it, fresh] = best.try_emplace({c.peak_a, c.peak_b}, c);
      if (!fresh && watershed::better_saddle(c, it->second)) it->second = c;
    }
  for (const auto& [pair, s] : best) r.saddles.push_back(s);
  for (const auto& [i, l] : label) r.label[m.keys[i]] = l;
  return r;
}

// Rank r gets the leaves of a run of whole coarse cells, cut at uneven places chosen by `seed`; the
// densities held as Real (float: as a float32 file's are). `above_only`: each rank holds only its leaves
// above the threshold, as phew-segment reads them (the mesh of some leaves).
template <typename Real>
BasicOctreeMesh<Real> distributed_mesh(const Mesh& m, double threshold, unsigned seed, const mpi::Comm& comm,
                                       bool above_only) {
  std::vector<std::size_t> coarse_begin;  // first leaf of each coarse cell, in key order
  for (std::size_t i = 0; i < m.leaves.size(); ++i) {
    const auto c = [&](std::size_t k) {
      const Cell& x = m.leaves[k];
      return std::array<std::int64_t, 3>{x.index[0] >> x.level, x.index[1] >> x.level, x.index[2] >> x.level};
    };
    if (i == 0 || c(i) != c(i - 1)) coarse_begin.push_back(i);
  }
  coarse_begin.push_back(m.leaves.size());
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> cut{0};
  for (int r = 1; r < comm.size(); ++r)
    cut.push_back(std::uniform_int_distribution<std::size_t>(0, coarse_begin.size() - 1)(rng));
  cut.push_back(coarse_begin.size() - 1);
  std::sort(cut.begin(), cut.end());
  const auto r = static_cast<std::size_t>(comm.rank());
  const std::size_t b = coarse_begin[cut[r]], e = coarse_begin[cut[r + 1]];
  std::vector<Real> density;
  std::vector<std::uint64_t> keys;
  for (std::size_t i = b; i < e; ++i)
    if (!above_only || m.density[i] > threshold) {
      density.push_back(static_cast<Real>(m.density[i]));
      keys.push_back(m.keys[i]);
    }
  // Each rank's run as keys (CellSpace::rank_cuts): from its first coarse cell's first key.
  std::vector<std::int64_t> cuts{0};
  for (int q = 1; q < comm.size(); ++q) {
    const std::size_t first = coarse_begin[cut[static_cast<std::size_t>(q)]];
    cuts.push_back(first < m.keys.size() ? static_cast<std::int64_t>(subtree_begin(m.keys[first], m.levels))
                                         : std::numeric_limits<std::int64_t>::max());
  }
  cuts.push_back(std::numeric_limits<std::int64_t>::max());
  return above_only ? BasicOctreeMesh<Real>(m.g, m.levels, cuts, std::move(keys), std::move(density), comm)
                    : BasicOctreeMesh<Real>(m.g, m.levels, std::move(keys), std::move(density), comm);
}

// The watershed and saddles of distributed_mesh, gathered.
template <typename Real>
Result distributed(const Mesh& m, double threshold, unsigned seed, const mpi::Comm& comm, bool above_only = false) {
  BasicOctreeMesh<Real> mesh = distributed_mesh<Real>(m, threshold, seed, comm, above_only);
  // As phew-segment does: the neighbours found once, here in small lists on two threads.
  if (above_only) mesh.keep_neighbours(2, 7 + seed % 5);
  const watershed::Segmentation seg = watershed::segment(mesh, threshold, comm);
  Result out;
  out.peaks = seg.n_peaks;
  out.saddles = comm.all_gatherv<watershed::Saddle>(watershed::find_saddles(mesh, seg, comm));
  struct Labelled {
    std::uint64_t key;
    std::int64_t label;
  };
  std::vector<Labelled> mine;
  seg.tests.for_each(mesh.first_local(), mesh.end_local(), [&](std::size_t s, std::size_t member) {
    mine.push_back({static_cast<std::uint64_t>(mesh.global_index(s)), seg.label[member]});
  });
  for (const Labelled& l : comm.all_gatherv<Labelled>(mine)) out.label[l.key] = l.label;
  return out;
}

void expect_equal(const Result& got, const Result& want, const std::string& what) {
  ASSERT_EQ(got.peaks, want.peaks) << what;
  ASSERT_EQ(got.label, want.label) << what;
  ASSERT_EQ(got.saddles.size(), want.saddles.size()) << what;
  for (std::size_t i = 0; i < got.saddles.size(); ++i) {
    const auto &x = got.saddles[i], &y = want.saddles[i];
    ASSERT_TRUE(x.peak_a == y.peak_a && x.peak_b == y.peak_b && x.density == y.density && x.cell_a == y.cell_a &&
                x.cell_b == y.cell_b)
        << what << " saddle " << i;
  }
}

TEST(OctreeMesh, TheWatershedAndItsSaddlesEqualTheSerialReference) {
  const mpi::Comm comm;
  for (const bool periodic : {true, false})
    for (const unsigned seed : {3u, 8u}) {
      const Mesh m = make_mesh(seed, periodic);
      double total = 0;
      for (std::size_t i = 0; i < m.leaves.size(); ++i) total += m.density[i] * std::pow(0.125, m.leaves[i].level);
      const double mean = total / static_cast<double>(m.g.cells());
      const double threshold = 3 * mean;
      const Result want = reference(m, threshold);
      const std::string what = std::string(periodic ? "periodic" : "open") + " seed " + std::to_string(seed);
      EXPECT_GT(want.peaks, 3u) << what;
      EXPECT_GT(want.saddles.size(), 2u) << what;
      expect_equal(distributed<double>(m, threshold, seed * 7 + static_cast<unsigned>(comm.size()), comm), want, what);
      // Held as float (a float32 file): the reference on the same densities rounded to float.
      Mesh single = m;
      for (double& d : single.density) d = static_cast<float>(d);
      expect_equal(distributed<float>(single, threshold, seed * 3 + static_cast<unsigned>(comm.size()), comm),
                   reference(single, threshold), what + " float");
    }
}

// phew-segment's mesh: each rank holds its leaves above the threshold only, and the watershed, which
// looks at no other, gives what it gives on every leaf. At thresholds where the test leaves are most of
// a blob and where they are a few leaves each (a neighbour missing on most sides).
TEST(OctreeMesh, TheLeavesAboveTheThresholdAloneGiveTheSameWatershed) {
  const mpi::Comm comm;
  for (const bool periodic : {true, false})
    for (const unsigned seed : {3u, 21u})
      for (const double times_mean : {2.0, 12.0}) {
        const Mesh m = make_mesh(seed, periodic);
        double total = 0;
        for (std::size_t i = 0; i < m.leaves.size(); ++i) total += m.density[i] * std::pow(0.125, m.leaves[i].level);
        const double threshold = times_mean * total / static_cast<double>(m.g.cells());
        const Result want = reference(m, threshold);
        const std::string what = std::string(periodic ? "periodic" : "open") + " seed " + std::to_string(seed) +
                                 " threshold " + std::to_string(times_mean) + " x mean";
        EXPECT_GT(want.peaks, 1u) << what;
        EXPECT_GT(want.saddles.size(), 0u) << what;
        const unsigned split = seed * 5 + static_cast<unsigned>(comm.size());
        expect_equal(distributed<double>(m, threshold, split, comm, true), want, what);
        expect_equal(distributed<double>(m, threshold, split, comm, false), want, what + " every leaf");
      }
}

// The lists keep_neighbours keeps (found an oct at a time: oct_neighbours.hpp) are those neighbours_of
// finds one leaf at a time, in its order, for any threads and chunks: on lattices wide and narrow (two
// cells along an axis, where the 26 directions wrap onto one cell and neighbours_of's path stays), open
// and periodic, three and four levels, at thresholds where the test leaves fill the blobs and where they
// are a few apiece. Most leaves of the wide lattice go the oct's way.
TEST(OctreeMesh, KeptNeighboursAreThoseFoundOneLeafAtATime) {
  const mpi::Comm comm;
  struct Case {
    std::array<std::int64_t, 3> shape;
    int levels;
  };
  for (const Case& c : {Case{{10, 9, 8}, 3}, Case{{2, 5, 1}, 3}, Case{{6, 7, 5}, 4}})
    for (const bool periodic : {true, false})
      for (const unsigned seed : {4u, 17u})
        for (const double times_mean :
             c.shape[0] > 2 ? std::vector<double>{0, 1, 4, 12} : std::vector<double>{0, 0.5, 1}) {
          const std::array<std::int64_t, 3>& shape = c.shape;
          const Mesh m = make_mesh(seed, periodic, shape, c.levels);
          double total = 0;
          for (std::size_t i = 0; i < m.leaves.size(); ++i) total += m.density[i] * std::pow(0.125, m.leaves[i].level);
          const double threshold = times_mean * total / static_cast<double>(m.g.cells());
          const unsigned split = seed * 11 + static_cast<unsigned>(comm.size());
          OctreeMesh mesh = distributed_mesh<double>(m, threshold, split, comm, true);
          std::vector<std::vector<std::size_t>> want;
          std::size_t found = 0;
          for (std::size_t s = mesh.first_local(); s < mesh.end_local(); ++s) {
            OctreeMesh::Neighbours n;
            const std::size_t count = mesh.neighbours_of(s, n);
            want.emplace_back(n.begin(), n.begin() + static_cast<std::ptrdiff_t>(count));
            found += count;
          }
          const std::string what = std::string(periodic ? "periodic " : "open ") + std::to_string(shape[0]) + "x" +
                                   std::to_string(shape[1]) + "x" + std::to_string(shape[2]) + ", " +
                                   std::to_string(c.levels) + " levels, seed " + std::to_string(seed) + " threshold " +
                                   std::to_string(times_mean) + " x mean";
          EXPECT_GT(comm.sum<std::uint64_t>(found), 100u) << what;
          if (c.shape[0] > 2) {  // the oct's way answers nine in ten (the rest: coarse-grid leaves)
            std::vector<std::uint64_t> keys(mesh.slots());
            for (std::size_t s = 0; s < keys.size(); ++s) keys[s] = static_cast<std::uint64_t>(mesh.global_index(s));
            const OctNeighbours octs(m.g, m.levels, keys);
            std::uint64_t handled = 0;
            for (std::size_t s = mesh.first_local(); s < mesh.end_local(); ++s) handled += octs.handles(s) ? 1 : 0;
            EXPECT_GT(10 * comm.sum(handled), 9 * comm.sum<std::uint64_t>(want.size())) << what;
          }
          for (const auto& [threads, chunk] :
               {std::pair{1, std::size_t{1} << 14}, {2, std::size_t{5}}, {3, std::size_t{1}}}) {
            mesh.keep_neighbours(threads, chunk);
            for (std::size_t s = mesh.first_local(); s < mesh.end_local(); ++s) {
              std::vector<std::size_t> got;
              mesh.for_each_neighbour(s, [&](std::size_t t) { got.push_back(t); });
              ASSERT_EQ(got, want[s - mesh.first_local()])
                  << what << ", leaf " << mesh.global_index(s) << ", " << threads << " threads, chunks of " << chunk;
            }
          }
        }
}

}  // namespace
}  // namespace phew::mesh
