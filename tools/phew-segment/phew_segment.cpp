#include "phew_segment.hpp"

#include "core/log.hpp"
#include "core/memory.hpp"
#include "io/grid_file.hpp"
#include "io/patches_file.hpp"
#include "mpi/agree.hpp"
#include "watershed/patches.hpp"

namespace phew {
namespace {

// Peaks with fewer particles than this are mostly Poisson noise of the particle sampling.
constexpr double kNoisePeakParticles = 10;

// When most peaks hold a handful of particles, the grid is too fine for the particles: say so, with the
// grid rule's choice (docs/tutorial.md, "Choosing the grid"). Collective.
void warn_if_noise(const io::Patches& patches, const GridMeta& meta, double threshold, const mpi::Comm& comm) {
  const double mp = meta.particle_mass > 0 ? meta.particle_mass
                                           : meta.total_mass / static_cast<double>(std::max<std::uint64_t>(meta.n_particles, 1));
  std::uint64_t few = 0;
  for (const io::PatchPeak& p : patches.peaks) few += p.mass < kNoisePeakParticles * mp;
  few = comm.sum(few);
  const std::uint64_t all = comm.sum<std::uint64_t>(patches.peaks.size());
  if (all < 10 || 2 * few <= all || !(mp > 0) || !(meta.mean_density > 0)) return;
  log::warn("{} of {} peaks ({:.0f}%) hold fewer than {:g} particles: most are Poisson noise, the grid is too fine for "
            "the particles; the grid rule gives {} cells per side for this threshold (docs/tutorial.md, \"Choosing the "
            "grid\")",
            log::thousands(static_cast<long long>(few)), log::thousands(static_cast<long long>(all)),
            100.0 * static_cast<double>(few) / static_cast<double>(all), kNoisePeakParticles,
            suggested_grid_cells(meta.n_particles, threshold / meta.mean_density));
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
}

SegmentChecked check_segment_options(const SegmentOptions& opt) {
  return {DensityThreshold::parse(opt.threshold), opt.refine_positions};
}

void run_phew_segment(const SegmentOptions& opt, Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  const SegmentChecked checked = check_segment_options(opt);

  ctx.phase("open");
  mpi::agree(comm, [&] {
    if (comm.root()) ctx.manifest().add_input(manifest::check_phew_input(opt.grid, {"grid"}));
  });
  std::optional<io::File> file;
  GridMeta meta;
  SegmentParams params{0, checked.threshold.to_string(), checked.refine_positions};
  mpi::agree(comm, [&] {
    file.emplace(io::File::open_read(opt.grid));
    meta = io::read_grid_meta(*file);
    const double mean = opt.mean_from.empty() ? meta.mean_density : io::reference_mean_density(opt.mean_from, meta);
    params.threshold = checked.threshold.resolve(mean, meta.critical_density);
    if (!opt.mean_from.empty() && comm.root()) {
      ctx.manifest().add_input(manifest::check_phew_input(opt.mean_from, {"grid"}));
      ctx.manifest().parameter("mean_density_used", mean, meta.density_units);
    }
  });
  const GridGeometry& g = meta.geometry;
  log::info("{}: {}x{}x{} grid, threshold {} = {:.6g} {} ({:.4g} x mean)", opt.grid, g.shape[0], g.shape[1], g.shape[2],
            params.threshold_text, params.threshold, meta.density_units,
            meta.mean_density > 0 ? params.threshold / meta.mean_density : 0.0);
  const mpi::SlabDecomposition slabs(g.shape[0], comm.size());
  // The density (8 B/cell) and the test-cell bitmap; test cells cost 40 B each at the peak (sorting, labels
  // and the output rows), assumed here for up to a tenth of the cells.
  const double need = static_cast<double>(slabs.planes(comm.rank()) + 2) * static_cast<double>(g.plane_cells()) * 12.5;
  mpi::agree(comm, [&] {
    check_memory(need * mpi::ranks_on_node(comm), available_memory_bytes(),
                 fmt::format("segmenting a {}x{}x{} grid", g.shape[0], g.shape[1], g.shape[2]));
  });

  ctx.phase("read");
  std::vector<double> density;
  mpi::agree(comm, [&] {
    density = io::read_grid_slab_with_ghosts(*file, g, slabs.begin(comm.rank()), slabs.end(comm.rank()));
  });
  file.reset();

  int rounds = 0;
  const io::Patches patches = segment_patches(meta, slabs, std::move(density), params, comm,
                                              [&](const std::string& p) { ctx.phase(p); }, &rounds);

  warn_if_noise(patches, meta, params.threshold, comm);

  ctx.phase("write");
  io::AtomicOutput out(ctx.output(), comm);
  io::File f = io::File::create(out.temp_path(), comm);
  io::write_patches(f, patches, slabs, comm);
  auto& m = ctx.manifest();
  m.parameter("threshold_used", params.threshold, meta.density_units);
  m.parameter("neighbourhood", 26);
  m.summary("n_test_cells", patches.meta.n_test_cells);
  m.summary("n_peaks", comm.sum<std::uint64_t>(patches.peaks.size()));
  m.summary("n_saddles", comm.sum<std::uint64_t>(patches.saddles.size()));
  m.summary("label_rounds", rounds);  // depends on the decomposition: provenance, not data (DESIGN rule 1)
  ctx.finish_output(f, out);
}

}  // namespace phew
