#include <phew/snapshot/open.hpp>

#include <phew/core/error.hpp>
#include <phew/core/files.hpp>
#include <phew/io/h5.hpp>
#include <phew/snapshot/ramses.hpp>
#include <phew/snapshot/snapshot_checks.hpp>

#include <cmath>
#include <filesystem>
#include <utility>

namespace phew::snapshot {
using particles::SnapshotInfo;
using particles::SnapshotReader;

namespace {

namespace fs = std::filesystem;

// A path as given, or the first existing of the usual snapshot names built from it.
std::string resolve_path(const std::string& given) {
  std::error_code ec;
  if (fs::exists(given, ec)) return given;
  if (ec) throw core::Error::io("{}: cannot be opened: {}", given, ec.message());  // a loop of links, say
  for (const char* suffix : {".hdf5", ".0.hdf5", ".0"})
    if (fs::exists(given + suffix, ec)) return given + suffix;
  throw core::Error::io("{}: no such snapshot file", given);
}

// Header values every format must have sane, checked once for all readers. A box
// side above 1e30 is beyond the observable universe in any length unit phew knows (cm the smallest):
// its volume would overflow or its densities vanish.
std::unique_ptr<SnapshotReader> checked(std::unique_ptr<SnapshotReader> reader) {
  const SnapshotInfo& info = reader->info();
  const std::string& file = info.files.front();
  for (double b : info.box_size)
    if (!(b >= 0) || !std::isfinite(b) || b > 1e30)
      throw core::Error::input("{}: BoxSize {} (a box side must be a finite length from 0 to 1e30; 0 means no box)",
                               file, b);
  // Outside cosmology a time may be anything finite (RAMSES may count from a negative origin).
  if (!std::isfinite(info.time) || (info.comoving && info.time <= 0))
    throw core::Error::input("{}: Time is {} ({})", file, info.time,
                             info.comoving ? "a cosmological run's Time is its scale factor, > 0" : "must be finite");
  const std::pair<const char*, double> units[] = {{"UnitLength_in_cm", info.units.length_cm},
                                                  {"UnitMass_in_g", info.units.mass_g},
                                                  {"UnitVelocity_in_cm_per_s", info.units.velocity_cm_per_s}};
  for (const auto& [name, value] : units)
    if (!(value > 0) || !std::isfinite(value))
      throw core::Error::input("{}: {} is {} (a unit must be a positive, finite number)", file, name, value);
  return reader;
}

std::unique_ptr<SnapshotReader> open_any(const std::vector<std::string>& paths) {
  if (paths.empty()) throw core::Error::usage("no snapshot given");
  std::vector<std::string> files;
  for (const auto& p : paths) files.push_back(resolve_path(p));
  check_distinct_files(files);
  const std::string& first = files.front();
  std::error_code ec;
  if (fs::is_directory(first, ec) && !is_ramses_output(first))
    throw core::Error::input(
        "{}: a folder without a RAMSES info_NNNNN.txt (missing, empty or not an info file): not a "
        "RAMSES output",
        first);
  for (const auto& f : files)
    if (!fs::is_directory(f, ec)) core::check_readable_file(f);
  const std::string name = fs::path(first).filename().string();
  if (!fs::is_directory(first, ec) && name.rfind("info_", 0) == 0 && name.size() > 9 &&
      name.substr(name.size() - 4) == ".txt" && !is_ramses_output(first))
    throw core::Error::input("{}: a RAMSES info file without its lines (empty or truncated)", first);
  if (is_ramses_output(first)) {
    if (files.size() > 1) throw core::Error::usage("{}: give one RAMSES output (its folder or info file)", first);
    return open_ramses(first);
  }
  if (io::is_hdf5(first)) {
    const io::File f = io::File::open_read(first);
    if (f.has("/particles/position")) {
      if (files.size() > 1) throw core::Error::usage("{}: phew particle files are single files", first);
      return open_particle_file(first);
    }
    return open_hdf5_snapshot(files);
  }
  if (is_gadget_binary(first)) return open_gadget_binary(files);
  check_gadget_binary_markers(first);
  throw core::Error::input(
      "{}: not a snapshot phew can read (HDF5 Gadget/SWIFT/AREPO, Gadget binary, RAMSES output, phew particles)",
      first);
}

}  // namespace

std::unique_ptr<SnapshotReader> open_snapshot(const std::vector<std::string>& paths) {
  return checked(open_any(paths));
}

}  // namespace phew::snapshot
