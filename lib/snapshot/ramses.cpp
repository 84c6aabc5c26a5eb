// RAMSES particle outputs: the reader. It reads the text files at open (ramses_info, ramses_descriptor),
// settles the units and which field is which, and reads the part files' records (ramses_part_file) when
// counting (each rank its share of the files) and when reading.
#include <phew/snapshot/ramses.hpp>

#include <phew/core/error.hpp>
#include <phew/snapshot/ramses_descriptor.hpp>
#include <phew/snapshot/ramses_info.hpp>
#include <phew/snapshot/ramses_part_file.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

namespace phew::snapshot {
using particles::Cosmology;
using particles::FieldSelection;
using particles::FileCounts;
using particles::ParticleSet;
using particles::SnapshotInfo;
using particles::SnapshotReader;
using particles::UnitsSource;

namespace {

namespace fs = std::filesystem;
using namespace ramses;

// RAMSES' own constants (amr/constants.f90 of the version that wrote the test data), so that
// conversions reproduce what RAMSES users compute.
constexpr double kMpcCm = 3.0856776e24;
constexpr double kKpcCm = 3.0856776e21;
constexpr double kMsunG = 1.9891e33;
constexpr double kKmS = 1e5;
constexpr std::size_t kTextFiles = 3;  // info, header, descriptor: first in SnapshotInfo::files

// Info files print 15 digits, so unit_l / aexp of one run differs between outputs in the last bits.
// Conversion factors are rounded to 10 significant digits, so that every output of a run gets the same
// box (mergertree checks it) and the same particle mass.
double round_significant(double v, int digits) {
  if (!(v > 0) || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, std::floor(std::log10(v)) - (digits - 1));
  return std::round(v / scale) * scale;
}

// phew type of each family code -5..5 (index family + 5); see ramses_type_of_family.
constexpr std::array<int, 11> kTypeOfFamily{15, 14, 13, 12, 11, 0, 1, 2, 3, 4, 5};

// ---- the reader ------------------------------------------------------------------------------------

struct Roles {
  std::array<int, 3> position{-1, -1, -1}, velocity{-1, -1, -1};
  int mass = -1, identity = -1, family = -1;
};

class RamsesReader final : public SnapshotReader {
 public:
  explicit RamsesReader(const std::string& given) {
    locate(given);
    read_info();
    const std::string descriptor = (folder_ / "part_file_descriptor.txt").string();
    if (!fs::exists(descriptor))
      throw core::Error::input(
          "{}: no part_file_descriptor.txt: a RAMSES output from before 2017, which phew does not read "
          "(the particle records' layout is unknown without it)",
          folder_.string());
    fields_ = parse_descriptor(descriptor);
    assign_roles(descriptor);
    const std::string header = (folder_ / ("header_" + number_ + ".txt")).string();
    if (!fs::exists(header))
      throw core::Error::input("{}: no {} (particle totals per family)", folder_.string(),
                               fs::path(header).filename().string());
    info_.type_totals = parse_header_totals(header);
    if (roles_.family < 0)
      for (int t = 0; t < kRamsesNumTypes; ++t)
        if (t != 1 && info_.type_totals[static_cast<std::size_t>(t)] != 0)
          throw core::Error::input("{}: no family field, but {} lists {} particles of type {} (not dark matter)",
                                   descriptor, header, info_.type_totals[static_cast<std::size_t>(t)], t);
    info_.files = {info_path_, header, descriptor};
    list_part_files();
    for (int t = 0; t < kRamsesNumTypes; ++t) families_present_ += info_.type_totals[static_cast<std::size_t>(t)] > 0;
  }

  const SnapshotInfo& info() const override { return info_; }

  FileCounts count_files(std::size_t first, std::size_t last) const override {
    FileCounts counts;
    for (std::size_t file = first; file < last; ++file) {
      std::vector<std::uint64_t> row(kRamsesNumTypes, 0);
      if (file >= kTextFiles) {
        const std::string& path = info_.files[file];
        std::ifstream in = open_part(path);
        const PartLayout L = scan_part(path, in, fields_, ncpu_, info_path_);
        if (roles_.family < 0) {
          row[1] = L.npart;
        } else {
          const auto r = static_cast<std::size_t>(roles_.family);
          for_each_chunk<std::int64_t>(
              in, L, fields_[r], L.fields[r], 0, L.npart,
              [&](std::uint64_t at, std::size_t m, const std::int64_t* family) {
                for (std::size_t j = 0; j < m; ++j) {
                  if (family[j] < -5 || family[j] > 5)
                    throw core::Error::input("{}: particle {} has family {}, not a RAMSES family (-5..5)", path, at + j,
                                             family[j]);
                  ++row[static_cast<std::size_t>(kTypeOfFamily[static_cast<std::size_t>(family[j] + 5)])];
                }
              });
        }
      }
      counts.push_back(std::move(row));
    }
    return counts;
  }

  void read(int file, int type, std::uint64_t offset, std::uint64_t count, const FieldSelection& fields,
            ParticleSet& out) const override {
    const std::string& path = info_.files.at(static_cast<std::size_t>(file));
    if (static_cast<std::size_t>(file) < kTextFiles)
      throw core::Error::internal("{}: no particles in a text file", path);
    std::ifstream in = open_part(path);
    const PartLayout L = scan_part(path, in, fields_, ncpu_, info_path_);

    // The file's places of the selected particles: all of them in a one-family output, else those whose
    // family is `type`'s, from the family record.
    std::vector<std::uint64_t> where;
    std::uint64_t lo = offset, hi = offset + count;
    if (families_present_ > 1) {
      const auto r = static_cast<std::size_t>(roles_.family);
      std::uint64_t seen = 0;
      for_each_chunk<std::int64_t>(
          in, L, fields_[r], L.fields[r], 0, L.npart,
          [&](std::uint64_t first, std::size_t m, const std::int64_t* family) {
            for (std::size_t j = 0; j < m; ++j) {
              if (family[j] < -5 || family[j] > 5 || kTypeOfFamily[static_cast<std::size_t>(family[j] + 5)] != type)
                continue;
              if (seen >= offset && seen < offset + count) where.push_back(first + j);
              ++seen;
            }
          });
      if (where.size() != count)
        throw core::Error::input("{}: {} particles of type {} from place {} asked, the file has {} of that type", path,
                                 count, type, offset, seen);
      lo = where.front();
      hi = where.back() + 1;
    } else if (hi > L.npart) {
      throw core::Error::input("{}: particles [{}, {}) asked, the file has {}", path, lo, hi, L.npart);
    }
    // Hands value i of [lo, hi) to put(k, value, i) for its place k in the selection: every value when the
    // selection is contiguous, else those listed in `where` (sorted).
    const auto scatter = [&](auto tag, int role, auto put) {
      using Out = decltype(tag);
      const auto r = static_cast<std::size_t>(role);
      std::size_t w = 0;
      for_each_chunk<Out>(in, L, fields_[r], L.fields[r], lo, hi,
                          [&](std::uint64_t first, std::size_t m, const Out* v) {
                            if (where.empty()) {
                              const auto k0 = static_cast<std::size_t>(first - lo);
                              for (std::size_t j = 0; j < m; ++j) put(k0 + j, v[j], first + j);
                            } else {
                              for (; w < where.size() && where[w] < first + m; ++w)
                                put(w, v[where[w] - first], where[w]);
                            }
                          });
    };
    const auto real_field = [&](int role, double factor, std::vector<double>& dst, std::size_t base, std::size_t stride,
                                std::size_t component) {
      double* d = dst.data() + base + component;
      scatter(double{}, role, [&](std::size_t k, double v, std::uint64_t) { d[stride * k] = v * factor; });
    };
    const std::size_t base = out.size();
    if (fields.positions) {
      out.position.resize(3 * (base + count));
      for (std::size_t d = 0; d < 3; ++d) real_field(roles_.position[d], length_factor_, out.position, 3 * base, 3, d);
    }
    out.mass.resize(base + count);
    real_field(roles_.mass, mass_factor_, out.mass, base, 1, 0);
    if (fields.velocities) {
      out.velocity.resize(3 * (base + count));
      for (std::size_t d = 0; d < 3; ++d)
        real_field(roles_.velocity[d], velocity_factor_, out.velocity, 3 * base, 3, d);
    }
    if (fields.ids) {
      const std::size_t id_base = out.id.size();
      out.id.resize(id_base + count);
      scatter(std::int64_t{}, roles_.identity, [&](std::size_t k, std::int64_t id, std::uint64_t i) {
        if (id < 0) throw core::Error::input("{}: particle {} has identity {} (IDs must not be negative)", path, i, id);
        out.id[id_base + k] = static_cast<std::uint64_t>(id);
      });
    }
  }

 private:
  // The folder and its info file, from either.
  void locate(const std::string& given) {
    const fs::path p(given);
    if (fs::is_directory(p)) {
      const auto infos = info_files_in(p);
      if (infos.empty()) throw core::Error::input("{}: no RAMSES info_NNNNN.txt in this folder", given);
      if (infos.size() > 1)
        throw core::Error::input("{}: {} info files ({}, {}, ...): give the one to read", given, infos.size(),
                                 infos[0].filename().string(), infos[1].filename().string());
      folder_ = p;
      info_path_ = infos.front().string();
    } else {
      folder_ = p.parent_path().empty() ? fs::path(".") : p.parent_path();
      info_path_ = given;
    }
    static const std::regex name_re(R"(^info_(\d+)\.txt$)");
    std::smatch m;
    const std::string name = fs::path(info_path_).filename().string();
    if (!std::regex_match(name, m, name_re))
      throw core::Error::input(
          "{}: a RAMSES info file must be named info_NNNNN.txt (its part files are found by that number)", info_path_);
    number_ = m[1];
  }

  void read_info() {
    const auto kv = key_values(read_lines(info_path_));
    const auto number = [&](const char* key) {
      const auto it = kv.find(key);
      if (it == kv.end()) {
        if (std::string(key).rfind("unit_", 0) == 0)
          throw core::Error::input(
              "{}: no {} (RAMSES info files give unit_l, unit_d and unit_t; phew needs them for the units)", info_path_,
              key);
        throw core::Error::input("{}: no {} line", info_path_, key);
      }
      const auto v = parse_number(it->second);
      if (!v) throw core::Error::input("{}: {} = '{}' is not a number", info_path_, key, it->second);
      return *v;
    };
    const double ncpu = number("ncpu"), ndim = number("ndim");
    if (ncpu < 1 || ncpu != std::floor(ncpu)) throw core::Error::input("{}: ncpu = {}", info_path_, ncpu);
    if (ndim != 3) throw core::Error::input("{}: ndim = {}, phew reads 3-D outputs", info_path_, ndim);
    ncpu_ = static_cast<int>(ncpu);
    const double boxlen = number("boxlen"), time = number("time"), aexp = number("aexp"), H0 = number("H0");
    const double omega_m = number("omega_m"), omega_l = number("omega_l");
    const double unit_l = number("unit_l"), unit_d = number("unit_d"), unit_t = number("unit_t");
    for (const auto& [key, v] :
         {std::pair{"boxlen", boxlen}, {"aexp", aexp}, {"unit_l", unit_l}, {"unit_d", unit_d}, {"unit_t", unit_t}})
      if (!(v > 0)) throw core::Error::input("{}: {} = {} (must be positive)", info_path_, key, v);

    info_.format = "ramses";
    info_.mass_table.assign(kRamsesNumTypes, 0.0);
    info_.file_major = true;
    info_.has_ids = info_.has_velocities = true;
    info_.has_potential = info_.has_acceleration = false;
    // RAMSES' non-cosmological runs keep H0 = 1 and aexp = 1 (the test yt makes too).
    const bool cosmological = !(H0 == 1.0 && aexp == 1.0);
    info_.units.source = UnitsSource::file;
    info_.units.velocity_cm_per_s = kKmS;
    info_.units.mass_g = kMsunG;
    const double unit_m = unit_d * unit_l * unit_l * unit_l;
    const double unit_v = unit_l / unit_t;
    if (cosmological) {
      // unit_l is the physical length of the box unit at aexp; comoving Mpc/h = x unit_l / aexp / Mpc * h.
      const double h = H0 / 100.0;
      if (!(omega_m > 0) || !(h > 0)) throw core::Error::input("{}: omega_m = {}, H0 = {}", info_path_, omega_m, H0);
      info_.comoving = true;
      info_.cosmology = Cosmology{omega_m, omega_l, h};
      info_.time = aexp;
      info_.redshift = 1.0 / aexp - 1.0;
      info_.units.length_cm = kMpcCm;
      info_.units.h_scaled = true;
      info_.periodic = true;
      length_factor_ = round_significant(unit_l / aexp / kMpcCm * h, 10);
      mass_factor_ = round_significant(unit_m / kMsunG * h, 10);
      velocity_factor_ = unit_v / kKmS;  // RAMSES' velocities times unit_v are peculiar velocities
    } else {
      info_.comoving = false;
      info_.units.length_cm = kKpcCm;
      info_.units.h_scaled = false;
      info_.time = time * unit_t / (kKpcCm / kKmS);  // in kpc / (km/s), Gadget's time unit
      info_.periodic = !nonperiodic_boundaries();
      length_factor_ = unit_l / kKpcCm;
      mass_factor_ = unit_m / kMsunG;
      velocity_factor_ = unit_v / kKmS;
    }
    const double box = boxlen * length_factor_;
    info_.box_size = {box, box, box};
  }

  // Non-cosmological runs with boundary regions (namelist nboundary > 0) have open or reflecting walls.
  bool nonperiodic_boundaries() const {
    const fs::path nml = folder_ / "namelist.txt";
    if (!fs::exists(nml)) return false;
    static const std::regex re(R"(^\s*nboundary\s*=\s*(\d+))", std::regex::icase);
    std::smatch m;
    for (const auto& line : read_lines(nml.string()))
      if (std::regex_search(line, m, re)) return std::stoi(m[1]) > 0;
    return false;
  }

  void assign_roles(const std::string& descriptor) {
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      const std::string& n = fields_[i].name;
      const int idx = static_cast<int>(i);
      for (std::size_t d = 0; d < 3; ++d) {
        if (n == std::string("position_") + "xyz"[d]) roles_.position[d] = idx;
        if (n == std::string("velocity_") + "xyz"[d]) roles_.velocity[d] = idx;
      }
      if (n == "mass") roles_.mass = idx;
      if (n == "identity") roles_.identity = idx;
      if (n == "family") roles_.family = idx;
    }
    const auto need_real = [&](int role, const char* name) {
      if (role < 0) throw core::Error::input("{}: no {} field", descriptor, name);
      if (!is_real(fields_[static_cast<std::size_t>(role)].kind))
        throw core::Error::input("{}: field {} has type '{}', a real type (d or f) expected", descriptor, name,
                                 fields_[static_cast<std::size_t>(role)].letter);
    };
    const auto need_integer = [&](int role, const char* name) {
      if (role >= 0 && (is_real(fields_[static_cast<std::size_t>(role)].kind)))
        throw core::Error::input("{}: field {} has type '{}', an integer type expected", descriptor, name,
                                 fields_[static_cast<std::size_t>(role)].letter);
    };
    for (std::size_t d = 0; d < 3; ++d) need_real(roles_.position[d], (std::string("position_") + "xyz"[d]).c_str());
    need_real(roles_.mass, "mass");
    const int velocities =
        static_cast<int>(std::count_if(roles_.velocity.begin(), roles_.velocity.end(), [](int r) { return r >= 0; }));
    if (velocities != 0 && velocities != 3)
      throw core::Error::input("{}: only {} of velocity_x/y/z", descriptor, velocities);
    info_.has_velocities = velocities == 3;
    if (info_.has_velocities)
      for (std::size_t d = 0; d < 3; ++d) need_real(roles_.velocity[d], (std::string("velocity_") + "xyz"[d]).c_str());
    need_integer(roles_.identity, "identity");
    need_integer(roles_.family, "family");
    info_.has_ids = roles_.identity >= 0;
  }

  // part_NNNNN.out00001 .. outNCPU must all exist, and no other rank's file.
  void list_part_files() {
    const std::string stem = "part_" + number_ + ".out";
    std::vector<int> present;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(folder_, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(stem, 0) != 0) continue;
      const std::string digits = name.substr(stem.size());
      if (digits.empty() || !std::all_of(digits.begin(), digits.end(),
                                         [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        continue;
      present.push_back(std::stoi(digits));
    }
    if (ec) throw core::Error::io("{}: cannot list the folder: {}", folder_.string(), ec.message());
    std::sort(present.begin(), present.end());
    const auto name = [&](int r) { return fmt::format("{}{:05d}", stem, r); };
    if (present.empty())
      throw core::Error::input("{}: no {}* files (info_{}.txt says ncpu = {}); an output without particles?",
                               folder_.string(), stem, number_, ncpu_);
    for (int r = 1; r <= ncpu_; ++r)
      if (!std::binary_search(present.begin(), present.end(), r))
        throw core::Error::input("{}: {} is missing (info_{}.txt says ncpu = {}, the folder has {} part file{})",
                                 folder_.string(), name(r), number_, ncpu_, present.size(),
                                 present.size() == 1 ? "" : "s");
    if (present.back() > ncpu_)
      throw core::Error::input("{}: {} exists, but info_{}.txt says ncpu = {}", folder_.string(), name(present.back()),
                               number_, ncpu_);
    for (int r = 1; r <= ncpu_; ++r) info_.files.push_back((folder_ / name(r)).string());
  }

  fs::path folder_;
  std::string info_path_, number_;
  int ncpu_ = 0;
  std::vector<Field> fields_;
  Roles roles_;
  int families_present_ = 0;
  double length_factor_ = 1, mass_factor_ = 1, velocity_factor_ = 1;
  SnapshotInfo info_;
};

}  // namespace

std::optional<int> ramses_type_of_family(int family) {
  if (family >= 0 && family <= 5) return family;
  if (family >= -5 && family <= -1) return 10 - family;
  return std::nullopt;
}

bool is_ramses_output(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return !info_files_in(path).empty();
  return looks_like_info(path);
}

std::unique_ptr<SnapshotReader> open_ramses(const std::string& path) { return std::make_unique<RamsesReader>(path); }

}  // namespace phew::snapshot
