// RAMSES reader: the real run in ../shared/data/ramses-cosmo-L20-N32 against its independently converted
// HDF5 (reference/), and small outputs written here for the field types, families, byte order and
// units that run does not have. Conversion factors are rounded to 10 digits (ramses.cpp), so 1e-9.
#include <phew/core/error.hpp>
#include <phew/io/h5.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/snapshot/ramses.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/snapshot/open.hpp>
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace phew;
using namespace phew::particles;
using namespace phew::snapshot;

namespace {

fs::path shared_data() {
  if (const char* env = std::getenv("PHEW_SHARED_DATA")) return env;
  const fs::path source = __FILE__;
  if (source.is_absolute()) return source.parent_path().parent_path().parent_path() / ".." / "shared" / "data";
  return fs::path("..") / "shared" / "data";
}

fs::path run_dir() {
  const fs::path p = shared_data() / "ramses-cosmo-L20-N32";
  EXPECT_TRUE(fs::exists(p)) << p << " is missing (set PHEW_SHARED_DATA)";
  return p;
}

std::string output(int n) { return (run_dir() / ("output_0000" + std::to_string(n))).string(); }

FieldSelection ids_and_velocities() {
  FieldSelection f;
  f.ids = f.velocities = true;
  return f;
}

// Rows of a ParticleSet sorted by ID.
std::vector<std::size_t> order_by_id(const ParticleSet& p) {
  std::vector<std::size_t> o(p.size());
  std::iota(o.begin(), o.end(), 0);
  std::sort(o.begin(), o.end(), [&](std::size_t a, std::size_t b) { return p.id[a] < p.id[b]; });
  return o;
}

bool close(double a, double b, double rel, double abs) { return std::abs(a - b) <= std::max(rel * std::abs(b), abs); }

TEST(Ramses, InfoUnitsAndCosmology) {
  const auto r = open_snapshot({output(4)});
  const SnapshotInfo& info = r->info();
  EXPECT_EQ(info.format, "ramses");
  EXPECT_EQ(info.num_types(), kRamsesNumTypes);
  EXPECT_EQ(info.total(1), 32768u);
  EXPECT_EQ(info.total({0, 2, 3, 4, 5, 11, 12, 13, 14, 15}), 0u);
  EXPECT_TRUE(info.file_counts.empty());  // counted from the files' family records
  EXPECT_TRUE(info.file_major);
  ASSERT_EQ(info.files.size(), 5u);  // info, header, descriptor, two part files
  EXPECT_EQ(fs::path(info.files[0]).filename(), "info_00004.txt");
  EXPECT_EQ(fs::path(info.files[4]).filename(), "part_00004.out00002");
  EXPECT_TRUE(info.periodic);
  EXPECT_TRUE(info.comoving);
  EXPECT_NEAR(info.box_size[0], 19.9999988, 1e-6);  // boxlen unit_l / aexp / Mpc * h (float32 H0)
  EXPECT_DOUBLE_EQ(info.time, 0.100361225279311E+01);
  EXPECT_NEAR(info.redshift, -0.0036, 1e-4);
  ASSERT_TRUE(info.cosmology);
  EXPECT_NEAR(info.cosmology->omega_m, 0.31, 1e-7);
  EXPECT_NEAR(info.cosmology->omega_lambda, 0.69, 1e-7);
  EXPECT_NEAR(info.cosmology->hubble_param, 0.677, 1e-7);
  EXPECT_EQ(info.units.length_name(), "Mpc/h");
  EXPECT_EQ(info.units.mass_name(), "Msun/h");
  EXPECT_EQ(info.units.velocity_name(), "km/s");
  EXPECT_TRUE(info.has_ids && info.has_velocities);
  EXPECT_FALSE(info.has_potential || info.has_acceleration);
  // The info file itself opens the same output.
  EXPECT_EQ(open_snapshot({output(4) + "/info_00004.txt"})->info().files, info.files);
}

TEST(Ramses, CountsPerFileFromTheFamilyRecords) {
  const auto r = open_snapshot({output(4)});
  const FileCounts c = r->count_files(0, r->info().files.size());
  ASSERT_EQ(c.size(), 5u);
  for (std::size_t f = 0; f < 3; ++f) EXPECT_EQ(std::accumulate(c[f].begin(), c[f].end(), std::uint64_t{0}), 0u);
  EXPECT_EQ(c[3][1], 18195u);  // npart of rank 1 and 2 (README)
  EXPECT_EQ(c[4][1], 14573u);
  const FileCounts part = r->count_files(4, 5);
  ASSERT_EQ(part.size(), 1u);
  EXPECT_EQ(part[0], c[4]);
  EXPECT_EQ(file_counts(*r, mpi::Comm()), c);
}

// Every output against reference/snap_00N.hdf5: IDs exact, the rest to 1e-6 relative. The reference
// has peculiar velocities, as phew gives them.
TEST(Ramses, MatchesTheIndependentConversion) {
  for (int n : {2, 3, 4}) {
    SCOPED_TRACE("output " + std::to_string(n));
    const auto r = open_snapshot({output(n)});
    const ParticleSet p = read_particles(*r, {1}, 0, r->info().total(1), ids_and_velocities());
    const io::File ref =
        io::File::open_read((run_dir() / "reference" / ("snap_00" + std::to_string(n) + ".hdf5")).string());
    const auto id = ref.read<std::uint64_t>("/PartType1/ParticleIDs");
    const auto x = ref.read<double>("/PartType1/Coordinates");
    const auto v = ref.read<double>("/PartType1/Velocities");
    const auto m = ref.read<double>("/PartType1/Masses");
    ASSERT_EQ(p.size(), id.size());
    const auto o = order_by_id(p);
    int bad = 0;
    for (std::size_t k = 0; k < o.size() && bad < 5; ++k) {
      const std::size_t i = o[k];
      if (p.id[i] != id[k]) {
        ADD_FAILURE() << "row " << k << ": ID " << p.id[i] << " vs " << id[k];
        ++bad;
        continue;
      }
      bool ok = close(p.mass[i], m[k], 1e-6, 0);
      for (std::size_t d = 0; d < 3; ++d) {
        ok &= close(p.position[3 * i + d], x[3 * k + d], 1e-6, 1e-9);
        ok &= close(p.velocity[3 * i + d], v[3 * k + d], 1e-6, 1e-6);
      }
      if (!ok) {
        ADD_FAILURE() << "particle " << id[k] << ": x " << p.position[3 * i] << " vs " << x[3 * k] << ", v "
                      << p.velocity[3 * i] << " vs " << v[3 * k] << ", m " << p.mass[i] << " vs " << m[k];
        ++bad;
      }
    }
  }
}

TEST(Ramses, RangesAcrossTheFileBoundaryAreSlicesOfTheWhole) {
  const auto r = open_snapshot({output(3)});
  const std::uint64_t n = r->info().total(1);
  const ParticleSet all = read_particles(*r, {1}, 0, n, ids_and_velocities());
  for (const auto& [begin, count] :
       {std::pair<std::uint64_t, std::uint64_t>{0, 5}, {18770, 30}, {18782, 1}, {n - 7, 7}}) {
    const ParticleSet part = read_particles(*r, {1}, begin, count, ids_and_velocities());
    ASSERT_EQ(part.size(), count);
    for (std::uint64_t i = 0; i < count; ++i) {
      EXPECT_EQ(part.id[i], all.id[begin + i]);
      EXPECT_EQ(part.mass[i], all.mass[begin + i]);
      for (int d = 0; d < 3; ++d) EXPECT_EQ(part.position[3 * i + d], all.position[3 * (begin + i) + d]);
    }
  }
}

TEST(Ramses, TypesAreFamilies) {
  EXPECT_EQ(ramses_type_of_family(1), 1);    // DM
  EXPECT_EQ(ramses_type_of_family(2), 2);    // stars
  EXPECT_EQ(ramses_type_of_family(0), 0);    // gas tracers
  EXPECT_EQ(ramses_type_of_family(-1), 11);  // DM tracers
  EXPECT_EQ(ramses_type_of_family(-5), 15);
  EXPECT_FALSE(ramses_type_of_family(6));
  EXPECT_FALSE(ramses_type_of_family(127));
  const auto r = open_snapshot({output(2)});
  EXPECT_EQ(selected_types(r->info(), "auto"), std::vector<int>{1});
  EXPECT_EQ(parse_types("1,2,12", r->info().num_types()), (std::vector<int>{1, 2, 12}));
}

TEST(Ramses, NotRecognisedByName) {
  // Folders and files are told apart by content: the data folder itself holds no info file.
  EXPECT_FALSE(is_ramses_output(run_dir().string()));
  EXPECT_FALSE(is_ramses_output((run_dir() / "README.md").string()));
  EXPECT_FALSE(is_ramses_output(output(4) + "/header_00004.txt"));
  EXPECT_TRUE(is_ramses_output(output(4)));
  EXPECT_TRUE(is_ramses_output(output(4) + "/info_00004.txt"));
}

// ---- outputs written here -------------------------------------------------------------------------

struct Fake {
  double x[3], v[3], m;
  std::int64_t id;
  int family;
};

struct Spec {
  int ncpu = 2;
  char real = 'd', id = 'i', family = 'b';
  bool big_endian = false;
  bool cosmological = true;
  bool extra_fields = true;  // levelp, tag, birth_time
};

constexpr double kMpc = 3.0856776e24, kMsun = 1.9891e33;
constexpr double kAexp = 0.5, kH0 = 70.0;
constexpr double kUnitL = kAexp * 100.0 * kMpc / 0.7;  // a 100 Mpc/h box
constexpr double kUnitD = 2.0e-30, kUnitT = 3.0e17;

template <typename T>
void put(std::ofstream& out, T v, bool swap) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  if (swap) std::reverse(b, b + sizeof(T));
  out.write(reinterpret_cast<const char*>(b), sizeof(T));
}

// One Fortran record holding `values` converted to T.
template <typename T, typename Values>
void record(std::ofstream& out, const Values& values, bool swap) {
  const auto bytes = static_cast<std::uint32_t>(values.size() * sizeof(T));
  put(out, bytes, swap);
  for (auto v : values) put(out, static_cast<T>(v), swap);
  put(out, bytes, swap);
}

template <typename Values>
void typed_record(std::ofstream& out, char type, const Values& values, bool swap) {
  switch (type) {
    case 'd':
      return record<double>(out, values, swap);
    case 'f':
      return record<float>(out, values, swap);
    case 'i':
      return record<std::int32_t>(out, values, swap);
    case 'q':
    case 'l':
      return record<std::int64_t>(out, values, swap);
    case 'h':
      return record<std::int16_t>(out, values, swap);
    case 'b':
      return record<std::int8_t>(out, values, swap);
    case 'B':
      return record<std::uint8_t>(out, values, swap);
    default:
      FAIL() << "type " << type;
  }
}

// An output_00001 folder under `dir` with `files[r]` in part_00001.out(r+1).
fs::path write_output(const fs::path& dir, const std::vector<std::vector<Fake>>& files, const Spec& s) {
  const fs::path out = dir / "output_00001";
  fs::remove_all(out);
  fs::create_directories(out);
  const bool sw = s.big_endian;
  {
    std::ofstream f(out / "info_00001.txt");
    f.precision(17);
    const double aexp = s.cosmological ? kAexp : 1.0, H0 = s.cosmological ? kH0 : 1.0;
    f << "ncpu        =          " << s.ncpu << "\nndim        =          3\nlevelmin    =          5\n"
      << "levelmax    =         10\nngridmax    =     100000\nnstep_coarse=         10\n\n"
      << "boxlen      =  0.100000000000000E+01\ntime        = -0.250000000000000E+01\n"
      << "aexp        =  " << aexp << "\nH0          =  " << H0 << "\nomega_m     =  0.3\n"
      << "omega_l     =  0.7\nomega_k     =  0.0\nomega_b     =  0.0\n"
      << "unit_l      =  " << kUnitL << "\nunit_d      =  " << kUnitD << "\nunit_t      =  " << kUnitT << "\n\n"
      << "ordering type=hilbert\n";
  }
  std::array<std::uint64_t, 12> per_family{};  // -5..5, undefined
  for (const auto& file : files)
    for (const Fake& p : file)
      if (p.family >= -5 && p.family <= 5) ++per_family[static_cast<std::size_t>(p.family + 5)];
  {
    std::ofstream f(out / "header_00001.txt");
    const char* names[] = {"other_tracer", "debris_tracer", "cloud_tracer", "star_tracer", "other_tracer", "gas_tracer",
                           "DM",           "star",          "cloud",        "debris",      "other",        "undefined"};
    f << "#      Family     Count\n";
    for (std::size_t i = 0; i < 12; ++i) f << " " << names[i] << " " << per_family[i] << "\n";
    f << "Particle fields\npos vel mass iord level family tag\n";
  }
  std::vector<std::pair<std::string, char>> fields{
      {"position_x", s.real}, {"position_y", s.real}, {"position_z", s.real}, {"velocity_x", s.real},
      {"velocity_y", s.real}, {"velocity_z", s.real}, {"mass", s.real},       {"identity", s.id}};
  if (s.extra_fields) fields.push_back({"levelp", 'i'});
  fields.push_back({"family", s.family});
  if (s.extra_fields) {
    fields.push_back({"tag", 'b'});
    fields.push_back({"birth_time", 'd'});
  }
  {
    std::ofstream f(out / "part_file_descriptor.txt");
    f << "# version:  1\n# ivar, variable_name, variable_type\n";
    for (std::size_t i = 0; i < fields.size(); ++i)
      f << (i < 9 ? " " : "") << i + 1 << ", " << fields[i].first << ", " << fields[i].second << "\n";
  }
  for (std::size_t r = 0; r < files.size(); ++r) {
    std::ofstream f(out / fmt::format("part_00001.out{:05d}", r + 1), std::ios::binary);
    const auto& ps = files[r];
    record<std::int32_t>(f, std::vector<int>{s.ncpu}, sw);
    record<std::int32_t>(f, std::vector<int>{3}, sw);
    record<std::int32_t>(f, std::vector<int>{static_cast<int>(ps.size())}, sw);
    record<std::int32_t>(f, std::vector<int>{1, 2, 3, 4}, sw);
    record<std::int32_t>(f, std::vector<int>{0}, sw);
    record<double>(f, std::vector<double>{0.0}, sw);
    record<double>(f, std::vector<double>{0.0}, sw);
    record<std::int32_t>(f, std::vector<int>{0}, sw);
    for (const auto& [name, type] : fields) {
      std::vector<double> real;
      std::vector<std::int64_t> integer;
      for (const Fake& p : ps) {
        if (name.rfind("position_", 0) == 0) real.push_back(p.x[name.back() - 'x']);
        if (name.rfind("velocity_", 0) == 0) real.push_back(p.v[name.back() - 'x']);
        if (name == "mass") real.push_back(p.m);
        if (name == "birth_time") real.push_back(-1.0);
        if (name == "identity") integer.push_back(p.id);
        if (name == "levelp") integer.push_back(7);
        if (name == "family") integer.push_back(p.family);
        if (name == "tag") integer.push_back(0);
      }
      if (!real.empty() || name == "mass" || name.rfind("position_", 0) == 0 || name.rfind("velocity_", 0) == 0 ||
          name == "birth_time")
        typed_record(f, type, real, sw);
      else
        typed_record(f, type, integer, sw);
    }
  }
  return out;
}

// Families mixed within files, as RAMSES writes them: DM, stars, gas tracers and DM tracers.
std::vector<std::vector<Fake>> mixed(int ncpu, int per_file) {
  std::vector<std::vector<Fake>> files(static_cast<std::size_t>(ncpu));
  const int families[] = {1, 2, 1, 0, 1, -1, 2, 1};
  std::int64_t id = 1;
  for (int r = 0; r < ncpu; ++r)
    for (int i = 0; i < per_file + r; ++i, ++id) {
      const double t = static_cast<double>(id);
      files[static_cast<std::size_t>(r)].push_back(
          {{std::fmod(0.37 * t, 1.0), std::fmod(0.61 * t, 1.0), std::fmod(0.13 * t + 0.5, 1.0)},
           {0.01 * t, -0.02 * t, 0.5},
           families[id % 8] == 0 || families[id % 8] == -1 ? 0.0 : 1e-5 * static_cast<double>(1 + id % 3),
           id * 1000,
           families[id % 8]});
    }
  return files;
}

using RamsesFake = test::TempDir;

// Every particle of `files` of family `family`, file-major, in the reader's units.
std::vector<Fake> expected(const std::vector<std::vector<Fake>>& files, int family) {
  std::vector<Fake> out;
  for (const auto& f : files)
    for (const Fake& p : f)
      if (p.family == family) out.push_back(p);
  return out;
}

void expect_reads(const SnapshotReader& r, const std::vector<std::vector<Fake>>& files, int type, int family,
                  double tol) {
  const double h = 0.7, lf = kUnitL / kAexp / kMpc * h, mf = kUnitD * kUnitL * kUnitL * kUnitL / kMsun * h,
               vf = kUnitL / kUnitT / 1e5;  // peculiar km/s
  const auto want = expected(files, family);
  ASSERT_EQ(r.info().total(type), want.size());
  const ParticleSet p = read_particles(r, {type}, 0, want.size(), ids_and_velocities());
  ASSERT_EQ(p.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(p.id[i], static_cast<std::uint64_t>(want[i].id));
    for (int d = 0; d < 3; ++d) {
      EXPECT_NEAR(p.position[3 * i + d], want[i].x[d] * lf, tol * 100);
      EXPECT_NEAR(p.velocity[3 * i + d], want[i].v[d] * vf, tol * std::abs(want[i].v[d] * vf) + 1e-12);
    }
    if (want[i].m > 0) {
      EXPECT_NEAR(p.mass[i], want[i].m * mf, tol * want[i].m * mf);
    }
  }
}

TEST_F(RamsesFake, MixedFamiliesAreTypesNumberedFileMajor) {
  const auto files = mixed(3, 40);
  const auto r = open_snapshot({write_output(dir_, files, Spec{3}).string()});
  const SnapshotInfo& info = r->info();
  EXPECT_EQ(info.total(1), expected(files, 1).size());
  EXPECT_EQ(info.total(2), expected(files, 2).size());
  EXPECT_EQ(info.total(0), expected(files, 0).size());
  EXPECT_EQ(info.total(11), expected(files, -1).size());
  expect_reads(*r, files, 1, 1, 1e-9);
  expect_reads(*r, files, 2, 2, 1e-9);
  // Types 1 and 2 together: file 1's DM, file 1's stars, file 2's DM, ...
  const ParticleSet both = read_particles(*r, {1, 2}, 0, info.total({1, 2}), ids_and_velocities());
  std::vector<std::uint64_t> want;
  for (const auto& f : files)
    for (int fam : {1, 2})
      for (const Fake& p : f)
        if (p.family == fam) want.push_back(static_cast<std::uint64_t>(p.id));
  EXPECT_EQ(both.id, want);
  // Any range is the matching slice.
  const ParticleSet mid = read_particles(*r, {1, 2}, 30, 50, ids_and_velocities());
  EXPECT_EQ(mid.id, std::vector<std::uint64_t>(want.begin() + 30, want.begin() + 80));
  // Tracers carry no mass in RAMSES: selecting them is refused by the mass check.
  EXPECT_THROW(read_particles(*r, {0}, 0, info.total(0), FieldSelection{}), core::Error);
}

TEST_F(RamsesFake, EveryFieldTypeAndBigEndian) {
  const auto files = mixed(2, 25);
  for (const Spec s : {Spec{2, 'f', 'q', 'b'}, Spec{2, 'd', 'l', 'h'}, Spec{2, 'd', 'i', 'q', true},
                       Spec{2, 'f', 'i', 'i', true, true, false}}) {
    SCOPED_TRACE(testing::Message() << "real " << s.real << " id " << s.id << " family " << s.family << " big-endian "
                                    << s.big_endian);
    const auto r = open_snapshot({write_output(dir_, files, s).string()});
    expect_reads(*r, files, 1, 1, s.real == 'f' ? 1e-6 : 1e-9);
  }
}

TEST_F(RamsesFake, NonCosmologicalRunsAreInKpcAndMsun) {
  Spec s;
  s.cosmological = false;
  const auto r = open_snapshot({write_output(dir_, mixed(2, 10), s).string()});
  const SnapshotInfo& info = r->info();
  EXPECT_FALSE(info.comoving);
  EXPECT_FALSE(info.cosmology);
  EXPECT_EQ(info.units.length_name(), "kpc");
  EXPECT_EQ(info.units.mass_name(), "Msun");
  EXPECT_NEAR(info.box_size[0], kUnitL / 3.0856776e21, 1e-9 * info.box_size[0]);
  EXPECT_TRUE(info.periodic);
}

TEST_F(RamsesFake, BadFamilyAndIdentityAreNamed) {
  auto files = mixed(2, 10);
  files[1][3].family = 9;
  const auto r = open_snapshot({write_output(dir_, files, Spec{}).string()});
  try {
    read_particles(*r, {1}, 0, 1, FieldSelection{});
    FAIL() << "no error";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("part_00001.out00002: particle 3 has family 9"), std::string::npos)
        << e.what();
  }
}

}  // namespace
