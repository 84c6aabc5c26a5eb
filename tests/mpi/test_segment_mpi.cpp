// phew-segment's core on 1-4 ranks: equal to the serial reference on random fields (with ties and
// plateaus), analytic blobs, periodic seams, every lattice of blocks the ranks make (slabs, pencils,
// bricks), uneven and empty blocks.
#include "../unit/block_lattices.hpp"
#include "../unit/reference_watershed.hpp"
#include <phew/watershed/saddles.hpp>
#include <phew/mesh/block_mesh.hpp>
#include <phew/watershed/watershed.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

namespace phew::watershed {
namespace {

struct Field {
  grid::GridGeometry g;
  std::vector<double> rho;
};

// This rank's block, cut from the whole field; the mesh fetches its ghosts.
mesh::BlockMesh mesh_of(const Field& f, const mpi::BlockDecomposition& blocks, const mpi::Comm& comm) {
  const mpi::BlockDecomposition::Box box = blocks.box(comm.rank());
  core::RawVector<double> d;
  for (long i = box.lo[0]; i < box.hi[0]; ++i)
    for (long j = box.lo[1]; j < box.hi[1]; ++j)
      for (long k = box.lo[2]; k < box.hi[2]; ++k)
        d.push_back(f.rho[static_cast<std::size_t>((i * f.g.shape[1] + j) * f.g.shape[2] + k)]);
  return mesh::BlockMesh(f.g, blocks, std::move(d), comm);
}

// Runs the parallel path on 1 and 3 threads (3: the roots are found in runs of cells whose chains
// cross into each other's) and checks labels, peaks and saddles against the reference.
void check_against_reference(const Field& f, double threshold, const mpi::BlockDecomposition& blocks) {
  for (const int threads : {1, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const mpi::Comm comm;
    const mesh::BlockMesh mesh = mesh_of(f, blocks, comm);
    const Segmentation seg = segment(mesh, threshold, comm, threads);
    const auto saddles = comm.all_gatherv<Saddle>(find_saddles(mesh, seg, comm, threads));  // each rank holds its own
    const auto ref =
        test::reference_watershed(f.rho, {f.g.shape[0], f.g.shape[1], f.g.shape[2]}, f.g.periodic, threshold);

    // Each rank holds its block of the peaks: together, every peak in ID order.
    const auto peaks = comm.all_gatherv<PeakCell>(seg.own_peaks);
    ASSERT_EQ(seg.n_peaks, ref.peak_cell.size());
    ASSERT_EQ(peaks.size(), ref.peak_cell.size());
    for (std::size_t i = 0; i < peaks.size(); ++i) EXPECT_EQ(peaks[i].cell, ref.peak_cell[i]);
    const mpi::SlabDecomposition owners(std::max<std::int64_t>(1, static_cast<std::int64_t>(seg.n_peaks)), comm.size());
    EXPECT_EQ(seg.first_peak, owners.begin(comm.rank()) + 1);
    EXPECT_EQ(static_cast<std::int64_t>(seg.own_peaks.size()), owners.planes(comm.rank()));
    for (std::size_t s = mesh.first_local(); s < mesh.end_local(); ++s)
      ASSERT_EQ(seg.label_of(s), ref.label[static_cast<std::size_t>(mesh.global_index(s))])
          << "cell " << mesh.global_index(s);
    ASSERT_EQ(saddles.size(), ref.saddles.size());
    for (const Saddle& s : saddles) {
      const auto& [rho, ca, cb] = ref.saddles.at({s.peak_a, s.peak_b});
      EXPECT_EQ(s.density, rho);
      EXPECT_EQ(s.cell_a, ca);
      EXPECT_EQ(s.cell_b, cb);
    }
  }
}

Field random_field(std::array<long, 3> n, bool periodic, unsigned seed, int levels) {
  Field f;
  f.g.shape = {n[0], n[1], n[2]};
  f.g.extent = {1.0, 1.0, 1.0};
  f.g.periodic = periodic;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> q(0, levels - 1);  // few levels: many exact ties and plateaus
  for (long c = 0; c < n[0] * n[1] * n[2]; ++c) f.rho.push_back(static_cast<double>(q(rng)));
  return f;
}

Field blobs(std::array<long, 3> n, const std::vector<std::array<double, 4>>& centres_sigma) {
  Field f;
  f.g.shape = {n[0], n[1], n[2]};
  f.g.extent = {static_cast<double>(n[0]), static_cast<double>(n[1]), static_cast<double>(n[2])};
  f.g.periodic = true;
  for (long i = 0; i < n[0]; ++i)
    for (long j = 0; j < n[1]; ++j)
      for (long k = 0; k < n[2]; ++k) {
        double v = 0;
        for (const auto& b : centres_sigma) {
          double r2 = 0;
          const double x[3] = {static_cast<double>(i) + 0.5, static_cast<double>(j) + 0.5,
                               static_cast<double>(k) + 0.5};
          for (int d = 0; d < 3; ++d) {
            double dx = std::abs(x[d] - b[static_cast<std::size_t>(d)]);
            dx = std::min(dx, static_cast<double>(n[static_cast<std::size_t>(d)]) - dx);  // periodic
            r2 += dx * dx;
          }
          v += std::exp(-0.5 * r2 / (b[3] * b[3]));
        }
        f.rho.push_back(v);
      }
  return f;
}

TEST(Segment, RandomFieldsWithTiesMatchTheReference) {
  const mpi::Comm comm;
  for (bool periodic : {true, false})
    for (unsigned seed : {1u, 2u, 3u}) {
      const Field f = random_field({11, 7, 6}, periodic, seed, 5);
      for (const mpi::BlockDecomposition& blocks : test::every_lattice(f.g.shape, comm.size()))
        check_against_reference(f, 1.5, blocks);
    }
}

TEST(Segment, SmoothRandomFieldMatchesTheReference) {
  const mpi::Comm comm;
  Field f = random_field({16, 12, 10}, true, 9, 1000);
  for (const mpi::BlockDecomposition& blocks : test::every_lattice(f.g.shape, comm.size()))
    check_against_reference(f, 300.0, blocks);
}

TEST(Segment, UnevenAndEmptySlabs) {
  const mpi::Comm comm;
  const Field f = random_field({9, 5, 5}, true, 4, 4);
  std::vector<std::int64_t> begins(static_cast<std::size_t>(comm.size()), 1);
  begins[0] = 0;
  check_against_reference(f, 0.5,
                          mpi::BlockDecomposition({mpi::SlabDecomposition(9, begins), mpi::SlabDecomposition(5, 1),
                                                   mpi::SlabDecomposition(5, 1)}));
  check_against_reference(f, 0.5,
                          mpi::BlockDecomposition({mpi::SlabDecomposition(9, 1), mpi::SlabDecomposition(5, 1),
                                                   mpi::SlabDecomposition(5, begins)}));
}

TEST(Segment, TinyGrids) {
  const mpi::Comm comm;
  for (long nx : {1L, 2L, 3L}) {
    const Field f = random_field({nx, 3, 2}, true, 5, 3);
    for (const mpi::BlockDecomposition& blocks : test::every_lattice(f.g.shape, comm.size()))
      check_against_reference(f, 0.5, blocks);
  }
}

TEST(Segment, OneGaussianBlobIsOnePeakCoveringAllTestCells) {
  const mpi::Comm comm;
  const Field f = blobs({20, 16, 16}, {{10.2, 8.1, 7.9, 3.0}});
  const mpi::BlockDecomposition blocks(f.g.shape, comm.size());
  const mesh::BlockMesh mesh = mesh_of(f, blocks, comm);
  const Segmentation seg = segment(mesh, 0.05, comm);
  ASSERT_EQ(seg.n_peaks, 1u);
  const auto peaks = comm.all_gatherv<PeakCell>(seg.own_peaks);
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(peaks[0].cell, (10 * 16 + 8) * 16 + 7);  // the cell whose centre is nearest (10.2, 8.1, 7.9)
  for (std::size_t s = mesh.first_local(); s < mesh.end_local(); ++s)
    EXPECT_EQ(seg.label_of(s), mesh.density(s) > 0.05 ? 1 : 0);
  EXPECT_TRUE(comm.all_gatherv<Saddle>(find_saddles(mesh, seg, comm)).empty());
}

TEST(Segment, BlobOnThePeriodicSeamIsOnePeak) {
  const mpi::Comm comm;
  const Field f = blobs({20, 12, 12}, {{0.3, 6.0, 6.0, 2.5}});  // straddles x = 0
  const mpi::BlockDecomposition blocks(f.g.shape, comm.size());
  const mesh::BlockMesh mesh = mesh_of(f, blocks, comm);
  const Segmentation seg = segment(mesh, 0.01, comm);
  EXPECT_EQ(seg.n_peaks, 1u);
  check_against_reference(f, 0.01, blocks);
}

TEST(Segment, TwoBlobsHaveTheBruteForceSaddle) {
  const mpi::Comm comm;
  // Equal blobs at x = 8 and x = 16: the saddle lies on the plane between, near the midpoint density.
  const Field f = blobs({24, 12, 12}, {{8.0, 6.0, 6.0, 2.5}, {16.0, 6.0, 6.0, 2.5}});
  const mpi::BlockDecomposition blocks(f.g.shape, comm.size());
  const mesh::BlockMesh mesh = mesh_of(f, blocks, comm);
  const Segmentation seg = segment(mesh, 0.05, comm);
  ASSERT_EQ(seg.n_peaks, 2u);
  const auto saddles = comm.all_gatherv<Saddle>(find_saddles(mesh, seg, comm));
  ASSERT_EQ(saddles.size(), 1u);
  // Brute force, independent of the library: max over all neighbouring cell pairs in different halves
  // x < 12 and x >= 12 (the two patches by symmetry) of the mean density.
  double best = 0;
  const long n[3] = {24, 12, 12};
  for (long i = 0; i < n[0]; ++i)
    for (long j = 0; j < n[1]; ++j)
      for (long k = 0; k < n[2]; ++k)
        for (long dj = -1; dj <= 1; ++dj)
          for (long dk = -1; dk <= 1; ++dk) {
            if (i != 11) continue;  // pairs across the plane between x=11 and x=12
            const long jj = (j + dj + n[1]) % n[1], kk = (k + dk + n[2]) % n[2];
            const double a = f.rho[static_cast<std::size_t>((i * n[1] + j) * n[2] + k)];
            const double b = f.rho[static_cast<std::size_t>(((i + 1) * n[1] + jj) * n[2] + kk)];
            if (a > 0.05 && b > 0.05) best = std::max(best, 0.5 * (a + b));
          }
  EXPECT_DOUBLE_EQ(saddles[0].density, best);
  const double midpoint = 2 * std::exp(-0.5 * 16.0 / (2.5 * 2.5));  // analytic density at x = 12
  EXPECT_NEAR(saddles[0].density, midpoint, 0.02 * midpoint);
}

}  // namespace
}  // namespace phew::watershed
