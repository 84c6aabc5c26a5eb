#include <phew/phasespace/deblend.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/log.hpp>
#include <phew/core/progress.hpp>
#include <phew/core/threads.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/mpi/lookup.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/slab.hpp>
#include <phew/mpi/sort.hpp>
#include <phew/particles/cell_members.hpp>
#include <phew/phasespace/velocity_split.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>

namespace phew::phasespace {
namespace {

// A particle of a patch: `label` is its level-0 clump (particles/cell_members.hpp).
using Member = particles::CellMember;

// One velocity peak k of a patch: sums over its particles in particle-ID order.
model::PeakRow peak_row(std::span<const Member> patch, const VelocitySplit& split, int k,
                        const std::array<double, 3>& x_peak, const mesh::CellSpace& space) {
  const grid::GridGeometry& geo = space.grid();
  model::PeakRow row;
  row.parent_clump = patch.front().label;
  row.from_deblending = k > 0;
  double dx[3] = {0, 0, 0};
  std::map<std::int64_t, std::int64_t> cells;
  for (std::size_t i = 0; i < patch.size(); ++i) {
    if (split.peak[i] != k) continue;
    const Member& p = patch[i];
    row.n_particles += 1;
    row.mass += p.m;
    for (std::size_t d = 0; d < 3; ++d) {
      dx[d] += p.m * grid::minimum_image(p.x[d] - x_peak[d], geo.extent[d], geo.periodic);
      row.velocity[d] += p.m * p.v[d];
    }
    ++cells[p.cell];
  }
  std::int64_t best_cell = 0, best_n = -1;
  for (const auto& [c, cnt] : cells)
    if (cnt > best_n) {
      best_n = cnt;
      best_cell = c;
    }
  row.densest_cell_position = space.centre(best_cell);
  for (std::size_t d = 0; d < 3; ++d) {
    row.position[d] = wrap_into(geo.box(), x_peak[d] + (row.mass > 0 ? dx[d] / row.mass : 0), d);
    row.velocity[d] = row.mass > 0 ? row.velocity[d] / row.mass : 0;
  }
  return row;
}

// The velocity split of one patch: M_p, R_max from the clump's peak and v_e = sqrt(2 G M_p / R_max) in
// physical units give the bin size.
VelocitySplit split_patch(std::span<const Member> patch, const std::array<double, 3>& x_peak,
                          const grid::GridGeometry& geo, const DeblendParams& params) {
  const double a = params.scale_factor;
  double mass = 0, r_max = 0;
  std::vector<double> vel, m;
  for (const Member& p : patch) {
    mass += p.m;
    double r2 = 0;
    for (std::size_t d = 0; d < 3; ++d) {
      const double dx = a * grid::minimum_image(p.x[d] - x_peak[d], geo.extent[d], geo.periodic);
      r2 += dx * dx;
      vel.push_back(p.v[d]);  // peculiar velocities: physical already
    }
    r_max = std::max(r_max, std::sqrt(r2));
    m.push_back(p.m);
  }
  VelocitySplit split;
  split.peak.assign(patch.size(), 0);
  if (params.split && static_cast<std::int64_t>(patch.size()) >= params.min_particles && r_max > 0) {
    VelocitySplitParams vp;
    vp.relevance = params.velocity_relevance;
    vp.min_particles = params.min_particles;
    vp.bin = params.bin_fraction * std::sqrt(2 * params.G * mass / r_max);
    split = split_velocities(vel, m, vp);
  }
  return split;
}

}  // namespace

Deblended deblend_patches(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts,
                          const particles::ParticleSet& particles, const grid::CellLabels& clumps,
                          std::int64_t n_clump_peaks, const ClumpPeakSource& catalogue, const DeblendParams& params,
                          const mpi::Comm& comm, const core::PhaseReport& phase) {
  const grid::GridGeometry& geo = space.grid();
  core::enter(phase, "members");
  // Each patch's particles on one rank: patches in contiguous runs of clump IDs with about equal particle
  // counts, sorted by (clump, particle ID).
  std::vector<Member> members =
      particles::gather_groups(particles::members_of_cells(space, cuts, particles, clumps, params.threads, comm),
                               n_clump_peaks, params.threads, comm);
  // The clumps' peak positions (R_max is measured from the peak), from the catalogue rows of the clumps here.
  std::vector<std::int64_t> here;
  for (const Member& p : members)
    if (here.empty() || here.back() != p.label) here.push_back(p.label);
  std::map<std::int64_t, std::array<double, 3>> peak_pos;
  mpi::agree(comm, [&] { peak_pos = catalogue.peak_positions(here); });

  core::enter(phase, "deblend");
  Deblended out;
  std::vector<model::PeakRow> primaries, extras;
  std::int64_t split_patches = 0, skipped = 0;
  struct Run {
    std::int64_t clump;
    std::size_t begin, end;  // its rows of out.particles
  };
  std::vector<Run> split_runs;  // the patches that were split
  // The patches (runs of one clump) and their velocity splits, on threads: each split is the patch's own
  // (the velocity watershed runs on mpi::Comm::self(), no MPI call), kept in its slot, used in order.
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  for (std::size_t b = 0, e = 0; b < members.size(); b = e) {
    while (e < members.size() && members[e].label == members[b].label) ++e;
    runs.emplace_back(b, e);
  }
  std::vector<VelocitySplit> splits(runs.size());
  core::Progress progress("deblend", "particles in patches", members.size(), comm.size());
  std::atomic<std::size_t> particles_done{0};
  core::parallel_for(params.threads, runs.size(), 1, [&](std::size_t r0, std::size_t r1, int thread) {
    for (std::size_t r = r0; r < r1; ++r) {
      const auto [b, e] = runs[r];
      const auto pp = peak_pos.find(members[b].label);
      if (pp != peak_pos.end())
        splits[r] = split_patch(std::span<const Member>(members.data() + b, e - b), pp->second, geo, params);
      const std::size_t done = particles_done += e - b;
      if (thread == 0) progress.update(done);  // one thread reports: Progress is not shared
    }
  });
  progress.finish();
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const auto [b, e] = runs[r];
    const std::int64_t clump = members[b].label;
    const auto pp = peak_pos.find(clump);
    if (pp == peak_pos.end()) {  // not in the catalogue (e.g. below phew-merge's --mass-threshold)
      ++skipped;
      continue;
    }
    const std::span<const Member> patch(members.data() + b, e - b);
    const VelocitySplit split = std::move(splits[r]);
    if (split.n_peaks > 1) {
      ++split_patches;
      split_runs.push_back({clump, out.particles.size(), out.particles.size() + patch.size()});
    }
    for (int k = 0; k < split.n_peaks; ++k)
      (k == 0 ? primaries : extras).push_back(peak_row(patch, split, k, pp->second, space));
    // Placeholders -k for the k-th extra peak until the new IDs are known.
    for (std::size_t i = 0; i < patch.size(); ++i)
      out.particles.push_back({patch[i].id, split.peak[i] == 0 ? clump : -static_cast<std::int64_t>(split.peak[i])});
  }
  core::release(members);

  // New peaks get IDs above every peak ID, numbered by (clump ID, velocity peak): a scan over ranks,
  // which hold runs of clump IDs in rank order. The particles' placeholders follow their clump's extras.
  const auto n_extras = static_cast<std::int64_t>(extras.size());
  std::int64_t next = n_clump_peaks + 1 +
                      static_cast<std::int64_t>(mpi::exclusive_scan(comm, static_cast<std::uint64_t>(n_extras)).before);
  std::map<std::pair<std::int64_t, int>, std::int64_t> new_id;  // (clump, k) -> ID
  std::map<std::int64_t, int> k_of;
  for (model::PeakRow& row : extras) {
    const int k = ++k_of[row.parent_clump];
    row.id = next++;
    new_id[{row.parent_clump, k}] = row.id;
  }
  for (model::PeakRow& row : primaries) row.id = row.parent_clump;
  for (const auto& [clump, b, e] : split_runs)
    for (std::size_t i = b; i < e; ++i)
      if (out.particles[i].peak < 0) {
        const int k = static_cast<int>(-out.particles[i].peak);
        const auto id = new_id.find({clump, k});
        if (id == new_id.end())
          throw core::Error::internal("deblend: clump {} has no velocity peak {} for its particle {}", clump, k,
                                      out.particles[i].id);
        out.particles[i].peak = id->second;
      }
  out.n_split = comm.sum<std::int64_t>(split_patches);
  out.n_new = comm.sum<std::int64_t>(n_extras);
  out.n_skipped = comm.sum<std::int64_t>(skipped);
  core::log::info("{} patches deblended: {} split, {} new peaks from velocity space ({} patches not in the catalogue)",
                  core::log::thousands(comm.sum<std::int64_t>(static_cast<std::int64_t>(primaries.size()))),
                  core::log::thousands(out.n_split), core::log::thousands(out.n_new),
                  core::log::thousands(out.n_skipped));

  out.peaks = std::move(primaries);
  out.peaks.insert(out.peaks.end(), extras.begin(), extras.end());
  out.peaks = mpi::sort(comm, std::move(out.peaks),
                        [](const model::PeakRow& p, const model::PeakRow& q) { return p.id < q.id; });
  out.particles = mpi::sort(comm, std::move(out.particles), [](const model::PeakMember& p, const model::PeakMember& q) {
    return p.id != q.id ? p.id < q.id : p.peak < q.peak;
  });
  out.n_peaks = comm.sum<std::int64_t>(static_cast<std::int64_t>(out.peaks.size()));
  out.n_particles = comm.sum<std::int64_t>(static_cast<std::int64_t>(out.particles.size()));
  return out;
}

}  // namespace phew::phasespace
