#include "phew_segment.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/quantity.hpp"
#include "io/grid_file.hpp"
#include "io/patches_file.hpp"
#include "mpi/agree.hpp"
#include "mpi/ordered_sum.hpp"
#include "mpi/route.hpp"
#include "watershed/peak_position.hpp"
#include "watershed/saddles.hpp"
#include "watershed/slab_mesh.hpp"
#include "watershed/watershed.hpp"

#include <cmath>
#include <limits>

namespace phew {
namespace {

// This rank's planes with one ghost plane on each side, read straight from the file (wrapped when
// periodic, -inf outside a non-periodic grid). Checks every value: NaN, Inf and negative densities
// are refused.
std::vector<double> read_slab_with_ghosts(const io::File& f, const GridGeometry& g, std::int64_t x0, std::int64_t x1) {
  const auto plane = static_cast<std::size_t>(g.shape[1] * g.shape[2]);
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(x1 - x0 + 2) * plane);
  const std::int64_t nx = g.shape[0];
  auto append_plane = [&](std::int64_t i) {
    if (!g.periodic && (i < 0 || i >= nx)) {
      out.insert(out.end(), plane, -std::numeric_limits<double>::infinity());
      return;
    }
    const std::int64_t w = ((i % nx) + nx) % nx;
    const auto v = io::read_grid_planes(f, w, w + 1);
    out.insert(out.end(), v.begin(), v.end());
  };
  append_plane(x0 - 1);
  if (x1 > x0) {
    const auto v = io::read_grid_planes(f, x0, x1);
    out.insert(out.end(), v.begin(), v.end());
  }
  append_plane(x1);
  for (std::size_t s = plane; s < out.size() - plane; ++s) {
    const double v = out[s];
    if (!std::isfinite(v) || v < 0) {
      const auto c = static_cast<std::int64_t>(s - plane) + x0 * static_cast<std::int64_t>(plane);
      throw Error::input("{}: /grid/density has {} at cell {} (densities must be finite and >= 0)", f.path(), v, c);
    }
  }
  return out;
}

}  // namespace

void declare_segment_options(CLI::App& app, SegmentOptions& opt) {
  app.add_option("grid", opt.grid, "Density grid from cic-project (grid.h5)")->required();
  app.add_option("-t,--threshold", opt.threshold,
                 "Density threshold: absolute (1.5e-7, grid units), 80mean (x mean density) or 80crit (x critical)")
      ->required();
  app.add_flag("--refine-positions", opt.refine_positions,
               "Refine peak positions inside their cell by a quadratic fit of the 3x3x3 neighbourhood");
}

void run_phew_segment(const SegmentOptions& opt, Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  const DensityThreshold spec = DensityThreshold::parse(opt.threshold);

  ctx.phase("open");
  GridMeta meta;
  mpi::agree(comm, [&] {
    if (comm.root()) ctx.manifest().add_input(manifest::check_phew_input(opt.grid, {"grid"}));
  });
  std::optional<io::File> file;
  mpi::agree(comm, [&] {
    file.emplace(io::File::open_read(opt.grid));
    meta = io::read_grid_meta(*file);
  });
  const GridGeometry& g = meta.geometry;
  double threshold = 0;
  mpi::agree(comm, [&] { threshold = spec.resolve(meta.mean_density, meta.critical_density); });
  log::info("{}: {}x{}x{} grid, threshold {} = {:.6g} {} ({:.4g} x mean)", opt.grid, g.shape[0], g.shape[1],
            g.shape[2], spec.to_string(), threshold, meta.density_units,
            meta.mean_density > 0 ? threshold / meta.mean_density : 0.0);

  const mpi::SlabDecomposition slabs(g.shape[0], comm.size());
  const double planes = static_cast<double>(slabs.planes(comm.rank()) + 2);
  // density and label per cell, and up to 24 bytes per test cell while sorting
  const double need = planes * static_cast<double>(g.plane_cells()) * (8.0 + 8.0 + 24.0);
  mpi::agree(comm, [&] {
    check_memory(need * mpi::ranks_on_node(comm), available_memory_bytes(),
                 fmt::format("segmenting a {}x{}x{} grid", g.shape[0], g.shape[1], g.shape[2]));
  });

  ctx.phase("read");
  std::vector<double> density;
  mpi::agree(comm, [&] { density = read_slab_with_ghosts(*file, g, slabs.begin(comm.rank()), slabs.end(comm.rank())); });
  file.reset();
  const SlabMesh mesh(g, slabs, comm.rank(), std::move(density));

  ctx.phase("watershed");
  const Segmentation seg = segment(mesh, threshold, comm);
  log::info("{} test cells, {} peaks ({} label rounds)", log::thousands(static_cast<long long>(seg.test_cells)),
            log::thousands(static_cast<long long>(seg.peaks.size())), seg.rounds);
  if (seg.test_cells == 0) log::warn("no cell is above the threshold {}: the result is empty", spec.to_string());

  ctx.phase("saddles");
  const std::vector<Saddle> saddles = find_saddles(mesh, seg, comm);
  log::info("{} saddles", log::thousands(comm.sum<long long>(static_cast<long long>(saddles.size()))));

  ctx.phase("peaks");
  // Per-peak sums and rows live on the peak's owner (even blocks of IDs), so no rank holds them all.
  const auto npeaks = static_cast<std::int64_t>(seg.peaks.size());
  const mpi::SlabDecomposition owners(std::max<std::int64_t>(npeaks, 1), comm.size());
  auto owner = [&](std::int64_t id) { return owners.owner(id - 1); };
  const double volume = g.cell_volume();
  // Partial sums per (peak, plane), accumulated plane by plane through a dense index of the peaks seen
  // in the current plane.
  using Sums = mpi::OrderedSum<2>;  // cells, mass
  std::vector<Sums::Entry> partial;
  {
    std::vector<std::int32_t> at(static_cast<std::size_t>(npeaks) + 1, -1);
    const std::size_t plane = static_cast<std::size_t>(g.plane_cells());
    for (std::size_t b = mesh.first_local(); b < mesh.end_local(); b += plane) {
      const std::size_t first_entry = partial.size();
      for (std::size_t s = b; s < b + plane; ++s) {
        const std::int64_t l = seg.label[s];
        if (l <= 0) continue;
        std::int32_t& k = at[static_cast<std::size_t>(l)];
        if (k < 0) {
          k = static_cast<std::int32_t>(partial.size() - first_entry);
          partial.push_back({l, mesh.chunk(s), {0.0, 0.0}});
        }
        auto& v = partial[first_entry + static_cast<std::size_t>(k)].v;
        v[0] += 1.0;
        v[1] += mesh.density(s) * volume;
      }
      for (std::size_t e = first_entry; e < partial.size(); ++e) at[static_cast<std::size_t>(partial[e].key)] = -1;
    }
  }
  const auto totals = Sums::at_owners(comm, std::move(partial), owner);

  // Positions: cell centres, refined by the rank that holds the peak cell, sent to the peak's owner.
  struct Position {
    std::int64_t id;
    double x[3];
  };
  std::vector<Position> mine;
  const auto cell_size = g.cell_size();
  for (std::size_t s = mesh.first_local(); s < mesh.end_local(); ++s) {
    if (seg.label[s] <= 0) continue;
    const PeakCell& p = seg.peaks[static_cast<std::size_t>(seg.label[s] - 1)];
    if (p.cell != mesh.global_index(s)) continue;
    const auto c = mesh.cell(s);
    std::array<double, 3> offset{0, 0, 0};
    if (opt.refine_positions)
      if (const auto nb = mesh.neighbourhood(s)) offset = quadratic_peak_offset(*nb);
    Position pos{seg.label[s], {}};
    for (std::size_t d = 0; d < 3; ++d)
      pos.x[d] = g.origin[d] + (static_cast<double>(c[d]) + 0.5 + offset[d]) * cell_size[d];
    mine.push_back(pos);
  }
  std::vector<Position> positions = mpi::route(comm, mine, [&](const Position& p) { return owner(p.id); });
  std::sort(positions.begin(), positions.end(), [](const Position& a, const Position& b) { return a.id < b.id; });

  io::PeakTable peaks;
  const std::int64_t first = npeaks ? owners.begin(comm.rank()) + 1 : 1, last = npeaks ? owners.end(comm.rank()) : 0;
  for (std::int64_t id = first; id <= last; ++id) {
    const PeakCell& pk = seg.peaks[static_cast<std::size_t>(id - 1)];
    peaks.id.push_back(id);
    peaks.cell.push_back(pk.cell);
    peaks.density.push_back(pk.density);
    const auto found = totals.find(id);
    if (found == totals.end())
      throw Error::internal("peak {} (cell {}) has no cell sums at its owner, rank {}", id, pk.cell, comm.rank());
    const auto& t = found->second;
    peaks.n_cells.push_back(static_cast<std::int64_t>(t[0]));
    peaks.mass.push_back(t[1]);
    const Position& p = positions[static_cast<std::size_t>(id - first)];
    peaks.position.insert(peaks.position.end(), p.x, p.x + 3);
  }
  io::SaddleTable table;
  for (const Saddle& s : saddles) {
    table.peak_a.push_back(s.peak_a);
    table.peak_b.push_back(s.peak_b);
    table.density.push_back(s.density);
    table.cell_a.push_back(s.cell_a);
    table.cell_b.push_back(s.cell_b);
  }
  const auto n_saddles = comm.sum<std::uint64_t>(saddles.size());

  ctx.phase("write");
  io::AtomicOutput out(ctx.output(), comm);
  io::File f = io::File::create(out.temp_path(), comm);
  const std::span<const std::int64_t> local_labels(seg.label.data() + mesh.first_local(),
                                                   mesh.end_local() - mesh.first_local());
  io::write_patches(f, meta, slabs, local_labels, peaks, table,
                    {threshold, spec.to_string(), seg.test_cells, opt.refine_positions}, comm);

  auto& m = ctx.manifest();
  m.parameter("threshold_absolute", threshold, meta.density_units);
  m.parameter("neighbourhood", 26);
  m.summary("n_test_cells", seg.test_cells);
  m.summary("n_peaks", seg.peaks.size());
  m.summary("n_saddles", n_saddles);
  // Rounds depend on the decomposition, so they are provenance, not data (DESIGN.md rule 1).
  m.summary("label_rounds", seg.rounds);
  ctx.finish_output(f, out);
}

}  // namespace phew
