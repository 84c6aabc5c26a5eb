// The particles of labelled test cells, gathered per group on one rank: how deblend finds the particles
// of a patch and unbind those of a halo. A particle belongs to the test cell holding its point
// (mesh::CellSpace: a uniform grid's cell, or an adaptive mesh's leaf), and so to that cell's label.
#pragma once

#include <phew/grid/cell_labels.hpp>
#include <phew/mesh/cell_space.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/particle_set.hpp>
#include <phew/particles/snapshot.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace phew::particles {

// A particle of a labelled test cell, in 88 bytes: the group is 32 bits so that the type fits beside it
// (groups are counted below 2^31).
struct CellMember {
  std::int64_t label;  // the label of its test cell (> 0)
  std::int32_t group;  // what gather_groups sends together: the label, unless the caller sets another
  std::uint8_t type;   // the particle's type (ParticleSet::type; 0 when the share was read without types)
  std::int64_t cell;   // the test cell it lies in (a global index: grid cell or leaf key)
  std::uint64_t id;
  double x[3], v[3], m;
};
static_assert(sizeof(CellMember) == 88, "a member's bytes are unbind's memory per particle");

// A label as a member's group: Error(input) beyond the 2^31 - 1 groups a member can name.
std::int32_t group_of_label(std::int64_t label);

// Every particle of `ps` (this rank's share: ids, velocities, masses, and types when `ps` holds them)
// that lies in a test cell with a label > 0; `labels` are the test cells of this rank's run of cells
// (`cuts`, from space.rank_cuts). Each particle is sent to the owner of its cell, which knows the label, 32,768 particles of each rank at a
// time (no rank holds a copy of its whole share); the members come back in no particular order, on the
// cell's owner, with group = label, in a vector of their exact size (the rank holds them once: no copy
// left behind by growing). The searches run on `threads`; the result does not depend on them.
// Collective.
std::vector<CellMember> members_of_cells(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts,
                                         const ParticleSet& ps, const grid::CellLabels& labels, int threads,
                                         const mpi::Comm& comm);
// The same, reading this rank's share (read_share's: ids, velocities, masses and types of `types`) a
// chunk at a time, so the share is never whole: the same members, in the same order. Collective.
std::vector<CellMember> members_of_cells(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts,
                                         const SnapshotReader& reader, const std::vector<int>& types,
                                         const grid::CellLabels& labels, int threads, const mpi::Comm& comm);

// The particles of `ps` (this rank's share) named by (id, label) rows, which any rank may hold (deblend's
// peaks.h5 lists every patch particle with its peak): each particle and each row go to the rank
// id % ranks, where they meet. Returns the members (group = label, cell = 0), in no particular order.
// Error(input) on every rank, naming `source` (the file of the rows), when a listed particle is not in
// the snapshot or is listed twice. Collective.
std::vector<CellMember> members_by_id(const ParticleSet& ps, std::span<const std::uint64_t> ids,
                                      std::span<const std::int64_t> labels, const std::string& source,
                                      const mpi::Comm& comm);

// Sends the members of each group (1..n_groups) to one rank: groups go to ranks in contiguous runs of
// group IDs with about equal particle counts, so the result does not depend on where the members were.
// Returns this rank's members sorted by (group, particle ID), the groups' runs sorted on `threads`.
// Collective.
std::vector<CellMember> gather_groups(std::vector<CellMember> members, std::int64_t n_groups, int threads,
                                      const mpi::Comm& comm);

}  // namespace phew::particles
