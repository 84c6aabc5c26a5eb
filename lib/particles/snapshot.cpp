#include <phew/particles/snapshot.hpp>

#include <phew/particles/seen_ids.hpp>

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/core/parse.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/mpi/route.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include <cmath>
#include <limits>
#include <filesystem>
#include <optional>
#include <span>
#include <utility>

namespace phew::particles {

std::vector<int> parse_types(const std::string& text, int num_types) {
  std::vector<int> types;
  if (text == "all") {
    for (int t = 0; t < num_types; ++t) types.push_back(t);
    return types;
  }
  std::vector<int> given;
  try {
    given = core::parse_list<int>(text, "particle types");
  } catch (const core::Error&) {
    given = {-1};
  }
  for (int t : given) {
    if (t < 0)
      throw core::Error::usage("particle types '{}': expected a comma-separated list of type numbers or 'all'", text);
    if (t >= num_types)
      throw core::Error::usage("particle type {} does not exist; the snapshot has types 0..{}", t, num_types - 1);
    if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
  }
  std::sort(types.begin(), types.end());
  return types;
}

namespace {
// "1 (4,096), 2 (17)": the types a snapshot holds, with their counts.
std::string describe_types(const SnapshotInfo& info) {
  std::string s;
  for (int t = 0; t < info.num_types(); ++t)
    if (info.total(t) > 0)
      s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", t,
                       core::log::thousands(static_cast<long long>(info.total(t))));
  return s.empty() ? "none" : s;
}
}  // namespace

std::vector<int> selected_types(const SnapshotInfo& info, const std::string& text) {
  std::vector<int> types =
      text == "auto" ? std::vector<int>{info.format == "phew-particles" ? 0 : 1} : parse_types(text, info.num_types());
  if (info.total(types) == 0)
    throw core::Error::input("{}: no particles of the selected types (types present: {})", info.files.front(),
                             describe_types(info));
  return types;
}

std::vector<int> chain_types(const SnapshotInfo& info, const std::string& text, const std::vector<int>& grid_types,
                             bool allow_other) {
  if (grid_types.empty()) return selected_types(info, text);
  if (text == "auto") {
    if (info.total(grid_types) == 0)
      throw core::Error::input("{}: no particles of the types the grid was made of ({})", info.files.front(),
                               fmt::join(grid_types, ","));
    return grid_types;
  }
  std::vector<int> types = selected_types(info, text);
  std::vector<int> a = types, b = grid_types;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b && !allow_other)
    throw core::Error::usage(
        "--types {} are not the types the grid was made of ({}): leave --types out to use those, or give "
        "--allow-other-types",
        fmt::join(types, ","), fmt::join(grid_types, ","));
  return types;
}

void check_snapshot_matches_grid(const SnapshotInfo& info, const grid::GridMeta& grid, const std::string& snapshot,
                                 const std::string& other) {
  bool same_box = true;
  for (std::size_t d = 0; d < 3; ++d)
    same_box &= !grid.geometry.periodic ||
                std::abs(info.box_size[d] - grid.geometry.extent[d]) <= 1e-9 * grid.geometry.extent[d];
  if (!same_box || info.units.length_name() != grid.length_units || info.units.mass_name() != grid.mass_units)
    throw core::Error::input(
        "{}: box {} {} does not match the grid of {} ({} {}): not the snapshot the grid was made from, "
        "or read in other units (give every tool the same --units)",
        snapshot, info.box_size[0], info.units.length_name(), other, grid.geometry.extent[0], grid.length_units);
}

FileCounts SnapshotReader::count_files(std::size_t first, std::size_t last) const {
  const FileCounts& all = info().file_counts;
  if (last > all.size()) throw core::Error::internal("count_files: files [{}, {}) of {}", first, last, all.size());
  return FileCounts(all.begin() + static_cast<std::ptrdiff_t>(first), all.begin() + static_cast<std::ptrdiff_t>(last));
}

namespace {

// Counts from the files must add up to what the header promised.
void check_totals(const SnapshotInfo& info, const FileCounts& counts) {
  for (int t = 0; t < static_cast<int>(info.type_totals.size()); ++t) {
    std::uint64_t n = 0;
    for (const auto& row : counts) n += row.at(static_cast<std::size_t>(t));
    if (n != info.type_totals[static_cast<std::size_t>(t)])
      throw core::Error::input("{}: the files hold {} particles of type {}, the header says {}", info.files.front(), n,
                               t, info.type_totals[static_cast<std::size_t>(t)]);
  }
}

}  // namespace

FileCounts file_counts(const SnapshotReader& reader, const mpi::Comm& comm) {
  const SnapshotInfo& info = reader.info();
  if (!info.file_counts.empty()) return info.file_counts;
  const auto n = static_cast<std::uint64_t>(info.files.size()), size = static_cast<std::uint64_t>(comm.size()),
             r = static_cast<std::uint64_t>(comm.rank());
  const std::size_t first = n * r / size, last = n * (r + 1) / size;
  // Each rank stops at its first bad file; every rank reports the lowest bad file, whatever the rank count.
  FileCounts mine;
  std::optional<core::Error> error;
  try {
    mine = reader.count_files(first, last);
  } catch (const core::Error& e) {
    error = e;
  } catch (const std::exception& e) {
    error = core::Error(core::ErrorKind::internal, e.what());
  }
  mpi::agree_first(comm, static_cast<std::int64_t>(first), error ? &*error : nullptr);
  const auto ntypes = static_cast<std::size_t>(info.num_types());
  std::vector<std::uint64_t> flat;
  for (const auto& row : mine) flat.insert(flat.end(), row.begin(), row.end());
  const std::vector<std::uint64_t> all = comm.all_gatherv(std::span<const std::uint64_t>(flat));
  FileCounts counts;
  for (std::size_t i = 0; i + ntypes <= all.size(); i += ntypes)
    counts.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(i),
                        all.begin() + static_cast<std::ptrdiff_t>(i + ntypes));
  mpi::agree(comm, [&] { check_totals(info, counts); });
  return counts;
}

ParticleSet read_particles(const SnapshotReader& reader, const std::vector<int>& types, std::uint64_t begin,
                           std::uint64_t count, const FieldSelection& fields) {
  const SnapshotInfo& info = reader.info();
  if (!info.file_counts.empty()) return read_particles(reader, info.file_counts, types, begin, count, fields);
  const FileCounts counts = reader.count_files(0, info.files.size());
  check_totals(info, counts);
  return read_particles(reader, counts, types, begin, count, fields);
}

ParticleSet read_particles(const SnapshotReader& reader, const FileCounts& counts, const std::vector<int>& types,
                           std::uint64_t begin, std::uint64_t count, const FieldSelection& fields) {
  const SnapshotInfo& info = reader.info();
  if (fields.ids && !info.has_ids) throw core::Error::input("{}: snapshot has no particle IDs", info.files.front());
  if (fields.velocities && !info.has_velocities)
    throw core::Error::input("{}: snapshot has no velocities", info.files.front());
  if (fields.gas && types != std::vector<int>{0})
    throw core::Error::internal("read_particles: the gas's fields are read for type 0 alone");
  if (fields.potential && !info.has_potential)
    throw core::Error::input("{}: snapshot has no potential", info.files.front());
  if (fields.acceleration && !info.has_acceleration)
    throw core::Error::input("{}: snapshot has no accelerations", info.files.front());
  if (counts.size() != info.files.size())
    throw core::Error::internal("read_particles: counts for {} files, the snapshot has {}", counts.size(),
                                info.files.size());

  // Walk the global numbering (type-major, or file-major) and read the pieces that overlap the range.
  ParticleSet out;
  std::uint64_t cursor = 0;
  const std::uint64_t end = begin + count;
  std::vector<std::pair<std::size_t, std::size_t>> read_from;  // (end in `out`, file): a bad value names its file
  const auto piece = [&](std::size_t file, int type) {
    const std::uint64_t n = counts[file].at(static_cast<std::size_t>(type));
    const std::uint64_t lo = std::max(begin, cursor), hi = std::min(end, cursor + n);
    if (lo < hi) {
      reader.read(static_cast<int>(file), type, lo - cursor, hi - lo, fields, out);
      if (fields.types) out.type.resize(out.size(), static_cast<std::uint8_t>(type));
      read_from.emplace_back(out.size(), file);
    }
    cursor += n;
  };
  const auto file_of = [&](std::size_t i) -> const std::string& {
    for (const auto& [stop, file] : read_from)
      if (i < stop) return info.files[file];
    return info.files.front();
  };
  if (info.file_major) {
    for (std::size_t file = 0; file < info.files.size(); ++file)
      for (int type : types) piece(file, type);
  } else {
    for (int type : types)
      for (std::size_t file = 0; file < info.files.size(); ++file) piece(file, type);
  }

  // Check values: one bad particle names its place so the user can find it.
  const auto check_position = [&](std::size_t i) {
    const double* x = &out.position[3 * i];
    if (!std::isfinite(x[0]) || !std::isfinite(x[1]) || !std::isfinite(x[2]))
      throw core::Error::input("{}: particle {} of the selection has a non-finite position", file_of(i), begin + i);
    // Slightly outside a periodic box is normal (wrapped below); a box length or more away means the
    // box or the length units do not fit the positions (BoxSize 1e-30 would give absurd densities).
    if (info.periodic)
      for (std::size_t d = 0; d < 3; ++d)
        if (x[d] < -info.box_size[d] || x[d] >= 2 * info.box_size[d])
          throw core::Error::input(
              "{}: particle {} of the selection is at {:g} in {}, far outside the periodic box "
              "[0, {:g}): BoxSize or the length units do not fit the positions",
              file_of(i), begin + i, x[d], "xyz"[d], info.box_size[d]);
  };
  const std::array<double, 3> box = info.box_size;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (fields.positions) {
      double* x = &out.position[3 * i];
      if (!info.periodic) {
        check_position(i);
      } else if (!(grid::kept_by_wrap(x[0], box[0]) && grid::kept_by_wrap(x[1], box[1]) &&
                   grid::kept_by_wrap(x[2], box[2]))) {
        // Inside the periodic box (nearly every particle) a position is finite and stays as it is;
        // else it is checked and wrapped into the box.
        check_position(i);
        for (std::size_t d = 0; d < 3; ++d) x[d] = grid::wrap_position(x[d], box[d]);
      }
    }
    if (!(out.mass[i] > 0) || !std::isfinite(out.mass[i]))
      throw core::Error::input("{}: particle {} of the selection has mass {} (masses must be positive and finite)",
                               file_of(i), begin + i, out.mass[i]);
  }
  for (std::size_t i = 0; i < out.velocity.size(); ++i)
    if (!std::isfinite(out.velocity[i])) throw core::Error::input("{}: a velocity is not finite", file_of(i / 3));
  // The gas's fields: finite and not negative (a temperature, a rate, a number of electrons).
  for (const auto& [values, name] :
       {std::pair{&out.internal_energy, "internal energy"}, std::pair{&out.star_formation_rate, "star formation rate"},
        std::pair{&out.electron_abundance, "electron abundance"}})
    for (std::size_t i = 0; i < values->size(); ++i)
      if (!((*values)[i] >= 0) || !std::isfinite((*values)[i]))
        throw core::Error::input("{}: particle {} of the selection has {} {} (finite and >= 0 expected)", file_of(i),
                                 begin + i, name, (*values)[i]);
  return out;
}

Share share_of(const SnapshotReader& reader, const std::vector<int>& types, const mpi::Comm& comm) {
  Share share;
  share.counts = file_counts(reader, comm);
  std::uint64_t n = 0;
  for (const auto& row : share.counts)
    for (int t : types) n += row.at(static_cast<std::size_t>(t));
  const auto r = static_cast<std::uint64_t>(comm.rank()), size = static_cast<std::uint64_t>(comm.size());
  share.begin = n * r / size;
  share.end = n * (r + 1) / size;
  share.most = (n + size - 1) / size;
  return share;
}

namespace {

// Equal IDs meet on one rank, chosen by a hash of the ID.
std::vector<std::uint64_t> route_ids(std::span<const std::uint64_t> ids, const mpi::Comm& comm) {
  const auto ranks = static_cast<std::uint64_t>(comm.size());
  return mpi::route(comm, ids,
                    [ranks](std::uint64_t id) { return static_cast<int>((id * 0x9E3779B97F4A7C15ull >> 32) % ranks); });
}

// The check of the IDs routed here by route_ids (collective): the smallest repeated anywhere, the same
// message on any ranks.
void check_routed_ids(SeenIds& mine, const std::string& snapshot, const mpi::Comm& comm) {
  const std::optional<std::uint64_t> mine_repeated = mine.smallest_repeated();
  if (comm.max(mine_repeated ? 1 : 0) == 0) return;  // (any ID may be repeated, the largest too: no sentinel)
  const std::uint64_t repeated = comm.min(mine_repeated.value_or(std::numeric_limits<std::uint64_t>::max()));
  core::Error e = core::Error::input(
      "{}: particle ID {} is given to more than one particle of the selected types (IDs "
      "must be unique: a run that gives a star its gas particle's ID is read one type at "
      "a time, --types)",
      snapshot, repeated);
  e.mark_agreed(0);  // every rank found the same ID
  throw e;
}

}  // namespace

void check_unique_ids(std::span<const std::uint64_t> ids, const std::string& snapshot, const mpi::Comm& comm) {
  const std::vector<std::uint64_t> routed = route_ids(ids, comm);
  SeenIds seen(routed.size());
  seen.add(routed);
  check_routed_ids(seen, snapshot, comm);
}

ParticleSet read_share(const SnapshotReader& reader, const std::vector<int>& types, const FieldSelection& fields,
                       const mpi::Comm& comm) {
  const Share share = share_of(reader, types, comm);
  ParticleSet out;
  mpi::agree(comm,
             [&] { out = read_particles(reader, share.counts, types, share.begin, share.end - share.begin, fields); });
  if (fields.ids) check_unique_ids(out.id, reader.info().files.front(), comm);
  return out;
}

void for_each_share_chunk(const SnapshotReader& reader, const std::vector<int>& types, const FieldSelection& fields,
                          std::uint64_t chunk, const mpi::Comm& comm,
                          const std::function<void(const ParticleSet&)>& use) {
  const Share share = share_of(reader, types, comm);
  const std::uint64_t rounds = (share.most + chunk - 1) / chunk;  // the same on every rank
  SeenIds routed(share.most);  // the IDs this rank checks (check_unique_ids): about a share's, by their hash
  for (std::uint64_t k = 0; k < rounds; ++k) {
    const std::uint64_t b = std::min(share.end, share.begin + k * chunk), e = std::min(share.end, b + chunk);
    ParticleSet part;
    mpi::agree(comm, [&] { part = read_particles(reader, share.counts, types, b, e - b, fields); });
    if (fields.ids) routed.add(route_ids(part.id, comm));  // a bit per ID when they are dense
    use(part);
  }
  if (fields.ids) check_routed_ids(routed, reader.info().files.front(), comm);
}

}  // namespace phew::particles
