// A RAMSES part file's layout, checked record by record.
#include <phew/snapshot/ramses_part_file.hpp>

#include <phew/core/files.hpp>

#include <array>

namespace phew::snapshot::ramses {
namespace {

constexpr int kHeaderRecords = 8;
constexpr std::array<const char*, kHeaderRecords> kHeaderNames{"ncpu",      "ndim",      "npart",      "localseed",
                                                               "nstar_tot", "mstar_tot", "mstar_lost", "nsink"};

}  // namespace

std::ifstream open_part(const std::string& path) {
  core::check_readable_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::Error::io("{}: cannot open for reading", path);
  return in;
}

PartLayout scan_part(const std::string& path, std::ifstream& in, const std::vector<Field>& fields, int ncpu,
                     const std::string& info_path) {
  RecordScanner scan(path, in);
  PartLayout L;
  L.path = path;
  std::uint64_t pos = 0;
  std::array<Block, kHeaderRecords> header;
  for (int r = 0; r < kHeaderRecords; ++r) {
    header[static_cast<std::size_t>(r)] =
        scan.record(pos, r + 1, kHeaderNames[static_cast<std::size_t>(r)], L.swap, r == 0);
    pos = header[static_cast<std::size_t>(r)].offset + header[static_cast<std::size_t>(r)].bytes + 4;
  }
  const std::int64_t file_ncpu = scan.integer_value(header[0], L.swap, 1, "ncpu");
  if (file_ncpu != ncpu)
    throw core::Error::input("{}: written by a run on {} ranks, but {} says ncpu = {}", path, file_ncpu, info_path,
                             ncpu);
  const std::int64_t ndim = scan.integer_value(header[1], L.swap, 2, "ndim");
  if (ndim != 3) throw core::Error::input("{}: ndim = {}, phew reads 3-D outputs", path, ndim);
  const std::int64_t npart = scan.integer_value(header[2], L.swap, 3, "npart");
  if (npart < 0) throw core::Error::input("{}: npart = {}", path, npart);
  L.npart = static_cast<std::uint64_t>(npart);

  for (std::size_t f = 0; f < fields.size(); ++f) {
    const int number = kHeaderRecords + static_cast<int>(f) + 1;
    const std::string what = fields[f].name + ", type " + fields[f].letter;
    Block b = scan.record(pos, number, what, L.swap, false);
    b.width = fields[f].width;
    if (b.width == 0) b.width = b.bytes == 4 * L.npart ? 4 : 8;  // 'l': from the record
    if (b.bytes != static_cast<std::uint64_t>(b.width) * L.npart)
      throw core::Error::input("{}: record {} ({}) has {} bytes, npart = {} needs {} ({} per particle)", path, number,
                               what, b.bytes, L.npart, static_cast<std::uint64_t>(b.width) * L.npart, b.width);
    L.fields.push_back(b);
    pos = b.offset + b.bytes + 4;
  }
  if (pos != scan.size())
    throw core::Error::input(
        "{}: {} bytes follow the last field of the descriptor ({}): the descriptor does not match the file", path,
        scan.size() - pos, fields.empty() ? "none" : fields.back().name);
  return L;
}

}  // namespace phew::snapshot::ramses
