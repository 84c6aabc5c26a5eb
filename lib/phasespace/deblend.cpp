#include <phew/phasespace/deblend.hpp>

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/core/progress.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/mpi/lookup.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/slab.hpp>
#include <phew/mpi/sort.hpp>
#include <phew/phasespace/velocity_split.hpp>

#include <algorithm>
#include <cmath>

namespace phew::phasespace {
namespace {

// A member particle on its way to the rank that deblends its patch.
struct Member {
  std::int64_t clump;  // on the way to the cell's owner: the particle's point (mesh::CellSpace::point)
  std::int64_t cell;   // the test cell it lies in (a global index: grid cell or leaf key)
  std::uint64_t id;
  double x[3], v[3], m;
};

// Every particle in a patch, with its clump: each particle goes to the owner of its cell (its run of
// cells, `cuts`), which knows the cell's label.
std::vector<Member> members_of_patches(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts,
                                       const particles::ParticleSet& ps, const grid::CellLabels& clumps, const mpi::Comm& comm) {
  std::vector<Member> out;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const std::int64_t point = space.point(&ps.position[3 * i]);
    if (point < 0) continue;
    Member m{point, 0, ps.id[i], {}, {}, ps.mass[i]};
    for (std::size_t d = 0; d < 3; ++d) {
      m.x[d] = ps.position[3 * i + d];
      m.v[d] = ps.velocity[3 * i + d];
    }
    out.push_back(m);
  }
  std::vector<Member> at_cells = mpi::route(comm, out, [&](const Member& p) { return mesh::CellSpace::owner(cuts, p.clump); });
  std::vector<Member> members;
  for (Member& p : at_cells) {
    const std::size_t k = space.find(clumps.cell, p.clump);
    if (k == clumps.size() || clumps.label[k] <= 0) continue;
    p.cell = clumps.cell[k];
    p.clump = clumps.label[k];
    members.push_back(p);
  }
  return members;
}

// Sends each patch's members to the rank that deblends it: patches go to ranks in contiguous runs of
// clump IDs with about equal particle counts. Returns them sorted by (clump, particle ID).
std::vector<Member> balance_patches(std::vector<Member> members, std::int64_t n_clump_peaks, const mpi::Comm& comm) {
  const mpi::SlabDecomposition id_blocks(std::max<std::int64_t>(n_clump_peaks, 1), comm.size());
  auto id_owner = [&](std::int64_t id) { return id_blocks.owner(id - 1); };
  std::map<std::int64_t, std::int64_t> count_here;
  for (const Member& p : members) ++count_here[p.clump];
  struct IdCount {
    std::int64_t id, n;
  };
  std::vector<IdCount> pairs;
  for (const auto& [id, n] : count_here) pairs.push_back({id, n});
  std::map<std::int64_t, std::int64_t> counts;  // clump -> particles, for clumps owned here
  for (const IdCount& p : mpi::route(comm, pairs, [&](const IdCount& q) { return id_owner(q.id); })) counts[p.id] += p.n;
  std::int64_t mine_total = 0;
  for (const auto& [id, n] : counts) mine_total += n;
  const mpi::RankSum scan = mpi::exclusive_scan(comm, static_cast<std::uint64_t>(mine_total));
  auto before = static_cast<std::int64_t>(scan.before);
  const auto total = static_cast<std::int64_t>(scan.total);
  std::map<std::int64_t, int> dest_of;
  for (const auto& [id, n] : counts) {
    dest_of[id] = total ? static_cast<int>(std::min<std::int64_t>(comm.size() - 1, before * comm.size() / total)) : 0;
    before += n;
  }
  std::vector<std::int64_t> clump_ids;
  for (const Member& p : members) clump_ids.push_back(p.clump);
  const auto dest = mpi::lookup<std::int64_t, int>(comm, clump_ids, id_owner, [&](std::int64_t id) {
    const auto d = dest_of.find(id);
    if (d == dest_of.end()) throw core::Error::internal("clump {} has no particle count at its owner, rank {}", id, comm.rank());
    return d->second;
  });
  for (std::size_t i = 0; i < members.size(); ++i) members[i].clump = members[i].clump * comm.size() + dest[i];  // carry dest
  members = mpi::route(comm, members, [&](const Member& p) { return static_cast<int>(p.clump % comm.size()); });
  for (Member& p : members) p.clump /= comm.size();
  std::sort(members.begin(), members.end(), [](const Member& p, const Member& q) {
    return p.clump != q.clump ? p.clump < q.clump : p.id < q.id;
  });
  return members;
}

// One velocity peak k of a patch: sums over its particles in particle-ID order.
model::PeakRow peak_row(std::span<const Member> patch, const VelocitySplit& split, int k, const std::array<double, 3>& x_peak,
                     const mesh::CellSpace& space) {
  const grid::GridGeometry& geo = space.grid();
  model::PeakRow row;
  row.parent_clump = patch.front().clump;
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
VelocitySplit split_patch(std::span<const Member> patch, const std::array<double, 3>& x_peak, const grid::GridGeometry& geo,
                          const DeblendParams& params) {
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

Deblended deblend_patches(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts, const particles::ParticleSet& particles,
                          const grid::CellLabels& clumps, std::int64_t n_clump_peaks, const ClumpPeakSource& catalogue,
                          const DeblendParams& params, const mpi::Comm& comm, const core::PhaseReport& phase) {
  const grid::GridGeometry& geo = space.grid();
  core::enter(phase, "members");
  std::vector<Member> members = balance_patches(members_of_patches(space, cuts, particles, clumps, comm), n_clump_peaks, comm);
  // The clumps' peak positions (R_max is measured from the peak), from the catalogue rows of the clumps here.
  std::vector<std::int64_t> here;
  for (const Member& p : members)
    if (here.empty() || here.back() != p.clump) here.push_back(p.clump);
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
  core::Progress progress("deblend", "particles in patches", members.size(), comm.size());
  for (std::size_t b = 0, e = 0; b < members.size(); progress.update(b = e)) {  // skipped patches count too
    while (e < members.size() && members[e].clump == members[b].clump) ++e;
    const std::int64_t clump = members[b].clump;
    const auto pp = peak_pos.find(clump);
    if (pp == peak_pos.end()) {  // not in the catalogue (e.g. below phew-merge's --mass-threshold)
      ++skipped;
      continue;
    }
    const std::span<const Member> patch(members.data() + b, e - b);
    const VelocitySplit split = split_patch(patch, pp->second, geo, params);
    if (split.n_peaks > 1) {
      ++split_patches;
      split_runs.push_back({clump, out.particles.size(), out.particles.size() + patch.size()});
    }
    for (int k = 0; k < split.n_peaks; ++k) (k == 0 ? primaries : extras).push_back(peak_row(patch, split, k, pp->second, space));
    // Placeholders -k for the k-th extra peak until the new IDs are known.
    for (std::size_t i = 0; i < patch.size(); ++i)
      out.particles.push_back({patch[i].id, split.peak[i] == 0 ? clump : -static_cast<std::int64_t>(split.peak[i])});
  }
  progress.finish();
  members = {};

  // New peaks get IDs above every peak ID, numbered by (clump ID, velocity peak): a scan over ranks,
  // which hold runs of clump IDs in rank order. The particles' placeholders follow their clump's extras.
  const auto n_extras = static_cast<std::int64_t>(extras.size());
  std::int64_t next = n_clump_peaks + 1 + static_cast<std::int64_t>(mpi::exclusive_scan(comm, static_cast<std::uint64_t>(n_extras)).before);
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
          throw core::Error::internal("deblend: clump {} has no velocity peak {} for its particle {}", clump, k, out.particles[i].id);
        out.particles[i].peak = id->second;
      }
  out.n_split = comm.sum<std::int64_t>(split_patches);
  out.n_new = comm.sum<std::int64_t>(n_extras);
  out.n_skipped = comm.sum<std::int64_t>(skipped);
  core::log::info("{} patches deblended: {} split, {} new peaks from velocity space ({} patches not in the catalogue)",
            core::log::thousands(comm.sum<std::int64_t>(static_cast<std::int64_t>(primaries.size()))), core::log::thousands(out.n_split),
            core::log::thousands(out.n_new), core::log::thousands(out.n_skipped));

  out.peaks = std::move(primaries);
  out.peaks.insert(out.peaks.end(), extras.begin(), extras.end());
  out.peaks = mpi::sort(comm, std::move(out.peaks), [](const model::PeakRow& p, const model::PeakRow& q) { return p.id < q.id; });
  out.particles = mpi::sort(comm, std::move(out.particles), [](const model::PeakMember& p, const model::PeakMember& q) {
    return p.id != q.id ? p.id < q.id : p.peak < q.peak;
  });
  out.n_peaks = comm.sum<std::int64_t>(static_cast<std::int64_t>(out.peaks.size()));
  out.n_particles = comm.sum<std::int64_t>(static_cast<std::int64_t>(out.particles.size()));
  return out;
}

}  // namespace phew::phasespace
