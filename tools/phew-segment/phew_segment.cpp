#include "phew_segment.hpp"

#include <phew/core/log.hpp>
#include <phew/io/amr_grid_file.hpp>
#include <phew/io/patches_file.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/tool/field_file.hpp>
#include <phew/tool/threads_option.hpp>
#include <phew/watershed/patches.hpp>

#include <CLI/CLI.hpp>

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
  if (patches.refinement) return;  // the grid rule is the uniform grid's; the octree refines on the particles
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

}  // namespace

void run_phew_segment(const SegmentOptions& opt, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  const PhewSegmentParams checked = check_segment_options(opt);

  ctx.phase("open");
  ctx.add_input(opt.grid, {"grid"});
  std::optional<io::File> file;
  grid::GridMeta meta;
  watershed::SegmentParams params{0, checked.threshold.to_string(), checked.refine_positions,
                                  tool::threads_to_use(checked.threads, ctx)};
  mpi::agree(comm, [&] {
    file.emplace(io::File::open_read(opt.grid));
    meta = io::read_mesh_meta(*file);
    const double mean = opt.mean_from.empty() ? meta.mean_density : io::reference_mean_density(opt.mean_from, meta);
    params.threshold = checked.threshold.resolve(mean, meta.critical_density);
    if (!opt.mean_from.empty()) ctx.manifest().parameter("mean_density_used", mean, meta.density_units);
  });
  if (!opt.mean_from.empty()) ctx.add_input(opt.mean_from, {"grid"});
  const grid::GridGeometry& g = meta.geometry;
  core::log::info("{}: {}x{}x{} grid, threshold {} = {:.6g} {} ({:.4g} x mean)", opt.grid, g.shape[0], g.shape[1],
                  g.shape[2], params.threshold_text, params.threshold, meta.density_units,
                  meta.mean_density > 0 ? params.threshold / meta.mean_density : 0.0);
  ctx.phase("read");
  mesh::Field field = tool::read_field(*file, meta, params.threshold, comm);
  file.reset();
  const std::uint64_t my_cells = mesh::local_cells(field);
  const std::string cell = mesh::cell_word(field);
  const watershed::Segmented segmented =
      watershed::segment_field(meta, std::move(field), params, comm, [&](const std::string& p) { ctx.phase(p); });
  const model::Patches& patches = segmented.patches;
  ctx.log_memory_per(my_cells, cell);
  ctx.log_memory_per(patches.cells.size(), "test " + cell);
  const int rounds = segmented.label_rounds;

  warn_if_empty(patches.meta.n_test_cells, segmented.densest, meta, params, checked.threshold);
  if (patches.meta.n_test_cells > 0) check_grid_rule(patches, meta, params.threshold, comm);

  ctx.phase("write");
  ctx.manifest().parameter("threshold_used", params.threshold, meta.density_units);
  ctx.manifest().parameter("neighbourhood", 26);
  const SegmentSummary summary{patches.meta.n_test_cells, comm.sum<std::uint64_t>(patches.peaks.size()),
                               comm.sum<std::uint64_t>(patches.saddles.size()), rounds};
  ctx.summary(kSummary, summary);
  ctx.write_output([&](io::File& f) { io::write_patches(f, patches, comm); });
}

}  // namespace phew::tools
