#include <phew/particles/cell_members.hpp>

#include <phew/particles/snapshot.hpp>

#include <phew/core/block_list.hpp>
#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/mpi/lookup.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/slab.hpp>
#include <phew/mesh/cell_finder.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

namespace phew::particles {

namespace {

// Particles of each rank routed to their cells' owners at a time: the chunk's copies on the way (three
// of 88 B per particle) stay small beside the members.
constexpr std::size_t kMembersChunk = std::size_t{1} << 15;
// Particles per task of the threaded searches.
constexpr std::size_t kSearchChunk = std::size_t{1} << 14;

// What add_members needs per chunk, kept from one chunk to the next so that no chunk allocates.
struct MemberScratch {
  std::vector<std::int64_t> point;
  std::vector<std::size_t> here, at_here;  // particles whose cells this rank owns, and where their cells are
  std::vector<CellMember> out, send, at_cells;
  std::vector<std::size_t> at;
};

// A rank's members as they are found, a chunk's at a time, in blocks of huge pages (core::BlockList:
// as pieces of 4 KiB pages, one per chunk, their page faults were 63 % of unbind's on the clustered 2.1 M
// box).
using MemberParts = core::BlockList<CellMember>;

// The members in one vector, each block let go once copied: the members are held once, plus one block.
std::vector<CellMember> join(MemberParts& parts) {
  std::vector<CellMember> members;
  parts.move_into(members);
  return members;
}

// Sends particles [b, e) of `ps` to the owners of their cells and adds the members that arrive here as
// a new piece. A particle whose cell this rank owns (at one rank, every one) is looked up where it is, and
// made a member only when its cell is labelled: 55 % of the clustered box's particles are in none, and
// each had been made an 88-byte member, copied and looked up. The searches (a particle's point, its
// test cell) run on threads, each result in its own slot; the members are then made in particle order
// (this rank's own first, then those that arrive), so the result does not depend on the threads.
// Collective.
void add_members(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts, const ParticleSet& ps,
                 std::size_t b, std::size_t e, const grid::CellLabels& labels, const mesh::CellFinder& finder,
                 int threads, const mpi::Comm& comm, MemberScratch& s, MemberParts& parts) {
  s.point.resize(e - b);
  core::parallel_for(threads, e - b, kSearchChunk, [&](std::size_t i0, std::size_t i1, int) {
    for (std::size_t i = i0; i < i1; ++i) s.point[i] = space.point(&ps.position[3 * (b + i)]);
  });
  const auto member = [&](std::size_t i, std::int64_t point) {
    CellMember m{point, 0, ps.type.empty() ? std::uint8_t{0} : ps.type[i], 0, ps.id[i], {}, {}, ps.mass[i]};
    for (std::size_t d = 0; d < 3; ++d) {
      m.x[d] = ps.position[3 * i + d];
      m.v[d] = ps.velocity[3 * i + d];
    }
    return m;
  };
  // On the way to the cell's owner, `label` carries the particle's point (mesh::CellSpace::point).
  const int me = comm.rank();
  s.here.clear();
  s.out.clear();
  for (std::size_t i = b; i < e; ++i) {
    const std::int64_t point = s.point[i - b];
    if (point < 0) continue;
    if (comm.size() == 1 || mesh::CellSpace::owner(cuts, point) == me)
      s.here.push_back(i);
    else
      s.out.push_back(member(i, point));
  }
  mpi::route_into(
      comm, std::span<const CellMember>(s.out),
      [&](const CellMember& p) { return mesh::CellSpace::owner(cuts, p.label); }, s.at_cells, s.send);
  s.at_here.resize(s.here.size());
  core::parallel_for(threads, s.here.size(), kSearchChunk, [&](std::size_t i0, std::size_t i1, int) {
    for (std::size_t k = i0; k < i1; ++k) s.at_here[k] = finder.find(s.point[s.here[k] - b]);
  });
  s.at.resize(s.at_cells.size());
  core::parallel_for(threads, s.at.size(), kSearchChunk, [&](std::size_t i0, std::size_t i1, int) {
    for (std::size_t i = i0; i < i1; ++i) s.at[i] = finder.find(s.at_cells[i].label);
  });
  const auto add = [&](CellMember p, std::size_t k) {
    p.cell = labels.cell[k];
    p.label = labels.label[k];
    p.group = group_of_label(p.label);
    parts.push_back(p);
  };
  for (std::size_t j = 0; j < s.here.size(); ++j) {
    const std::size_t k = s.at_here[j];
    if (k < labels.size() && labels.label[k] > 0) add(member(s.here[j], s.point[s.here[j] - b]), k);
  }
  for (std::size_t i = 0; i < s.at_cells.size(); ++i) {
    const std::size_t k = s.at[i];
    if (k < labels.size() && labels.label[k] > 0) add(s.at_cells[i], k);
  }
}

}  // namespace

std::vector<CellMember> members_of_cells(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts,
                                         const ParticleSet& ps, const grid::CellLabels& labels, int threads,
                                         const mpi::Comm& comm) {
  // In chunks of the share, each routed and filtered before the next is made: a rank holds its share,
  // its members and a chunk's copies, not a copy of every particle (most are in no labelled cell).
  const std::uint64_t rounds = comm.max<std::uint64_t>((ps.size() + kMembersChunk - 1) / kMembersChunk);
  MemberParts parts;
  const mesh::CellFinder finder(space, labels.cell);
  {
    MemberScratch scratch;  // let go before the pieces are joined
    for (std::uint64_t round = 0; round < rounds; ++round)
      add_members(space, cuts, ps, std::min(ps.size(), round * kMembersChunk),
                  std::min(ps.size(), (round + 1) * kMembersChunk), labels, finder, threads, comm, scratch, parts);
  }
  return join(parts);
}

std::vector<CellMember> members_of_cells(const mesh::CellSpace& space, const std::vector<std::int64_t>& cuts,
                                         const SnapshotReader& reader, const std::vector<int>& types,
                                         const grid::CellLabels& labels, int threads, const mpi::Comm& comm) {
  // The chunks are read, not cut from a share read whole: the same rounds, so the same members in the
  // same order, without the share in memory.
  FieldSelection fields;
  fields.ids = fields.velocities = fields.types = true;
  MemberParts parts;
  const mesh::CellFinder finder(space, labels.cell);
  {
    MemberScratch scratch;  // let go before the pieces are joined
    for_each_share_chunk(reader, types, fields, kMembersChunk, comm, [&](const ParticleSet& chunk) {
      add_members(space, cuts, chunk, 0, chunk.size(), labels, finder, threads, comm, scratch, parts);
    });
  }
  return join(parts);
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
    CellMember m{0, 0, ps.type.empty() ? std::uint8_t{0} : ps.type[i], 0, ps.id[i], {}, {}, ps.mass[i]};
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
      if (i > 0 && listed[i].id == listed[i - 1].id)
        throw core::Error::input("{}: particle {} is listed twice", source, listed[i].id);
      while (j < mine.size() && mine[j].id < listed[i].id) ++j;
      if (j == mine.size() || mine[j].id != listed[i].id)
        throw core::Error::input(
            "{}: particle {} is not among the snapshot's selected particles (another snapshot, or other --types?)",
            source, listed[i].id);
      CellMember m = mine[j];
      m.label = listed[i].label;
      m.group = group_of_label(m.label);
      out.push_back(m);
    }
  });
  return out;
}

std::int32_t group_of_label(std::int64_t label) {
  if (label > std::numeric_limits<std::int32_t>::max())
    throw core::Error::input("label {}: a catalogue of more than 2^31 - 1 clumps (a member's group is 32 bits)", label);
  return static_cast<std::int32_t>(label);
}

std::vector<CellMember> gather_groups(std::vector<CellMember> members, std::int64_t n_groups, int threads,
                                      const mpi::Comm& comm) {
  // The particle count of each group at the owner of its ID block, then a scan over the blocks: each
  // group's destination follows from the counts before it, whatever the decomposition.
  const mpi::SlabDecomposition id_blocks(std::max<std::int64_t>(n_groups, 1), comm.size());
  auto id_owner = [&](std::int64_t id) { return id_blocks.owner(id - 1); };
  std::map<std::int64_t, std::int64_t> count_here;
  {
    // Members come in runs of one group (cells in order): the map is searched once per run.
    auto last = count_here.end();
    for (const CellMember& p : members) {
      if (last == count_here.end() || last->first != p.group) last = count_here.try_emplace(p.group, 0).first;
      ++last->second;
    }
  }
  struct IdCount {
    std::int64_t id, n;
  };
  std::vector<IdCount> pairs;
  for (const auto& [id, n] : count_here) pairs.push_back({id, n});
  std::map<std::int64_t, std::int64_t> counts;  // group -> particles, for groups owned here
  for (const IdCount& p : mpi::route(comm, pairs, [&](const IdCount& q) { return id_owner(q.id); }))
    counts[p.id] += p.n;
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
  // The destinations of the groups met here (one question per group, not per member).
  std::vector<std::int64_t> group_ids;
  for (const auto& [id, n] : count_here) group_ids.push_back(id);
  const auto dest = mpi::lookup<std::int64_t, int>(comm, group_ids, id_owner, [&](std::int64_t id) {
    const auto d = dest_of.find(id);
    if (d == dest_of.end())
      throw core::Error::internal("group {} has no particle count at its owner, rank {}", id, comm.rank());
    return d->second;
  });
  // Members come in runs of one group: the run's destination is found by a search once per run.
  std::size_t run = 0;
  const auto destination = [&](const CellMember& p) {
    if (group_ids[run] != p.group)
      run = static_cast<std::size_t>(std::lower_bound(group_ids.begin(), group_ids.end(), p.group) - group_ids.begin());
    return dest[run];
  };
  std::vector<CellMember> out = comm.size() == 1 ? std::move(members) : mpi::route(comm, members, destination);
  core::release(members);
  // Sorted by (group, particle ID): by group first, in place (an American flag sort: the groups are few
  // and their counts known, so each member is swapped straight into its group's range, with no second
  // copy of the members), then each group's range by ID on threads. IDs are unique, so the order is the
  // same on any threads.
  std::vector<std::int64_t> groups;  // the groups that arrived, ascending
  for (const CellMember& p : out)
    if (groups.empty() || groups.back() != p.group) groups.push_back(p.group);
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  const auto group_of = [&](const CellMember& p) {
    return static_cast<std::size_t>(std::lower_bound(groups.begin(), groups.end(), p.group) - groups.begin());
  };
  std::vector<std::size_t> begin(groups.size() + 1, 0), next;  // where each group's range begins
  for (const CellMember& p : out) ++begin[group_of(p) + 1];
  std::partial_sum(begin.begin(), begin.end(), begin.begin());
  next.assign(begin.begin(), begin.end() - 1);
  for (std::size_t g = 0; g < groups.size(); ++g)
    while (next[g] < begin[g + 1]) {
      const std::size_t h = group_of(out[next[g]]);
      if (h == g)
        ++next[g];
      else
        std::swap(out[next[g]], out[next[h]++]);
    }
  core::parallel_for(threads, groups.size(), 1, [&](std::size_t g0, std::size_t g1, int) {
    for (std::size_t g = g0; g < g1; ++g)
      std::sort(out.begin() + static_cast<std::ptrdiff_t>(begin[g]),
                out.begin() + static_cast<std::ptrdiff_t>(begin[g + 1]),
                [](const CellMember& p, const CellMember& q) { return p.id < q.id; });
  });
  return out;
}

}  // namespace phew::particles
