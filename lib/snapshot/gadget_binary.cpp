// Gadget-1/2 binary snapshots: SnapFormat 1 (Fortran records in a fixed order) and SnapFormat 2 (each
// record preceded by a small record naming it), in either byte order, single or multi-file.
//
// Opening walks the record markers of every file once (a few bytes per block, never the data), so that
// reads can seek straight to the range they need; a snapshot of many GB costs nothing to open.
#include <phew/core/error.hpp>
#include <phew/core/files.hpp>
#include <phew/snapshot/byte_order.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/snapshot/snapshot_checks.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace phew::snapshot {
using particles::Cosmology;
using particles::FieldSelection;
using particles::ParticleSet;
using particles::SnapshotInfo;
using particles::SnapshotReader;
using particles::Units;

namespace {

constexpr int kNumTypes = 6;
constexpr std::uint32_t kHeaderBytes = 256;
constexpr std::uint32_t kNameRecordBytes = 8;  // SnapFormat 2: 4-char name + int32 size of the next record

// Where a block's data lies in its file and the width of one stored scalar (4 or 8 bytes).
struct Block {
  std::uint64_t offset = 0;  // first data byte, after the leading record marker
  std::uint64_t bytes = 0;
  int width = 0;
};

// The fields of the 256-byte header that phew uses, in the order Gadget writes them.
struct Header {
  std::array<std::uint32_t, kNumTypes> npart{};
  std::array<double, kNumTypes> mass{};
  double time = 0, redshift = 0;
  std::array<std::uint64_t, kNumTypes> npart_total{};  // low and high words combined
  std::int32_t num_files = 0;
  double box_size = 0, omega0 = 0, omega_lambda = 0, hubble_param = 0;
};

Header parse_header(const unsigned char* h, bool swap) {
  Header out;
  for (int t = 0; t < kNumTypes; ++t) {
    out.npart[t] = load<std::uint32_t>(h + 4 * t, swap);
    out.mass[t] = load<double>(h + 24 + 8 * t, swap);
    const auto low = load<std::uint32_t>(h + 96 + 4 * t, swap);
    const auto high = load<std::uint32_t>(h + 168 + 4 * t, swap);
    out.npart_total[t] = (std::uint64_t{high} << 32) | low;
  }
  out.time = load<double>(h + 72, swap);
  out.redshift = load<double>(h + 80, swap);
  // 88 flag_sfr, 92 flag_feedback, 96 npartTotal, 120 flag_cooling
  out.num_files = load<std::int32_t>(h + 124, swap);
  out.box_size = load<double>(h + 128, swap);
  out.omega0 = load<double>(h + 136, swap);
  out.omega_lambda = load<double>(h + 144, swap);
  out.hubble_param = load<double>(h + 152, swap);
  // 160 flag_stellarage, 164 flag_metals, 168 npartTotalHighWord, then padding to 256
  return out;
}

// Reads exactly `n` bytes at `pos`; false on a short read (truncated file).
bool read_at(std::ifstream& in, std::uint64_t pos, void* buffer, std::size_t n) {
  in.clear();
  in.seekg(static_cast<std::streamoff>(pos));
  in.read(static_cast<char*>(buffer), static_cast<std::streamsize>(n));
  return static_cast<std::size_t>(in.gcount()) == n;
}

std::ifstream open_binary(const std::string& path) {
  core::check_readable_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::Error::io("{}: cannot open for reading", path);
  return in;
}

std::uint64_t file_size(std::ifstream& in, const std::string& path) {
  in.clear();
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  if (end < 0) throw core::Error::io("{}: cannot determine the file size", path);
  return static_cast<std::uint64_t>(end);
}

// The first marker says both the format and the byte order: 256 (header record) or 8 (name record).
struct Layout {
  int snap_format = 0;  // 0 = not a Gadget binary file
  bool swap = false;
};

Layout detect(std::ifstream& in) {
  unsigned char head[8];
  if (!read_at(in, 0, head, sizeof head)) return {};
  for (const bool swap : {false, true}) {
    const auto marker = load<std::uint32_t>(head, swap);
    if (marker == kHeaderBytes) {
      // Also require the trailing marker, so that arbitrary files starting with 00 01 00 00 are not taken.
      unsigned char tail[4];
      if (read_at(in, 4 + kHeaderBytes, tail, 4) && load<std::uint32_t>(tail, swap) == kHeaderBytes) return {1, swap};
    } else if (marker == kNameRecordBytes && std::memcmp(head + 4, "HEAD", 4) == 0) {
      return {2, swap};
    }
  }
  return {};
}

// One piece of the snapshot: its header and where its blocks are.
struct FileLayout {
  std::string path;
  bool swap = false;
  Header header;
  std::map<std::string, Block> blocks;  // by name with trailing blanks removed ("ID", "POS")

  std::uint64_t count() const {
    std::uint64_t n = 0;
    for (auto c : header.npart) n += c;
    return n;
  }
  // Particles with an entry in the MASS block: types with a zero mass-table entry.
  std::uint64_t mass_block_count() const {
    std::uint64_t n = 0;
    for (int t = 0; t < kNumTypes; ++t)
      if (header.mass[t] == 0) n += header.npart[t];
    return n;
  }
  const Block* find(const std::string& name) const {
    auto it = blocks.find(name);
    return it == blocks.end() ? nullptr : &it->second;
  }
};

// Walks the record at `pos` (leading marker, data, trailing marker), checking that the markers agree
// and that the record fits in the file. Returns the data's offset and size.
Block read_record(std::ifstream& in, std::uint64_t pos, std::uint64_t size, const FileLayout& f,
                  const std::string& name) {
  unsigned char marker[4];
  if (!read_at(in, pos, marker, 4))
    throw core::Error::input("{}: truncated at block {} (offset {})", f.path, name, pos);
  const std::uint64_t bytes = load<std::uint32_t>(marker, f.swap);
  if (pos + 8 + bytes > size)
    throw core::Error::input("{}: block {} has {} bytes but the file ends after {} (truncated)", f.path, name, bytes,
                             size - pos - 4);
  if (!read_at(in, pos + 4 + bytes, marker, 4))
    throw core::Error::io("{}: cannot read the end of block {}", f.path, name);
  const std::uint64_t trailing = load<std::uint32_t>(marker, f.swap);
  if (trailing != bytes)
    throw core::Error::input("{}: block {} starts with record marker {} but ends with {}", f.path, name, bytes,
                             trailing);
  return {pos + 4, bytes, 0};
}

// Checks a block's size against its particle count and sets the stored width: `values` scalars per
// particle, each 4 or 8 bytes, which is how float/double positions and 32/64-bit IDs are told apart.
void set_width(Block& b, const FileLayout& f, const std::string& name, std::uint64_t count, int values) {
  const std::uint64_t scalars = count * static_cast<std::uint64_t>(values);
  if (b.bytes == 4 * scalars)
    b.width = 4;
  else if (b.bytes == 8 * scalars)
    b.width = 8;
  else
    throw core::Error::input("{}: block {} has {} bytes, {} or {} expected ({} particles)", f.path, name, b.bytes,
                             4 * scalars, 8 * scalars, count);
}

std::string trim(const std::string& name) {
  const auto end = name.find_last_not_of(' ');
  return end == std::string::npos ? std::string() : name.substr(0, end + 1);
}

FileLayout scan_file(const std::string& path, Layout& layout, bool first) {
  std::ifstream in = open_binary(path);
  const Layout here = detect(in);
  if (here.snap_format == 0) throw core::Error::input("{}: not a Gadget binary snapshot", path);
  if (first)
    layout = here;
  else if (here.snap_format != layout.snap_format)
    throw core::Error::input("{}: SnapFormat {} but the first file has SnapFormat {}", path, here.snap_format,
                             layout.snap_format);

  FileLayout f;
  f.path = path;
  f.swap = here.swap;
  const std::uint64_t size = file_size(in, path);

  // Block records in file order; format 1 has no names, so they are given by position.
  std::vector<std::pair<std::string, Block>> records;
  std::uint64_t pos = 0;
  if (here.snap_format == 2) {
    while (pos < size) {
      if (pos + 16 > size) throw core::Error::input("{}: truncated after offset {}", path, pos);
      unsigned char rec[16];
      if (!read_at(in, pos, rec, sizeof rec)) throw core::Error::io("{}: cannot read at offset {}", path, pos);
      // The name record's own size field (next record + 8) is not checked: writers differ in what they store.
      if (load<std::uint32_t>(rec, f.swap) != kNameRecordBytes ||
          load<std::uint32_t>(rec + 12, f.swap) != kNameRecordBytes)
        throw core::Error::input("{}: expected an 8-byte block-name record at offset {}", path, pos);
      const std::string name = trim(std::string(reinterpret_cast<const char*>(rec + 4), 4));
      const Block b = read_record(in, pos + 16, size, f, name);
      records.emplace_back(name, b);
      pos = b.offset + b.bytes + 4;
    }
    if (records.empty() || records.front().first != "HEAD")
      throw core::Error::input("{}: the first block is not HEAD", path);
  } else {
    records.emplace_back("HEAD", read_record(in, 0, size, f, "HEAD"));
  }

  const Block& head = records.front().second;
  if (head.bytes != kHeaderBytes)
    throw core::Error::input("{}: block HEAD has {} bytes, {} expected", path, head.bytes, kHeaderBytes);
  unsigned char raw[kHeaderBytes];
  if (!read_at(in, head.offset, raw, sizeof raw)) throw core::Error::io("{}: cannot read the header", path);
  f.header = parse_header(raw, f.swap);

  if (here.snap_format == 1) {
    // Fixed order; MASS exists only when some type with particles here has no mass-table entry.
    // Later blocks (U, RHO, ...) cannot be identified without names, so the walk stops there.
    std::vector<std::string> names{"POS", "VEL", "ID"};
    if (f.mass_block_count() > 0) names.emplace_back("MASS");
    pos = head.offset + head.bytes + 4;
    for (const auto& name : names) {
      if (pos >= size || f.count() == 0) break;  // Gadget writes no blocks for a file without particles
      const Block b = read_record(in, pos, size, f, name);
      records.emplace_back(name, b);
      pos = b.offset + b.bytes + 4;
    }
  }

  for (const auto& [name, block] : records) {
    if (f.blocks.count(name) != 0) throw core::Error::input("{}: block {} appears twice", path, name);
    f.blocks.emplace(name, block);
  }

  // Sizes of the blocks phew reads must match the header's counts.
  const std::uint64_t n = f.count();
  const std::pair<const char*, int> per_particle[] = {{"POS", 3}, {"VEL", 3}, {"ID", 1}, {"POT", 1}, {"ACCE", 3}};
  for (const auto& [name, values] : per_particle)
    if (auto it = f.blocks.find(name); it != f.blocks.end()) set_width(it->second, f, name, n, values);
  if (auto it = f.blocks.find("MASS"); it != f.blocks.end()) set_width(it->second, f, "MASS", f.mass_block_count(), 1);

  if (n > 0 && !f.find("POS")) throw core::Error::input("{}: {} particles but no POS block", path, n);
  if (f.mass_block_count() > 0 && !f.find("MASS"))
    throw core::Error::input("{}: the mass table is 0 for a type with particles, but there is no MASS block", path);
  return f;
}

// Appends `n` stored scalars starting at element `first` of block `b`, converted to the output type.
// Reads in bounded chunks so that a large range does not need a second full-size buffer.
template <typename Out>
void append_block(std::ifstream& in, const FileLayout& f, const char* name, const Block& b, std::uint64_t first,
                  std::uint64_t n, std::vector<Out>& out) {
  constexpr std::uint64_t kChunk = 1 << 16;  // scalars per read
  std::vector<unsigned char> buffer;
  const auto width = static_cast<std::uint64_t>(b.width);
  out.reserve(out.size() + n);
  for (std::uint64_t done = 0; done < n;) {
    const std::uint64_t m = std::min(kChunk, n - done);
    buffer.resize(m * width);
    const std::uint64_t pos = b.offset + (first + done) * width;
    if (!read_at(in, pos, buffer.data(), buffer.size()))
      throw core::Error::io("{}: cannot read {} bytes of block {} at offset {}", f.path, buffer.size(), name, pos);
    const unsigned char* p = buffer.data();
    for (std::uint64_t i = 0; i < m; ++i, p += width) {
      if constexpr (std::is_integral_v<Out>) {
        out.push_back(b.width == 4 ? Out{load<std::uint32_t>(p, f.swap)} : Out{load<std::uint64_t>(p, f.swap)});
      } else {
        out.push_back(b.width == 4 ? Out{load<float>(p, f.swap)} : Out{load<double>(p, f.swap)});
      }
    }
    done += m;
  }
}

class GadgetBinaryReader final : public SnapshotReader {
 public:
  GadgetBinaryReader(SnapshotInfo info, std::vector<FileLayout> files)
      : info_(std::move(info)), files_(std::move(files)) {}

  const SnapshotInfo& info() const override { return info_; }

  void read(int file, int type, std::uint64_t offset, std::uint64_t count, const FieldSelection& fields,
            ParticleSet& out) const override {
    const FileLayout& f = files_.at(static_cast<std::size_t>(file));
    const Header& h = f.header;
    std::ifstream in = open_binary(f.path);

    // Within a file the blocks hold the types one after another; the MASS block skips types that
    // take their mass from the table.
    std::uint64_t first = offset, first_mass = offset;
    for (int t = 0; t < type; ++t) {
      first += h.npart[t];
      if (h.mass[t] == 0) first_mass += h.npart[t];
    }

    const auto need = [&](const char* name) -> const Block& {
      const Block* b = f.find(name);
      if (!b) throw core::Error::input("{}: no {} block", f.path, name);
      return *b;
    };

    if (fields.positions) append_block(in, f, "POS", need("POS"), 3 * first, 3 * count, out.position);
    if (h.mass[type] != 0)
      out.mass.insert(out.mass.end(), count, h.mass[type]);
    else
      append_block(in, f, "MASS", need("MASS"), first_mass, count, out.mass);
    if (fields.ids) append_block(in, f, "ID", need("ID"), first, count, out.id);
    if (fields.velocities) {
      const std::size_t old = out.velocity.size();
      append_block(in, f, "VEL", need("VEL"), 3 * first, 3 * count, out.velocity);
      // Gadget stores u = v_pec / sqrt(a) in comoving runs; phew's velocities are peculiar.
      if (info_.comoving && info_.time > 0) {
        const double to_peculiar = std::sqrt(info_.time);
        for (std::size_t i = old; i < out.velocity.size(); ++i) out.velocity[i] *= to_peculiar;
      }
    }
    if (fields.potential) append_block(in, f, "POT", need("POT"), first, count, out.potential);
    if (fields.acceleration) append_block(in, f, "ACCE", need("ACCE"), 3 * first, 3 * count, out.acceleration);
  }

 private:
  SnapshotInfo info_;
  std::vector<FileLayout> files_;
};

}  // namespace

bool is_gadget_binary(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;  // a FIFO would block the read below
  std::ifstream in(path, std::ios::binary);
  return in && detect(in).snap_format != 0;
}

void check_gadget_binary_markers(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return;
  std::ifstream in(path, std::ios::binary);
  unsigned char lead[4], trail[4];
  if (!in || !read_at(in, 0, lead, 4) || !read_at(in, 4 + kHeaderBytes, trail, 4)) return;
  // One of the two markers of a 256-byte header record is right, in either byte order: a Gadget binary
  // file whose other marker is damaged.
  for (const bool swap : {false, true}) {
    const auto l = load<std::uint32_t>(lead, swap), t = load<std::uint32_t>(trail, swap);
    if ((l == kHeaderBytes) != (t == kHeaderBytes))
      throw core::Error::input(
          "{}: block HEAD (the Gadget binary header) starts with record marker {} but ends with {} "
          "(a corrupted record marker)",
          path, l, t);
  }
}

namespace {

// One piece NAME.<k> of a multi-file snapshot names all of them: NAME.0 ... NAME.<num_files - 1>.
std::vector<std::string> pieces_of(const std::string& given, int num_files) {
  static const std::regex piece_name(R"(^(.*)\.([0-9]+)$)");
  std::smatch m;
  if (!std::regex_match(given, m, piece_name))
    throw core::Error::input("{}: the header says the snapshot has {} files, but the name is not NAME.<piece>", given,
                             num_files);
  std::vector<std::string> pieces;
  for (int i = 0; i < num_files; ++i) {
    const std::string piece = m[1].str() + "." + std::to_string(i);
    std::error_code ec;
    if (!std::filesystem::exists(piece, ec))
      throw core::Error::io("{}: piece {} of {} of the snapshot is missing", piece, i, num_files);
    pieces.push_back(piece);
  }
  return pieces;
}

}  // namespace

std::unique_ptr<SnapshotReader> open_gadget_binary(const std::vector<std::string>& given) {
  if (given.empty()) throw core::Error::internal("open_gadget_binary: no files given");
  Layout layout;
  std::vector<FileLayout> files;
  files.push_back(scan_file(given.front(), layout, true));
  const std::vector<std::string> paths = given.size() == 1 && files.front().header.num_files > 1
                                             ? pieces_of(given.front(), files.front().header.num_files)
                                             : given;
  if (paths.front() != given.front()) files.clear();
  files.reserve(paths.size());
  for (std::size_t i = files.size(); i < paths.size(); ++i) files.push_back(scan_file(paths[i], layout, i == 0));

  const Header& h = files.front().header;
  // num_files 0 is common in old initial conditions (a single file); a negative one is not a count.
  if (h.num_files < 0) check_num_files(paths.front(), "num_files", h.num_files);
  if (h.num_files > 1 && paths.size() != static_cast<std::size_t>(h.num_files))
    throw core::Error::input("{}: the header says the snapshot has {} files, {} given", paths.front(), h.num_files,
                             paths.size());
  check_header_cosmology(paths.front(), h.omega0, h.omega_lambda, h.hubble_param);
  // Every piece must be of this snapshot and hold particles no other piece holds.
  check_distinct_files(paths);
  const auto piece_header = [](const FileLayout& f) {
    PieceHeader p;
    p.path = f.path;
    p.time = f.header.time;
    p.box_size = {f.header.box_size};
    p.num_files = f.header.num_files;
    p.mass_table.assign(f.header.mass.begin(), f.header.mass.end());
    p.total.assign(f.header.npart_total.begin(), f.header.npart_total.end());
    p.omega0 = f.header.omega0;
    p.omega_lambda = f.header.omega_lambda;
    p.hubble_param = f.header.hubble_param;
    return p;
  };
  PieceSignatures signatures;
  for (const auto& f : files) {
    if (&f != &files.front()) check_same_snapshot(piece_header(files.front()), piece_header(f));
    const Block* ids = f.find("ID");
    const Block* xyz = f.find("POS");
    if (files.size() > 1 && ids && xyz && f.count() > 0) {
      std::ifstream in = open_binary(f.path);
      std::vector<std::uint64_t> first;
      std::vector<double> x;
      append_block(in, f, "ID", *ids, 0, 1, first);
      append_block(in, f, "POS", *xyz, 0, 3, x);
      int type = 0;
      while (f.header.npart[type] == 0) ++type;
      signatures.add(f.path, type, first.at(0), {x.at(0), x.at(1), x.at(2)});
    }
  }

  SnapshotInfo info;
  info.format = layout.snap_format == 1 ? "gadget-binary-1" : "gadget-binary-2";
  info.files = paths;
  info.mass_table.assign(h.mass.begin(), h.mass.end());
  for (const auto& f : files) {
    // The MASS block layout of each file follows its own mass table; a mismatch would make info() lie.
    if (f.header.mass != h.mass)
      throw core::Error::input("{}: mass table differs from that of {}", f.path, paths.front());
    info.file_counts.emplace_back(f.header.npart.begin(), f.header.npart.end());
  }
  // npartTotal is 0 in some files (initial conditions, test setups): then the per-file counts stand.
  for (int t = 0; t < kNumTypes; ++t) {
    const std::uint64_t sum = info.total(t);
    if (h.npart_total[t] != 0 && h.npart_total[t] != sum)
      throw core::Error::input("{}: header says {} particles of type {} in total, the {} file(s) hold {}",
                               paths.front(), h.npart_total[t], t, paths.size(), sum);
  }

  info.box_size = {h.box_size, h.box_size, h.box_size};
  info.periodic = h.box_size > 0;
  info.time = h.time;
  info.redshift = h.redshift;
  info.comoving = h.omega0 > 0 && h.hubble_param > 0;
  if (info.comoving) info.cosmology = Cosmology{h.omega0, h.omega_lambda, h.hubble_param};
  info.units = Units{};  // binary files do not store units: Gadget's defaults, assumed (or inferred later)
  info.units.h_scaled = info.comoving;  // "/h" only means something in cosmological runs

  // A field is available when every file that has particles has its block.
  const auto all_have = [&](const char* name) {
    bool any = false;
    for (const auto& f : files) {
      if (f.count() == 0) continue;
      if (!f.find(name)) return false;
      any = true;
    }
    return any;
  };
  info.has_ids = all_have("ID");
  info.has_velocities = all_have("VEL");
  info.has_potential = all_have("POT");
  info.has_acceleration = all_have("ACCE");

  return std::make_unique<GadgetBinaryReader>(std::move(info), std::move(files));
}

}  // namespace phew::snapshot
