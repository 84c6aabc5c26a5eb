#include <phew/phasespace/velocity_split.hpp>

#include <phew/grid/deposit.hpp>
#include <phew/watershed/merge.hpp>
#include <phew/watershed/saddles.hpp>
#include <phew/mesh/block_mesh.hpp>
#include <phew/watershed/watershed.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace phew::phasespace {

VelocitySplit split_velocities(const std::vector<double>& velocity, const std::vector<double>& mass,
                               const VelocitySplitParams& p) {
  VelocitySplit out;
  const std::size_t n = mass.size();
  out.peak.assign(n, 0);
  out.bin = p.bin;
  if (n < 2 || !(p.bin > 0)) return out;

  // The histogram covers the range the velocities span, one bin beyond each side so that the cloud
  // kernel stays inside; wider ranges get wider bins so the histogram stays bounded.
  std::array<double, 3> lo{}, hi{};
  for (std::size_t d = 0; d < 3; ++d) {
    lo[d] = hi[d] = velocity[d];
    for (std::size_t i = 0; i < n; ++i) {
      lo[d] = std::min(lo[d], velocity[3 * i + d]);
      hi[d] = std::max(hi[d], velocity[3 * i + d]);
    }
  }
  double bin = p.bin;
  for (std::size_t d = 0; d < 3; ++d) bin = std::max(bin, (hi[d] - lo[d]) / static_cast<double>(p.max_bins - 2));
  out.bin = bin;
  grid::GridGeometry g;
  g.periodic = false;
  for (std::size_t d = 0; d < 3; ++d) {
    g.shape[d] = static_cast<std::int64_t>(std::floor((hi[d] - lo[d]) / bin)) + 3;
    g.origin[d] = lo[d] - bin;
    g.extent[d] = static_cast<double>(g.shape[d]) * bin;
  }
  out.bins = g.shape;

  // Mass in velocity space with the cloud-in-cell kernel: smoother than counting, and the same code
  // as the density grid.
  const mpi::Comm self = mpi::Comm::self();
  const mpi::BlockDecomposition one(g.shape, 1);
  grid::DepositResult hist = deposit(g, grid::Assignment::cic, one, velocity, mass, self);
  const mesh::BlockMesh mesh(g, one, std::move(hist.mass), self);

  // Watershed over the occupied bins, then relevance merging of the velocity peaks.
  const watershed::Segmentation seg = watershed::segment(mesh, 0.0, self);
  const std::vector<watershed::Saddle> saddles = watershed::find_saddles(mesh, seg, self);
  const auto npeaks = static_cast<std::int64_t>(seg.n_peaks);  // one rank: it owns them all
  if (npeaks <= 1) return out;
  watershed::PeakGraph graph(npeaks, self);
  for (std::int64_t i = 0; i < npeaks; ++i)
    graph.density[static_cast<std::size_t>(i)] = seg.own_peaks[static_cast<std::size_t>(i)].density;
  for (const watershed::Saddle& s : saddles) {
    graph.edges.push_back({s.peak_a, s.peak_b, s.density});
    graph.edges.push_back({s.peak_b, s.peak_a, s.density});
  }
  graph.normalise_edges();
  const watershed::MergeOutcome merged =
      merge_levels(graph, {watershed::Criterion::Kind::relevance, p.relevance, 0.0, false}, self);
  std::vector<std::int64_t> into(static_cast<std::size_t>(npeaks), 0);
  for (const watershed::Merger& m : merged.mergers) into[static_cast<std::size_t>(m.node - 1)] = m.into;
  const std::vector<std::int64_t> root = resolve_roots(graph, into, self);

  // Each particle takes the velocity peak of the bin it lies in.
  std::vector<std::int64_t> of_particle(n, 0);
  std::map<std::int64_t, std::pair<double, std::int64_t>> mass_count;  // root -> (mass, particles)
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t c[3];
    for (std::size_t d = 0; d < 3; ++d)
      c[d] = std::clamp(static_cast<std::int64_t>(std::floor((velocity[3 * i + d] - g.origin[d]) / bin)),
                        std::int64_t{0}, g.shape[d] - 1);
    const auto s = static_cast<std::size_t>(g.linear({c[0], c[1], c[2]}));  // one block: local slot = linear index
    const std::int64_t label = seg.label_of(s);
    of_particle[i] = label > 0 ? root[static_cast<std::size_t>(label - 1)] : 0;
    auto& mc = mass_count[of_particle[i]];
    mc.first += mass[i];
    mc.second += 1;
  }
  // The primary is the most massive peak (ties: the denser one, i.e. the lower ID); peaks with too few
  // particles are not trusted and join it; the rest are numbered by their ID (histogram peak density).
  std::int64_t primary = 0;
  double best = -1;
  for (const auto& [r, mc] : mass_count)
    if (r > 0 && mc.first > best) {
      best = mc.first;
      primary = r;
    }
  std::map<std::int64_t, int> number;
  number[primary] = 0;
  for (const auto& [r, mc] : mass_count)
    if (r > 0 && r != primary && mc.second >= p.min_particles) number[r] = static_cast<int>(number.size());
  for (std::size_t i = 0; i < n; ++i) {
    auto it = number.find(of_particle[i]);
    out.peak[i] = it == number.end() ? 0 : it->second;
  }
  out.n_peaks = static_cast<int>(number.size());
  return out;
}

}  // namespace phew::phasespace
