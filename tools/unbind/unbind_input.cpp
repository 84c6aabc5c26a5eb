#include "unbind_input.hpp"

#include <phew/core/error.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/io/patches_file.hpp>
#include <phew/io/peaks_file.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/tool/cells_input.hpp>
#include <phew/tool/snapshot_input.hpp>

#include <map>

namespace phew::tools {

UnbindInput read_unbind_input(const UnbindOptions& opt, const particles::SnapshotInfo& info, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  UnbindInput in;
  // The kind first: a wrong file is named as such, not by a missing dataset.
  in.from_peaks = ctx.add_input(opt.clumps, {"clumps", "peaks"}).kind == "peaks";
  std::optional<model::AmrRefinement> refinement;
  mpi::agree(comm, [&] {
    const io::File input = io::File::open_read(opt.clumps);
    if (!info.has_velocities) throw core::Error::input("{}: the snapshot has no velocities", opt.snapshot);
    in.types = chain_types(info, opt.types, manifest::grid_types_in_chain(opt.clumps), opt.allow_other_types);
    if (in.from_peaks) {
      // deblend's peaks: each its own object (a velocity peak has no saddle hierarchy).
      in.grid = io::read_peaks_header(input).grid;
      for (const model::PeakRow& p : io::read_peak_rows(input)) in.objects.push_back({p.id, p.id, p.id, p.position});
    } else {
      const io::ClumpsHeader header = io::read_clumps_header(input);
      in.grid = header.grid;
      refinement = header.refinement;
      for (const model::Clump& c : io::read_clumps(input))
        in.objects.push_back({c.id, c.parent, c.halo, c.peak_position});
    }
    check_snapshot_matches_grid(info, in.grid, opt.snapshot, opt.clumps);
  });
  ctx.add_inputs([&] { return manifest::snapshot_inputs_in_chain(opt.clumps, info.files); });
  in.space = tool::cell_space(in.grid, refinement);
  return in;
}

void add_key_saddles(const UnbindOptions& opt, UnbindInput& in, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  // The key saddles' cells are in the patches.h5 the clumps were made from (phew-merge's input).
  if (in.from_peaks) throw core::Error::usage("--saddle needs a clumps.h5 (deblend's peaks have no saddles)");
  manifest::RecordedInput recorded;
  mpi::agree(comm, [&] { recorded = manifest::recorded_input(opt.clumps, 0); });
  if (recorded.kind != "patches")
    throw core::Error::input("{}: its first input is a {}, not the patches.h5 --saddle needs", opt.clumps,
                             recorded.kind);
  if (ctx.add_input(recorded.path, {"patches"}).fingerprint != recorded.fingerprint)
    throw core::Error::input("{}: not the patches.h5 {} was made from (its fingerprint differs)", recorded.path,
                             opt.clumps);
  std::map<std::int64_t, double> radius;
  mpi::agree(comm, [&] {
    const io::File patches = io::File::open_read(recorded.path);
    const io::File clumps = io::File::open_read(opt.clumps);
    const auto saddles = io::read_saddles(patches, 0, io::read_patches_header(patches).n_saddles);
    radius = unbind::key_saddle_radii(saddles, io::read_merged_peaks(clumps), in.objects, in.space);
  });
  for (unbind::ObjectRow& o : in.objects)
    if (const auto r = radius.find(o.id); r != radius.end()) o.saddle_radius = r->second;
}

namespace {

// deblend's peaks: each rank reads a block of /particles (id, peak; each peak one of /peaks, checked by
// the reader) and meets the snapshot's particles by ID. The share read is released once its members are
// found: unbinding holds only the members.
std::vector<particles::CellMember> members_of_peaks(const UnbindOptions& opt, const UnbindInput& in,
                                                    particles::SnapshotReader& reader, tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  ctx.phase("read");
  particles::FieldSelection fields;
  fields.ids = fields.velocities = fields.types = true;
  particles::ParticleSet particles = read_share(reader, in.types, fields, comm);
  std::vector<std::uint64_t> ids;
  std::vector<std::int64_t> peaks;
  mpi::agree(comm, [&] {
    const io::File input = io::File::open_read(opt.clumps);
    const std::uint64_t n = io::read_peaks_header(input).n_particles;
    const auto r = static_cast<std::uint64_t>(comm.rank()), ranks = static_cast<std::uint64_t>(comm.size());
    for (const model::PeakMember& row :
         io::read_peak_members(input, n * r / ranks, n * (r + 1) / ranks - n * r / ranks)) {
      ids.push_back(row.id);
      peaks.push_back(row.peak);
    }
  });
  ctx.phase("members");
  return particles::members_by_id(particles, ids, peaks, opt.clumps, comm);
}

// clumps.h5: each rank takes a run of cells balanced by test cells (whole pencils, or whole coarse
// cells), as deblend does: a particle's clump is that of the test cell holding it. The snapshot is read
// a chunk at a time as its particles go to their cells: only members are kept.
std::vector<particles::CellMember> members_of_clumps(const UnbindOptions& opt, const UnbindInput& in,
                                                     particles::SnapshotReader& reader, int threads,
                                                     tool::Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  ctx.phase("read");
  tool::RankCells cells;
  mpi::agree(comm, [&] { cells = tool::read_rank_clump_cells(io::File::open_read(opt.clumps), in.space, comm); });
  ctx.phase("members");
  return particles::members_of_cells(in.space, cells.cuts, reader, in.types, cells.labels, threads, comm);
}

}  // namespace

std::vector<particles::CellMember> read_unbind_members(const UnbindOptions& opt, const UnbindInput& in,
                                                       particles::SnapshotReader& reader, int threads,
                                                       tool::Context& ctx) {
  return in.from_peaks ? members_of_peaks(opt, in, reader, ctx) : members_of_clumps(opt, in, reader, threads, ctx);
}

}  // namespace phew::tools
