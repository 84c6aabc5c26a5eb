#include "particles/snapshot.hpp"

#include "core/error.hpp"
#include "core/parse.hpp"
#include "grid/geometry.hpp"
#include "io/h5.hpp"
#include "mpi/agree.hpp"

#include <cmath>
#include <filesystem>

namespace phew {
namespace {

namespace fs = std::filesystem;

// A path as given, or the first existing of the usual snapshot names built from it.
std::string resolve_path(const std::string& given) {
  if (fs::exists(given)) return given;
  for (const char* suffix : {".hdf5", ".0.hdf5", ".0"})
    if (fs::exists(given + suffix)) return given + suffix;
  throw Error::io("{}: no such snapshot file", given);
}

// Gadget binary multi-file snapshots: NAME.0, NAME.1, ...
std::vector<std::string> binary_pieces(const std::string& first) {
  const auto dot = first.rfind('.');
  if (dot == std::string::npos || first.substr(dot) != ".0") return {first};
  std::vector<std::string> pieces;
  const std::string stem = first.substr(0, dot);
  for (int i = 0; fs::exists(stem + "." + std::to_string(i)); ++i) pieces.push_back(stem + "." + std::to_string(i));
  return pieces;
}

}  // namespace

std::unique_ptr<SnapshotReader> open_snapshot(const std::vector<std::string>& paths) {
  if (paths.empty()) throw Error::usage("no snapshot given");
  std::vector<std::string> files;
  for (const auto& p : paths) files.push_back(resolve_path(p));
  const std::string& first = files.front();
  if (io::is_hdf5(first)) {
    const io::File f = io::File::open_read(first);
    if (f.has("/particles/position")) {
      if (files.size() > 1) throw Error::usage("{}: phew particle files are single files", first);
      return open_particle_file(first);
    }
    return open_hdf5_snapshot(files);
  }
  if (is_gadget_binary(first)) return open_gadget_binary(files.size() > 1 ? files : binary_pieces(first));
  throw Error::input("{}: not a snapshot phew can read (HDF5 Gadget/SWIFT/AREPO, Gadget binary, phew particles)",
                     first);
}

std::vector<int> parse_types(const std::string& text, int num_types) {
  std::vector<int> types;
  if (text == "all") {
    for (int t = 0; t < num_types; ++t) types.push_back(t);
    return types;
  }
  std::vector<int> given;
  try {
    given = parse_list<int>(text, "particle types");
  } catch (const Error&) {
    given = {-1};
  }
  for (int t : given) {
    if (t < 0)
      throw Error::usage("particle types '{}': expected a comma-separated list of type numbers or 'all'", text);
    if (t >= num_types) throw Error::usage("particle type {} does not exist; the snapshot has types 0..{}", t, num_types - 1);
    if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
  }
  std::sort(types.begin(), types.end());
  return types;
}

std::vector<int> selected_types(const SnapshotInfo& info, const std::string& text) {
  if (text == "auto") return {info.format == "phew-particles" ? 0 : 1};
  return parse_types(text, info.num_types());
}

void check_snapshot_matches_grid(const SnapshotInfo& info, const GridMeta& grid, const std::string& snapshot,
                                 const std::string& other) {
  bool same_box = true;
  for (std::size_t d = 0; d < 3; ++d)
    same_box &= !grid.geometry.periodic ||
                std::abs(info.box_size[d] - grid.geometry.extent[d]) <= 1e-9 * grid.geometry.extent[d];
  if (!same_box || info.units.length_name() != grid.length_units || info.units.mass_name() != grid.mass_units)
    throw Error::input("{}: box {} {} does not match the grid of {} ({} {}): not the snapshot the grid was made from",
                       snapshot, info.box_size[0], info.units.length_name(), other, grid.geometry.extent[0],
                       grid.length_units);
}

ParticleSet read_particles(const SnapshotReader& reader, const std::vector<int>& types, std::uint64_t begin,
                           std::uint64_t count, const FieldSelection& fields) {
  const SnapshotInfo& info = reader.info();
  if (fields.ids && !info.has_ids) throw Error::input("{}: snapshot has no particle IDs", info.files.front());
  if (fields.velocities && !info.has_velocities) throw Error::input("{}: snapshot has no velocities", info.files.front());
  if (fields.potential && !info.has_potential) throw Error::input("{}: snapshot has no potential", info.files.front());
  if (fields.acceleration && !info.has_acceleration)
    throw Error::input("{}: snapshot has no accelerations", info.files.front());

  // Walk the global numbering (type-major, then file) and read the pieces that overlap the range.
  ParticleSet out;
  std::uint64_t cursor = 0;
  const std::uint64_t end = begin + count;
  for (int type : types) {
    for (std::size_t file = 0; file < info.files.size(); ++file) {
      const std::uint64_t n = info.file_counts[file][static_cast<std::size_t>(type)];
      const std::uint64_t lo = std::max(begin, cursor), hi = std::min(end, cursor + n);
      if (lo < hi) reader.read(static_cast<int>(file), type, lo - cursor, hi - lo, fields, out);
      cursor += n;
    }
  }

  // Check values: one bad particle names its place so the user can find it.
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double* x = &out.position[3 * i];
    if (!std::isfinite(x[0]) || !std::isfinite(x[1]) || !std::isfinite(x[2]))
      throw Error::input("{}: particle {} of the selection has a non-finite position", info.files.front(), begin + i);
    if (!(out.mass[i] > 0) || !std::isfinite(out.mass[i]))
      throw Error::input("{}: particle {} of the selection has mass {} (masses must be positive and finite)",
                         info.files.front(), begin + i, out.mass[i]);
  }
  for (double v : out.velocity)
    if (!std::isfinite(v)) throw Error::input("{}: a velocity is not finite", info.files.front());
  if (info.periodic)
    for (std::size_t i = 0; i < out.position.size(); ++i) out.position[i] = wrap_position(out.position[i], info.box_size[i % 3]);
  return out;
}

ParticleSet read_share(const SnapshotReader& reader, const std::vector<int>& types, const FieldSelection& fields,
                       const mpi::Comm& comm) {
  const std::uint64_t n = reader.info().total(types);
  const auto r = static_cast<std::uint64_t>(comm.rank()), size = static_cast<std::uint64_t>(comm.size());
  const std::uint64_t begin = n * r / size, end = n * (r + 1) / size;
  ParticleSet out;
  mpi::agree(comm, [&] { out = read_particles(reader, types, begin, end - begin, fields); });
  return out;
}

}  // namespace phew
