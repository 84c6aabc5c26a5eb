#include "phew_segment.hpp"

#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>
#include <phew/io/amr_grid_file.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/io/patches_file.hpp>
#include <phew/mesh/block_mesh.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/mesh/octree_mesh.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/tool/threads_option.hpp>
#include <phew/watershed/patches.hpp>

#include <numeric>

namespace phew::tools {
namespace {

// The grid rule (lib/grid/geometry.hpp, docs/thresholds.md "The grid") seen from the segmentation: a
// grid on which a cell at the threshold holds less than one particle mass lets single particles rise
// above the threshold, and their peaks are Poisson noise. Says so with the rule's grid, and with how many
// peaks hold less than one particle mass (no real structure does). Collective.
void check_grid_rule(const model::Patches& patches, const grid::GridMeta& meta, double threshold,
                     const mpi::Comm& comm) {
  const grid::GridGeometry& g = meta.geometry;
  if (meta.n_particles == 0 || !(meta.mean_density > 0) || !(meta.total_mass > 0)) return;  // not made of particles
  const double particles = static_cast<double>(meta.n_particles);
  const double delta = threshold / meta.mean_density;
  const double per_cell = grid::particles_per_threshold_cell(delta, particles, static_cast<double>(g.cells()));
  core::log::info("a cell at the threshold holds {:.3g} particle masses (the grid rule: at least {:g})", per_cell,
                  grid::kParticlesPerThresholdCell);
  if (per_cell >= grid::kParticlesPerThresholdCell) return;
  const double mp = meta.total_mass / particles;
  std::uint64_t light = 0;
  for (const model::PatchPeak& p : patches.peaks) light += p.mass < mp;
  light = comm.sum(light);
  const std::uint64_t all = comm.sum<std::uint64_t>(patches.peaks.size());
  const auto rule = grid::grid_rule_shape(g.extent, particles, delta);
  core::log::warn(
      "the grid is too fine for the particles: a cell at the threshold holds {:.3g} particle masses, so single "
      "particles rise above it and make peaks of Poisson noise ({} of {} peaks hold less than one particle "
      "mass); make the grid with cic-project --grid auto --for-threshold {:g}mean ({}x{}x{} cells here) or "
      "coarser (docs/thresholds.md, \"The grid\")",
      per_cell, core::log::thousands(static_cast<long long>(light)), core::log::thousands(static_cast<long long>(all)),
      delta, rule[0], rule[1], rule[2]);
}

// No test cell: often an absolute threshold meant as a multiple of the mean. Says where the densest
// cell and the mean lie, and suggests the `mean` suffix when that reading would find cells.
void warn_if_empty(std::uint64_t test_cells, double densest, const grid::GridMeta& meta,
                   const watershed::SegmentParams& params, const core::DensityThreshold& threshold) {
  if (test_cells > 0) return;
  const bool absolute = threshold.unit == core::DensityThreshold::Unit::absolute;
  const bool meant_mean = absolute && meta.mean_density > 0 && threshold.value * meta.mean_density < densest;
  core::log::warn(
      "no cell is above the threshold {} ({:.4g} {}{}): the result is empty; the densest cell is {:.4g} ({:.4g} x "
      "the mean density {:.4g}){}",
      params.threshold_text, params.threshold, meta.density_units, absolute ? ", absolute" : "", densest,
      meta.mean_density > 0 ? densest / meta.mean_density : 0.0, meta.mean_density,
      meant_mean ? fmt::format("; for {} times the mean density write --threshold {}mean", params.threshold_text,
                               params.threshold_text)
                 : "");
}

}  // namespace

void declare_segment_options(CLI::App& app, SegmentOptions& opt) {
  app.add_option("grid", opt.grid, "Density grid from cic-project (grid.h5)")->required();
  app.add_option("--threshold", opt.threshold,
                 "Density threshold: absolute (1.5e-7, grid units), 80mean (x mean density) or 80crit (x critical)")
      ->required();
  app.add_option("--mean-from", opt.mean_from,
                 "Take the mean density of NUMBERmean thresholds from this grid (the first snapshot of an open-box "
                 "series), so that the threshold stays fixed as mass leaves the region");
  app.add_flag("--refine-positions", opt.refine_positions,
               "Refine peak positions inside their cell by a quadratic fit of the 3x3x3 neighbourhood");
  tool::add_threads_option(app, opt.threads, "they share the densest-neighbour and saddle searches");
}

PhewSegmentParams check_segment_options(const SegmentOptions& opt) {
  return {core::DensityThreshold::parse(opt.threshold), opt.refine_positions, tool::parse_threads(opt.threads)};
}

namespace {

// Refuses before reading: the density (8 B/cell) and the test-cell bitmap; test cells cost 40 B each at
// the peak (sorting, labels and the output rows), assumed here for up to a tenth of the cells. Collective.
void check_segment_memory(const grid::GridGeometry& g, const mpi::BlockDecomposition& blocks, const mpi::Comm& comm) {
  const double need = static_cast<double>(blocks.box(comm.rank()).cells()) * 12.5;
  mpi::agree(comm, [&] {
    core::check_memory(need * mpi::ranks_on_node(comm), core::available_memory_bytes(),
                       fmt::format("segmenting a {}x{}x{} grid", g.shape[0], g.shape[1], g.shape[2]));
  });
}

struct SegmentSummary {
  std::uint64_t n_test_cells = 0, n_peaks = 0, n_saddles = 0;  // totals over the ranks
  // The rounds depend on the decomposition: provenance, not data (docs/cli.md, "Same data on any number of ranks").
  int label_rounds = 0;
};
// clang-format off: one column and its constraints per line
const manifest::Fields<SegmentSummary> kSummary = manifest::Fields<SegmentSummary>()
                                                      .field("n_test_cells", &SegmentSummary::n_test_cells)
                                                      .field("n_peaks", &SegmentSummary::n_peaks)
                                                      .field("n_saddles", &SegmentSummary::n_saddles)
                                                      .field("label_rounds", &SegmentSummary::label_rounds);
// clang-format on

// The adaptive mesh (cic-project --refine): this rank's run of whole coarse cells (mesh::CellSpace::rank_cuts),
// segmented across levels. Collective.
watershed::Segmented segment_octree(const io::File& file, const grid::GridMeta& meta,
                                    const watershed::SegmentParams& params, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  model::AmrRefinement refinement;
  model::AmrLeaves leaves;
  ctx.phase("read");
  mpi::agree(comm, [&] {
    refinement = io::read_amr_refinement(file);
    const auto cuts = mesh::CellSpace::octree(meta.geometry, refinement.levels)
                          .rank_cuts(comm.size(), io::count_amr_leaves(file),
                                     [&](std::uint64_t row) { return io::read_amr_leaf_rows(file, row, 1).key[0]; });
    const auto r = static_cast<std::size_t>(comm.rank());
    // About 70 B per leaf at the peak (measured): the leaves as read (17 B: the levels checked against
    // the keys), the mesh's ghosts, the watershed's sets and labels.
    const std::uint64_t mine =
        cuts[r + 1] > cuts[r] ? io::count_amr_leaves(file) / static_cast<std::uint64_t>(comm.size()) : 0;
    core::check_memory(static_cast<double>(mine) * 70.0 * mpi::ranks_on_node(comm), core::available_memory_bytes(),
                       fmt::format("segmenting an adaptive mesh of {} leaves", io::count_amr_leaves(file)));
    leaves = io::read_amr_leaves(file, static_cast<std::uint64_t>(cuts[r]), static_cast<std::uint64_t>(cuts[r + 1]));
  });
  core::log::info("adaptive mesh: {} leaves over {} levels above the coarse grid",
                  core::log::thousands(static_cast<long long>(comm.sum<std::uint64_t>(leaves.size()))),
                  refinement.levels);
  std::vector<std::uint64_t> keys = std::move(leaves.key);
  std::vector<double> density = std::move(leaves.density);
  return watershed::segment_octree_patches(meta, refinement, std::move(keys), std::move(density), params, comm,
                                           [&](const std::string& p) { ctx.phase(p); });
}

// The uniform grid: this rank's block of cells (mpi::BlockDecomposition); the ghosts come from the ranks around.
// Collective.
watershed::Segmented segment_uniform(const io::File& file, const grid::GridMeta& meta,
                                     const watershed::SegmentParams& params, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  const grid::GridGeometry& g = meta.geometry;
  const mpi::BlockDecomposition blocks(g.shape, comm.size());
  check_segment_memory(g, blocks, comm);
  ctx.phase("read");
  // A float32 grid is held as stored: half the memory, and the same doubles where they are compared.
  bool single = false;
  mpi::agree(comm, [&] { single = io::grid_is_float32(file); });
  const auto segment = [&](auto density) {
    return segment_patches(meta, blocks, std::move(density), params, comm, [&](const std::string& p) { ctx.phase(p); });
  };
  const mpi::BlockDecomposition::Box box = blocks.box(comm.rank());
  if (single) {
    std::vector<float> density;
    mpi::agree(comm, [&] {
      density = io::read_grid_box<float>(file, g, box.lo, box.hi, mesh::BlockMesh32::shell_cells(box));
    });
    return segment(std::move(density));
  }
  std::vector<double> density;
  mpi::agree(comm,
             [&] { density = io::read_grid_box<double>(file, g, box.lo, box.hi, mesh::BlockMesh::shell_cells(box)); });
  return segment(std::move(density));
}

}  // namespace

void run_phew_segment(const SegmentOptions& opt, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  const PhewSegmentParams checked = check_segment_options(opt);

  ctx.phase("open");
  ctx.add_input(opt.grid, {"grid"});
  std::optional<io::File> file;
  grid::GridMeta meta;
  bool adaptive = false;
  watershed::SegmentParams params{0, checked.threshold.to_string(), checked.refine_positions,
                                  tool::threads_to_use(checked.threads, ctx)};
  mpi::agree(comm, [&] {
    file.emplace(io::File::open_read(opt.grid));
    adaptive = io::is_adaptive_grid(*file);
    if (adaptive && checked.refine_positions)
      throw core::Error::usage("--refine-positions fits a 3x3x3 block of equal cells: not on an adaptive mesh ({})",
                               opt.grid);
    meta = adaptive ? io::read_amr_grid_meta(*file) : io::read_grid_meta(*file);
    const double mean = opt.mean_from.empty() ? meta.mean_density : io::reference_mean_density(opt.mean_from, meta);
    params.threshold = checked.threshold.resolve(mean, meta.critical_density);
    if (!opt.mean_from.empty()) ctx.manifest().parameter("mean_density_used", mean, meta.density_units);
  });
  if (!opt.mean_from.empty()) ctx.add_input(opt.mean_from, {"grid"});
  const grid::GridGeometry& g = meta.geometry;
  core::log::info("{}: {}x{}x{} {}grid, threshold {} = {:.6g} {} ({:.4g} x mean)", opt.grid, g.shape[0], g.shape[1],
                  g.shape[2], adaptive ? "coarse " : "", params.threshold_text, params.threshold, meta.density_units,
                  meta.mean_density > 0 ? params.threshold / meta.mean_density : 0.0);
  const watershed::Segmented segmented =
      adaptive ? segment_octree(*file, meta, params, ctx) : segment_uniform(*file, meta, params, ctx);
  file.reset();
  const model::Patches& patches = segmented.patches;
  const int rounds = segmented.label_rounds;

  warn_if_empty(patches.meta.n_test_cells, segmented.densest, meta, params, checked.threshold);
  // The grid rule is the uniform grid's; the octree refines on the particles instead.
  if (patches.meta.n_test_cells > 0 && !adaptive) check_grid_rule(patches, meta, params.threshold, comm);

  ctx.phase("write");
  ctx.manifest().parameter("threshold_used", params.threshold, meta.density_units);
  ctx.manifest().parameter("neighbourhood", 26);
  const SegmentSummary summary{patches.meta.n_test_cells, comm.sum<std::uint64_t>(patches.peaks.size()),
                               comm.sum<std::uint64_t>(patches.saddles.size()), rounds};
  ctx.summary(kSummary, summary);
  ctx.write_output([&](io::File& f) { io::write_patches(f, patches, comm); });
}

}  // namespace phew::tools
