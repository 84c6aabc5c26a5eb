#include <phew/particles/cell_members.hpp>

#include <phew/particles/snapshot.hpp>

#include <phew/core/error.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/mpi/lookup.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/slab.hpp>

#include <algorithm>
#include <map>

namespace phew::particles {

namespace {

// Particles of each rank routed to their cells' owners at a time.
constexpr std::size_t kMembersChunk = std::size_t{1} << 18;

// Sends particles [b, e) of `ps` to the owners of their cells and appends the members that arrive here.
// Collective.
void add_members(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts, const ParticleSet& ps, std::size_t b,
                 std::size_t e, const grid::CellLabels& labels, const mpi::Comm& comm, std::vector<CellMember>& members) {
  // On the way to the cell's owner, `label` carries the particle's point (mesh::CellSpace::point).
  std::vector<CellMember> out;
  for (std::size_t i = b; i < e; ++i) {
    const std::int64_t point = space.point(&ps.position[3 * i]);
    if (point < 0) continue;
    CellMember m{point, 0, 0, ps.id[i], {}, {}, ps.mass[i]};
    for (std::size_t d = 0; d < 3; ++d) {
      m.x[d] = ps.position[3 * i + d];
      m.v[d] = ps.velocity[3 * i + d];
    }
    out.push_back(m);
  }
  std::vector<CellMember> at_cells = mpi::route(comm, out, [&](const CellMember& p) { return mesh::CellSpace::owner(cuts, p.label); });
  for (CellMember& p : at_cells) {
    const std::size_t k = space.find(labels.cell, p.label);
    if (k == labels.size() || labels.label[k] <= 0) continue;
    p.cell = labels.cell[k];
    p.label = p.group = labels.label[k];
    members.push_back(p);
  }
}

}  // namespace

std::vector<CellMember> members_of_cells(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts,
                                         const ParticleSet& ps, const grid::CellLabels& labels, const mpi::Comm& comm) {
  // In chunks of the share, each routed and filtered before the next is made: a rank holds its share,
  // its members and a chunk's copies, not a copy of every particle (most are in no labelled cell).
  const std::uint64_t rounds = comm.max<std::uint64_t>((ps.size() + kMembersChunk - 1) / kMembersChunk);
  std::vector<CellMember> members;
  for (std::uint64_t round = 0; round < rounds; ++round)
    add_members(space, cuts, ps, std::min(ps.size(), round * kMembersChunk), std::min(ps.size(), (round + 1) * kMembersChunk),
                labels, comm, members);
  return members;
}

std::vector<CellMember> members_of_cells(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts,
                                         const SnapshotReader& reader, const std::vector<int>& types,
                                         const grid::CellLabels& labels, const mpi::Comm& comm) {
  // The chunks are read, not cut from a share read whole: the same rounds, so the same members in the
  // same order, without the share in memory.
  FieldSelection fields;
  fields.ids = fields.velocities = true;
  std::vector<CellMember> members;
  for_each_share_chunk(reader, types, fields, kMembersChunk, comm, [&](const ParticleSet& chunk) {
    add_members(space, cuts, chunk, 0, chunk.size(), labels, comm, members);
  });
  return members;
}

std::vector<CellMember> members_by_id(const ParticleSet& ps, std::span<const std::uint64_t> ids,
                                      std::span<const std::int64_t> labels, const std::string& source,
                                      const mpi::Comm& comm) {
  const auto ranks = static_cast<std::uint64_t>(comm.size());
  struct Listed {
    std::uint64_t id;
    std::int64_t label;
  };
  std::vector<Listed> listed(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) listed[i] = {ids[i], labels[i]};
  listed = mpi::route(comm, listed, [&](const Listed& l) { return static_cast<int>(l.id % ranks); });
  std::vector<CellMember> mine;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    CellMember m{0, 0, 0, ps.id[i], {}, {}, ps.mass[i]};
    for (std::size_t d = 0; d < 3; ++d) {
      m.x[d] = ps.position[3 * i + d];
      m.v[d] = ps.velocity[3 * i + d];
    }
    mine.push_back(m);
  }
  mine = mpi::route(comm, mine, [&](const CellMember& p) { return static_cast<int>(p.id % ranks); });
  auto by_id = [](const auto& a, const auto& b) { return a.id < b.id; };
  std::sort(listed.begin(), listed.end(), by_id);
  std::sort(mine.begin(), mine.end(), by_id);
  std::vector<CellMember> out;
  out.reserve(listed.size());
  mpi::agree(comm, [&] {
    std::size_t j = 0;
    for (std::size_t i = 0; i < listed.size(); ++i) {
      if (i > 0 && listed[i].id == listed[i - 1].id) throw core::Error::input("{}: particle {} is listed twice", source, listed[i].id);
      while (j < mine.size() && mine[j].id < listed[i].id) ++j;
      if (j == mine.size() || mine[j].id != listed[i].id)
        throw core::Error::input("{}: particle {} is not among the snapshot's selected particles (another snapshot, or other --types?)",
                                 source, listed[i].id);
      CellMember m = mine[j];
      m.label = m.group = listed[i].label;
      out.push_back(m);
    }
  });
  return out;
}

std::vector<CellMember> gather_groups(std::vector<CellMember> members, std::int64_t n_groups, const mpi::Comm& comm) {
  // The particle count of each group at the owner of its ID block, then a scan over the blocks: each
  // group's destination follows from the counts before it, whatever the decomposition.
  const mpi::SlabDecomposition id_blocks(std::max<std::int64_t>(n_groups, 1), comm.size());
  auto id_owner = [&](std::int64_t id) { return id_blocks.owner(id - 1); };
  std::map<std::int64_t, std::int64_t> count_here;
  for (const CellMember& p : members) ++count_here[p.group];
  struct IdCount {
    std::int64_t id, n;
  };
  std::vector<IdCount> pairs;
  for (const auto& [id, n] : count_here) pairs.push_back({id, n});
  std::map<std::int64_t, std::int64_t> counts;  // group -> particles, for groups owned here
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
  std::vector<std::int64_t> group_ids;
  for (const CellMember& p : members) group_ids.push_back(p.group);
  const auto dest = mpi::lookup<std::int64_t, int>(comm, group_ids, id_owner, [&](std::int64_t id) {
    const auto d = dest_of.find(id);
    if (d == dest_of.end()) throw core::Error::internal("group {} has no particle count at its owner, rank {}", id, comm.rank());
    return d->second;
  });
  for (std::size_t i = 0; i < members.size(); ++i) members[i].group = members[i].group * comm.size() + dest[i];  // carry dest
  std::vector<CellMember> out = mpi::route(comm, members, [&](const CellMember& p) { return static_cast<int>(p.group % comm.size()); });
  members = {};
  for (CellMember& p : out) p.group /= comm.size();
  std::sort(out.begin(), out.end(), [](const CellMember& p, const CellMember& q) {
    return p.group != q.group ? p.group < q.group : p.id < q.id;
  });
  return out;
}

}  // namespace phew::particles
