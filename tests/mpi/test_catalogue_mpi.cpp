// phew-segment's and phew-merge's stages (segment_patches, build_catalogue) through their files, on 1-4
// ranks: three Gaussian blobs with known peaks, saddle and relevances; every row equal to the same
// stages run on one rank (MPI_COMM_SELF) in the same process.
#include "../unit/reference_watershed.hpp"
#include "catalogue_files.hpp"

#include <phew/io/cells_file.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/io/patches_file.hpp>
#include <phew/watershed/catalogue.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/watershed/patches.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

namespace phew::watershed {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kN = 24;

// Blob A (the densest) and B sit side by side across the slab boundaries of 2-4 ranks; C is alone and
// straddles the periodic seam in x.
double density_at(double x, double y, double z) {
  struct Blob {
    double x, y, z, rho, sigma;
  };
  const Blob blobs[] = {{9.5, 12.5, 12.5, 100, 1.6}, {14.5, 12.5, 12.5, 40, 1.4}, {0.5, 5.5, 18.5, 20, 1.2}};
  double rho = 0.01;
  for (const Blob& b : blobs) {
    double r2 = 0;
    for (auto [u, c] : {std::pair{x, b.x}, {y, b.y}, {z, b.z}}) {
      const double d = grid::minimum_image(u - c, static_cast<double>(kN), true);
      r2 += d * d;
    }
    rho += b.rho * std::exp(-r2 / (2 * b.sigma * b.sigma));
  }
  return rho;
}

grid::GridMeta blob_grid() {
  grid::GridMeta g;
  g.geometry.shape = {kN, kN, kN};
  g.geometry.extent = {static_cast<double>(kN), static_cast<double>(kN), static_cast<double>(kN)};
  g.geometry.periodic = true;
  g.assignment = "CIC";
  g.length_units = "kpc";
  g.mass_units = "1e10 Msun";
  g.density_units = "(1e10 Msun)/(kpc)^3";
  return g;
}

// Writes grid.h5, runs segment_patches into patches.h5 and build_catalogue; returns every rank's rows.
struct Result {
  std::vector<model::PatchPeak> peaks;
  std::vector<model::SaddleRow> saddles;
  std::vector<model::Clump> clumps;
  std::vector<model::Halo> halos;
  std::vector<model::MergedPeak> merged;
};

Result run_stages(const mpi::Comm& comm, const std::string& dir, const CatalogueParams& params) {
  grid::GridMeta grid = blob_grid();
  const grid::GridGeometry& g = grid.geometry;
  const mpi::BlockDecomposition blocks(g.shape, comm.size());
  const mpi::BlockDecomposition::Box box = blocks.box(comm.rank());
  std::vector<double> mine;
  for (std::int64_t i = box.lo[0]; i < box.hi[0]; ++i)
    for (std::int64_t j = box.lo[1]; j < box.hi[1]; ++j)
      for (std::int64_t k = box.lo[2]; k < box.hi[2]; ++k) {
        const auto c = g.centre({i, j, k});
        mine.push_back(density_at(c[0], c[1], c[2]));
      }
  const double total = comm.sum(std::accumulate(mine.begin(), mine.end(), 0.0));
  grid.total_mass = total;
  grid.mean_density = total / static_cast<double>(kN * kN * kN);
  {
    io::File f = io::File::create(dir + "/grid.h5", comm);
    io::write_grid(f, grid, blocks, mine, io::Precision::f64);
  }
  core::RawVector<double> block;
  {
    const io::File f = io::File::open_read(dir + "/grid.h5");
    block = io::read_grid_box(f, g, blocks.box(comm.rank()).lo, blocks.box(comm.rank()).hi);
  }
  const model::Patches patches = segment_patches(grid, blocks, std::move(block), {1.0, "1", false}, comm).patches;
  {
    io::File f = io::File::create(dir + "/patches.h5", comm);
    io::write_patches(f, patches, comm);
  }
  const io::File pf = io::File::open_read(dir + "/patches.h5");
  const io::File gf = io::File::open_read(dir + "/grid.h5");
  const model::Clumps clumps =
      build_catalogue(tools::CatalogueFiles(pf, gf, io::read_patches_header(pf)), params, comm).clumps;
  return {comm.all_gatherv<model::PatchPeak>(patches.peaks), comm.all_gatherv<model::SaddleRow>(patches.saddles),
          comm.all_gatherv<model::Clump>(clumps.clumps), comm.all_gatherv<model::Halo>(clumps.halos),
          comm.all_gatherv<model::MergedPeak>(clumps.peaks)};
}

class Catalogue : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder for the parallel run (made by rank 0) and one per rank for its serial run.
    base_ = fs::temp_directory_path() /
            ("phew-test-catalogue-" + std::to_string(comm_.all_gather(static_cast<long>(getpid()))[0]));
    if (comm_.root()) fs::create_directories(base_ / "all");
    fs::create_directories(base_ / ("self" + std::to_string(comm_.rank())));
    comm_.barrier();
  }
  void TearDown() override {
    comm_.barrier();
    if (comm_.root()) fs::remove_all(base_);
  }
  const mpi::Comm comm_;
  fs::path base_;
};

void expect_same(const Result& a, const Result& b) {
  ASSERT_EQ(a.peaks.size(), b.peaks.size());
  for (std::size_t i = 0; i < a.peaks.size(); ++i) {
    EXPECT_EQ(a.peaks[i].cell, b.peaks[i].cell);
    EXPECT_EQ(a.peaks[i].mass, b.peaks[i].mass);
    EXPECT_EQ(a.peaks[i].n_cells, b.peaks[i].n_cells);
  }
  ASSERT_EQ(a.saddles.size(), b.saddles.size());
  ASSERT_EQ(a.clumps.size(), b.clumps.size());
  for (std::size_t i = 0; i < a.clumps.size(); ++i) {
    EXPECT_EQ(a.clumps[i].halo, b.clumps[i].halo);
    EXPECT_EQ(a.clumps[i].mass, b.clumps[i].mass);
    EXPECT_EQ(a.clumps[i].center_of_mass, b.clumps[i].center_of_mass);
  }
  ASSERT_EQ(a.halos.size(), b.halos.size());
  for (std::size_t i = 0; i < a.halos.size(); ++i) EXPECT_EQ(a.halos[i].mass, b.halos[i].mass);
}

TEST_F(Catalogue, ThreeBlobsKnownPeaksSaddleAndHierarchy) {
  CatalogueParams p;
  p.relevance = 1.1;
  p.saddle_threshold = 1.0;  // below A-B's saddle: B joins A's halo, C stays its own
  const Result all = run_stages(comm_, (base_ / "all").string(), p);
  const Result self =
      run_stages(mpi::Comm(MPI_COMM_SELF), (base_ / ("self" + std::to_string(comm_.rank()))).string(), p);
  expect_same(all, self);

  // Peaks in density order: A, B, C at the cells of their centres.
  ASSERT_EQ(all.peaks.size(), 3u);
  const grid::GridGeometry g = blob_grid().geometry;
  EXPECT_EQ(all.peaks[0].cell, g.linear({9, 12, 12}));
  EXPECT_EQ(all.peaks[1].cell, g.linear({14, 12, 12}));
  EXPECT_EQ(all.peaks[2].cell, g.linear({0, 5, 18}));
  // A and B touch; C's patch is alone.
  ASSERT_EQ(all.saddles.size(), 1u);
  EXPECT_EQ(all.saddles[0].peak_a, 1);
  EXPECT_EQ(all.saddles[0].peak_b, 2);
  // The saddle and the peaks are those of the independent serial reference (tests/unit/reference_watershed).
  std::vector<double> rho;
  for (std::int64_t c = 0; c < kN * kN * kN; ++c) {
    const auto x = g.centre(g.cell_at(c));
    rho.push_back(density_at(x[0], x[1], x[2]));
  }
  const auto ref = test::reference_watershed(rho, {kN, kN, kN}, true, 1.0);
  ASSERT_EQ(ref.peak_cell.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(all.peaks[i].cell, ref.peak_cell[i]);
  const auto& [best, cell_a, cell_b] = ref.saddles.at({1, 2});
  EXPECT_EQ(all.saddles[0].density, best);
  EXPECT_EQ(all.saddles[0].cell_a, cell_a);
  EXPECT_EQ(all.saddles[0].cell_b, cell_b);
  // Relevance of B = its peak density / the saddle; every peak is a clump at relevance 1.1.
  ASSERT_EQ(all.merged.size(), 3u);
  EXPECT_DOUBLE_EQ(all.merged[1].relevance, all.peaks[1].density / best);
  ASSERT_EQ(all.clumps.size(), 3u);
  EXPECT_EQ(all.clumps[1].halo, 1);
  EXPECT_EQ(all.clumps[2].halo, 3);
  ASSERT_EQ(all.halos.size(), 2u);
  EXPECT_EQ(all.halos[0].n_clumps, 2);
  // Mass is conserved: the haloes hold every test cell's mass.
  double peaks_mass = 0, halos_mass = 0;
  for (const auto& pk : all.peaks) peaks_mass += pk.mass;
  for (const auto& h : all.halos) halos_mass += h.mass;
  EXPECT_NEAR(halos_mass, peaks_mass, 1e-12 * peaks_mass);
}

TEST_F(Catalogue, RelevanceAboveBsMergesItIntoA) {
  CatalogueParams p;
  p.relevance = 50;  // B (peak/saddle ~ a few) is noise: it joins A; C is isolated and irrelevant: discarded
  const Result all = run_stages(comm_, (base_ / "all").string(), p);
  const Result self =
      run_stages(mpi::Comm(MPI_COMM_SELF), (base_ / ("self" + std::to_string(comm_.rank()))).string(), p);
  expect_same(all, self);
  ASSERT_EQ(all.merged.size(), 3u);
  EXPECT_EQ(all.merged[0].clump, 1);
  EXPECT_EQ(all.merged[1].clump, 1);
  EXPECT_EQ(all.merged[2].clump, 0);  // 20 / threshold 1 = 20 < 50
  ASSERT_EQ(all.clumps.size(), 1u);
  EXPECT_NEAR(all.clumps[0].mass, all.peaks[0].mass + all.peaks[1].mass, 1e-12 * all.clumps[0].mass);
}

// The ranks after the watershed cut the test cells by count at whole pencils, so a plane may be shared
// by ranks and the ranks may outnumber the planes (a 2 x 3 x 4 grid here, at up to 4 ranks): the
// file's /cells/index and /cells/plane_start are those of one rank, and reading any range of indices
// gives its cells.
TEST_F(Catalogue, CellIndexWrittenByRanksThatSharePlanes) {
  grid::GridGeometry g;
  g.shape = {2, 3, 4};
  g.extent = {2, 3, 4};
  std::vector<std::int64_t> all;  // every third cell, and the whole of pencil (1, 1)
  for (std::int64_t c = 0; c < 24; ++c)
    if (c % 3 == 0 || (c >= 16 && c < 20)) all.push_back(c);
  const mesh::CellSpace space = mesh::CellSpace::uniform(g);
  const auto cuts = space.rank_cuts(comm_.size(), all.size(),
                                    [&](std::uint64_t row) { return static_cast<std::uint64_t>(all[row]); });
  const auto r = static_cast<std::size_t>(comm_.rank());
  std::vector<std::int64_t> mine, labels;
  for (const std::int64_t c : all)
    if (c >= cuts[r] && c < cuts[r + 1]) mine.push_back(c);
  for (const std::int64_t c : mine) labels.push_back(c + 1);
  const std::string path = (base_ / "all" / "cells.h5").string();
  {
    io::File f = io::File::create(path, comm_);
    grid::GridMeta meta = blob_grid();
    meta.geometry = g;
    meta.total_mass = 24;
    meta.mean_density = 1;
    f.create_group("/grid");
    io::write_grid_attributes(f, meta, "/grid");
    io::write_cell_index(f, g, mine, comm_);
    io::write_cell_labels(f, "peak", labels, "", comm_);
  }
  comm_.barrier();
  const io::File f = io::File::open_read(path);
  EXPECT_EQ(f.read<std::int64_t>("/cells/index"), all);
  std::vector<std::int64_t> start{0, 0, 0};
  for (const std::int64_t c : all) ++start[static_cast<std::size_t>(c / 12) + 1];
  start[2] += start[1];
  EXPECT_EQ(f.read<std::int64_t>("/cells/plane_start"), start);
  for (std::int64_t b = 0; b <= 24; b += 5) {
    const grid::CellLabels got = io::read_cell_labels(f, "peak", b, b + 7, 100);
    std::vector<std::int64_t> want;
    for (const std::int64_t c : all)
      if (c >= b && c < b + 7) want.push_back(c);
    EXPECT_EQ(got.cell, want) << "cells in [" << b << ", " << b + 7 << ")";
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got.label[i], got.cell[i] + 1);
  }
}

}  // namespace
}  // namespace phew::watershed
