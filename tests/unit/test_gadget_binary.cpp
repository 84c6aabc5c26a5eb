// Gadget binary reader: the real files in shared/data/gadget-binary (see its README) and synthetic
// big-endian files written here, for exact values, byte swapping and the error paths.
#include <phew/core/error.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/snapshot/open.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace phew;
using namespace phew::particles;
using namespace phew::snapshot;

namespace {

// PHEW_SHARED_DATA when set; otherwise ../shared/data from the project root, which is found from this
// source file's path (CMake compiles with absolute paths) or, failing that, from the working directory.
fs::path shared_data() {
  if (const char* env = std::getenv("PHEW_SHARED_DATA")) return env;
  const fs::path source = __FILE__;
  if (source.is_absolute()) return source.parent_path().parent_path().parent_path() / ".." / "shared" / "data";
  return fs::path("..") / "shared" / "data";
}

// Missing data is a failure, not a skip: these are the only real files for this format.
std::string data_file(const std::string& name) {
  const fs::path p = shared_data() / "gadget-binary" / name;
  EXPECT_TRUE(fs::exists(p)) << p << " is missing (set PHEW_SHARED_DATA)";
  return p.string();
}

FieldSelection all_fields(const SnapshotInfo& info) {
  return {info.has_ids, info.has_velocities, info.has_potential, info.has_acceleration};
}

ParticleSet read_all(const SnapshotReader& r, int file, int type) {
  ParticleSet out;
  r.read(file, type, 0, r.info().file_counts[file][type], all_fields(r.info()), out);
  return out;
}

template <typename T>
std::vector<T> slice(const std::vector<T>& v, std::uint64_t begin, std::uint64_t n, int stride) {
  if (v.empty()) return {};
  return {v.begin() + static_cast<std::ptrdiff_t>(begin * stride),
          v.begin() + static_cast<std::ptrdiff_t>((begin + n) * stride)};
}

// A range read must give exactly the matching slice of a full read, for every field.
void expect_range_matches(const SnapshotReader& r, int type, std::uint64_t begin, std::uint64_t n) {
  SCOPED_TRACE(testing::Message() << "range [" << begin << ", " << begin + n << ") of type " << type);
  const ParticleSet full = read_all(r, 0, type);
  ParticleSet part;
  r.read(0, type, begin, n, all_fields(r.info()), part);
  ASSERT_EQ(part.size(), n);
  EXPECT_EQ(part.position, slice(full.position, begin, n, 3));
  EXPECT_EQ(part.mass, slice(full.mass, begin, n, 1));
  EXPECT_EQ(part.id, slice(full.id, begin, n, 1));
  EXPECT_EQ(part.velocity, slice(full.velocity, begin, n, 3));
  EXPECT_EQ(part.potential, slice(full.potential, begin, n, 1));
  EXPECT_EQ(part.acceleration, slice(full.acceleration, begin, n, 3));
}

bool all_finite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

void expect_counts(const SnapshotInfo& info, int type, std::uint64_t n) {
  ASSERT_EQ(info.file_counts.size(), 1u);
  ASSERT_EQ(info.file_counts[0].size(), 6u);
  for (int t = 0; t < 6; ++t) EXPECT_EQ(info.file_counts[0][t], t == type ? n : 0u) << "type " << t;
  EXPECT_EQ(info.total(type), n);
}

}  // namespace

TEST(GadgetBinary, DetectsRealFiles) {
  EXPECT_TRUE(is_gadget_binary(data_file("pot_acc.format2.gadget2")));
  EXPECT_TRUE(is_gadget_binary(data_file("gassphere_littleendian.gadget2")));
  EXPECT_TRUE(is_gadget_binary(data_file("gadget_no_mass")));
  EXPECT_FALSE(is_gadget_binary((shared_data() / "README.md").string()));
  EXPECT_FALSE(is_gadget_binary("/nonexistent/snapshot"));
}

TEST(GadgetBinary, Format2WithPotentialAndAcceleration) {
  const auto reader = open_gadget_binary({data_file("pot_acc.format2.gadget2")});
  const SnapshotInfo& info = reader->info();
  EXPECT_EQ(info.format, "gadget-binary-2");
  expect_counts(info, 4, 1000);
  EXPECT_TRUE(info.has_ids);
  EXPECT_TRUE(info.has_velocities);
  EXPECT_TRUE(info.has_potential);
  EXPECT_TRUE(info.has_acceleration);
  EXPECT_FALSE(info.periodic);  // BoxSize 0
  EXPECT_EQ(info.box_size[0], 0.0);
  EXPECT_NEAR(info.time, 5e-4, 1e-9);  // a float-rounded value stored as double
  EXPECT_FALSE(info.comoving);
  EXPECT_FALSE(info.cosmology.has_value());
  EXPECT_FALSE(info.units.known());
  EXPECT_EQ(info.mass_table, std::vector<double>(6, 0.0));

  const ParticleSet p = read_all(*reader, 0, 4);
  ASSERT_EQ(p.size(), 1000u);
  ASSERT_EQ(p.position.size(), 3000u);
  ASSERT_EQ(p.velocity.size(), 3000u);
  ASSERT_EQ(p.acceleration.size(), 3000u);
  ASSERT_EQ(p.potential.size(), 1000u);
  ASSERT_EQ(p.id.size(), 1000u);
  EXPECT_TRUE(all_finite(p.position));
  EXPECT_TRUE(all_finite(p.velocity));
  EXPECT_TRUE(all_finite(p.acceleration));
  // Stored as float32: the first particle and its data, as written.
  EXPECT_EQ(p.position[0], double(-0.02657494880259037f));
  EXPECT_EQ(p.position[2], double(-0.006172948982566595f));
  EXPECT_EQ(p.velocity[0], double(0.10411358624696732f));
  EXPECT_EQ(p.acceleration[0], double(100.51215362548828f));
  EXPECT_EQ(p.potential[0], double(-8.796567916870117f));
  EXPECT_EQ(p.id[0], 374u);
  for (double m : p.mass) ASSERT_EQ(m, double(1e-8f));  // per-particle MASS block
  for (double phi : p.potential) ASSERT_LT(phi, 0.0);
  // IDs are a permutation of 1..1000.
  std::vector<std::uint64_t> ids = p.id, expected(1000);
  std::sort(ids.begin(), ids.end());
  std::iota(expected.begin(), expected.end(), 1u);
  EXPECT_EQ(ids, expected);

  expect_range_matches(*reader, 4, 0, 1);
  expect_range_matches(*reader, 4, 137, 400);
  expect_range_matches(*reader, 4, 999, 1);

  // Only the requested fields are filled.
  ParticleSet minimal;
  reader->read(0, 4, 10, 5, FieldSelection{}, minimal);
  EXPECT_EQ(minimal.position.size(), 15u);
  EXPECT_EQ(minimal.mass.size(), 5u);
  EXPECT_TRUE(minimal.id.empty());
  EXPECT_TRUE(minimal.velocity.empty());
  EXPECT_TRUE(minimal.potential.empty());
  EXPECT_TRUE(minimal.acceleration.empty());
}

TEST(GadgetBinary, Format1WithZeroTotalCounts) {
  const auto reader = open_gadget_binary({data_file("gassphere_littleendian.gadget2")});
  const SnapshotInfo& info = reader->info();
  EXPECT_EQ(info.format, "gadget-binary-1");
  expect_counts(info, 0, 1472);  // npartTotal is 0: the counts come from npart
  EXPECT_TRUE(info.has_ids);
  EXPECT_TRUE(info.has_velocities);
  EXPECT_FALSE(info.has_potential);
  EXPECT_FALSE(info.has_acceleration);
  EXPECT_FALSE(info.periodic);
  EXPECT_FALSE(info.comoving);

  const ParticleSet p = read_all(*reader, 0, 0);
  ASSERT_EQ(p.size(), 1472u);
  EXPECT_TRUE(all_finite(p.position));
  EXPECT_TRUE(all_finite(p.velocity));
  EXPECT_EQ(p.position[0], double(-0.07133729010820389f));
  // Equal-mass sphere of total mass 1, IDs 1..1472 in order.
  double total = 0;
  for (double m : p.mass) {
    ASSERT_EQ(m, double(0.0006793478387407959f));
    total += m;
  }
  EXPECT_NEAR(total, 1.0, 1e-6);
  for (std::size_t i = 0; i < p.id.size(); ++i) ASSERT_EQ(p.id[i], i + 1);

  expect_range_matches(*reader, 0, 0, 1472);
  expect_range_matches(*reader, 0, 500, 321);
}

TEST(GadgetBinary, Format2MassFromTable) {
  const auto reader = open_gadget_binary({data_file("gadget_no_mass")});
  const SnapshotInfo& info = reader->info();
  EXPECT_EQ(info.format, "gadget-binary-2");
  expect_counts(info, 0, 9030);
  EXPECT_TRUE(info.has_ids);
  EXPECT_TRUE(info.has_velocities);
  EXPECT_FALSE(info.has_potential);
  EXPECT_FALSE(info.has_acceleration);
  ASSERT_EQ(info.mass_table.size(), 6u);
  EXPECT_EQ(info.mass_table[0], 1.0506895700701513e-11);

  const ParticleSet p = read_all(*reader, 0, 0);
  ASSERT_EQ(p.size(), 9030u);
  EXPECT_TRUE(all_finite(p.position));
  for (double m : p.mass) ASSERT_EQ(m, info.mass_table[0]);
  EXPECT_EQ(p.position[0], double(-2.0604116916656494f));
  EXPECT_EQ((std::vector<std::uint64_t>(p.id.begin(), p.id.begin() + 3)),
            (std::vector<std::uint64_t>{4695, 5968, 5404}));
  // The IDs in this file are not unique (1988 distinct values in 3716..6591).
  for (auto id : p.id) {
    ASSERT_GE(id, 3716u);
    ASSERT_LE(id, 6591u);
  }

  expect_range_matches(*reader, 0, 4000, 2500);
  expect_range_matches(*reader, 0, 9029, 1);
}

// ---- Synthetic files --------------------------------------------------------------------------

namespace {

// Writes values big-endian, so that on the (little-endian) test machines the reader must swap.
class BigEndianWriter {
 public:
  template <typename T>
  void put(T value) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &value, sizeof(T));
    if constexpr (std::endian::native == std::endian::little) std::reverse(b, b + sizeof(T));
    bytes_.insert(bytes_.end(), b, b + sizeof(T));
  }
  // A Fortran record: marker, data written by `body`, marker.
  template <typename Body>
  void record(Body body) {
    const std::size_t start = bytes_.size();
    put<std::uint32_t>(0);
    body();
    const auto size = static_cast<std::uint32_t>(bytes_.size() - start - 4);
    BigEndianWriter marker;
    marker.put(size);
    std::copy(marker.bytes_.begin(), marker.bytes_.end(), bytes_.begin() + static_cast<std::ptrdiff_t>(start));
    put(size);
  }
  std::vector<unsigned char>& bytes() { return bytes_; }

 private:
  std::vector<unsigned char> bytes_;
};

// Two types: type 0 with 2 particles from the mass table, type 1 with 3 particles in the MASS block, so
// that type 1 starts at particle 2 of POS/VEL/ID but at entry 0 of MASS. float32 POS/VEL, uint64 IDs,
// float64 masses.
struct Synthetic {
  static constexpr std::uint32_t n0 = 2, n1 = 3;
  static constexpr double table_mass0 = 2.5;
  std::vector<float> pos, vel;
  std::vector<std::uint64_t> ids;
  std::vector<double> masses1{0.25, 0.5, 0.75};
  std::int32_t num_files = 1;

  Synthetic() {
    for (std::uint32_t i = 0; i < 3 * (n0 + n1); ++i) {
      pos.push_back(0.5f * float(i) + 0.25f);
      vel.push_back(-1.0f * float(i));
    }
    for (std::uint32_t i = 0; i < n0 + n1; ++i) ids.push_back((std::uint64_t{1} << 40) + 7 * i);
  }

  std::vector<unsigned char> bytes() const {
    BigEndianWriter w;
    w.record([&] {
      const std::uint32_t npart[6] = {n0, n1, 0, 0, 0, 0};
      const double mass[6] = {table_mass0, 0, 0, 0, 0, 0};
      for (auto n : npart) w.put(n);
      for (auto m : mass) w.put(m);
      w.put(0.5);  // time
      w.put(1.0);  // redshift
      w.put<std::int32_t>(0);
      w.put<std::int32_t>(0);
      for (auto n : npart) w.put(n);  // npartTotal
      w.put<std::int32_t>(0);
      w.put(num_files);
      w.put(100.0);  // BoxSize
      w.put(0.3);    // Omega0
      w.put(0.7);    // OmegaLambda
      w.put(0.7);    // HubbleParam
      w.put<std::int32_t>(0);
      w.put<std::int32_t>(0);
      for (int t = 0; t < 6; ++t) w.put<std::uint32_t>(0);  // npartTotalHighWord
      while (w.bytes().size() < 4 + 256) w.put<std::uint8_t>(0);
    });
    w.record([&] {
      for (float x : pos) w.put(x);
    });
    w.record([&] {
      for (float v : vel) w.put(v);
    });
    w.record([&] {
      for (auto id : ids) w.put(id);
    });
    w.record([&] {
      for (double m : masses1) w.put(m);
    });
    return w.bytes();
  }
};

fs::path write_temp(const std::string& name, const std::vector<unsigned char>& bytes) {
  const fs::path p = fs::path(testing::TempDir()) / ("phew_test_gadget_binary_" + name);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(out.good());
  return p;
}

// Expects opening `bytes` as a snapshot to fail with Error(input) whose message contains `what`.
void expect_input_error(const std::string& name, const std::vector<unsigned char>& bytes, const std::string& what) {
  const fs::path p = write_temp(name, bytes);
  try {
    open_gadget_binary({p.string()});
    ADD_FAILURE() << name << ": no error";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::input) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << "names the file: " << e.what();
  }
  fs::remove(p);
}

}  // namespace

TEST(GadgetBinary, SyntheticBigEndianFormat1) {
  const Synthetic s;
  const fs::path p = write_temp("big_endian", s.bytes());
  ASSERT_TRUE(is_gadget_binary(p.string()));
  const auto reader = open_gadget_binary({p.string()});
  const SnapshotInfo& info = reader->info();
  EXPECT_EQ(info.format, "gadget-binary-1");
  EXPECT_EQ(info.file_counts, (std::vector<std::vector<std::uint64_t>>{{2, 3, 0, 0, 0, 0}}));
  EXPECT_EQ(info.mass_table, (std::vector<double>{2.5, 0, 0, 0, 0, 0}));
  EXPECT_EQ(info.box_size, (std::array<double, 3>{100, 100, 100}));
  EXPECT_TRUE(info.periodic);
  EXPECT_EQ(info.time, 0.5);
  EXPECT_EQ(info.redshift, 1.0);
  EXPECT_TRUE(info.comoving);
  ASSERT_TRUE(info.cosmology.has_value());
  EXPECT_EQ(info.cosmology->omega_m, 0.3);
  EXPECT_EQ(info.cosmology->omega_lambda, 0.7);
  EXPECT_EQ(info.cosmology->hubble_param, 0.7);
  EXPECT_FALSE(info.units.known());
  EXPECT_TRUE(info.has_ids);
  EXPECT_TRUE(info.has_velocities);
  EXPECT_FALSE(info.has_potential);
  EXPECT_FALSE(info.has_acceleration);

  const FieldSelection fields{true, true, false, false};
  ParticleSet t0, t1;
  reader->read(0, 0, 0, 2, fields, t0);
  reader->read(0, 1, 0, 3, fields, t1);
  EXPECT_EQ(t0.position, std::vector<double>(s.pos.begin(), s.pos.begin() + 6));
  // A cosmological file at a = 0.5 stores Gadget's u; the reader gives peculiar velocities, u sqrt(a).
  std::vector<double> v_pec;
  for (float u : s.vel) v_pec.push_back(double(u) * std::sqrt(0.5));
  EXPECT_EQ(t0.velocity, std::vector<double>(v_pec.begin(), v_pec.begin() + 6));
  EXPECT_EQ(t0.id, std::vector<std::uint64_t>(s.ids.begin(), s.ids.begin() + 2));
  EXPECT_EQ(t0.mass, (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(t1.position, std::vector<double>(s.pos.begin() + 6, s.pos.end()));
  EXPECT_EQ(t1.velocity, std::vector<double>(v_pec.begin() + 6, v_pec.end()));
  EXPECT_EQ(t1.id, std::vector<std::uint64_t>(s.ids.begin() + 2, s.ids.end()));
  EXPECT_EQ(t1.mass, s.masses1);

  // A range inside type 1: POS/ID offset 2 + 1, MASS offset 1.
  ParticleSet mid;
  reader->read(0, 1, 1, 2, fields, mid);
  EXPECT_EQ(mid.position, std::vector<double>(s.pos.begin() + 9, s.pos.end()));
  EXPECT_EQ(mid.id, std::vector<std::uint64_t>(s.ids.begin() + 3, s.ids.end()));
  EXPECT_EQ(mid.mass, (std::vector<double>{0.5, 0.75}));
  fs::remove(p);
}

TEST(GadgetBinary, TruncatedFileIsAnInputError) {
  const auto bytes = Synthetic().bytes();
  // Cut inside the last (MASS) block, and inside the POS block.
  expect_input_error("cut_mass", {bytes.begin(), bytes.end() - 10}, "MASS");
  expect_input_error("cut_pos", {bytes.begin(), bytes.begin() + 264 + 20}, "POS");
}

TEST(GadgetBinary, InconsistentBlocksAreInputErrors) {
  const auto bytes = Synthetic().bytes();
  // Trailing marker of POS (4 + 60 bytes after the header record) disagrees with the leading one.
  auto bad_marker = bytes;
  bad_marker[264 + 4 + 60 + 3] ^= 1;
  expect_input_error("bad_marker", bad_marker, "block POS");

  // A POS record whose size fits neither float nor double for 5 particles.
  BigEndianWriter w;
  const auto head = std::vector<unsigned char>(bytes.begin(), bytes.begin() + 264);
  w.bytes() = head;
  w.record([&] {
    for (int i = 0; i < 14; ++i) w.put(1.0f);
  });
  expect_input_error("bad_size", w.bytes(), "block POS has 56 bytes");

  // The header announces two files; only one is given.
  Synthetic two;
  two.num_files = 2;
  expect_input_error("num_files", two.bytes(), "2 files");
}

TEST(GadgetBinary, UnreadableFileIsAnIoError) {
  try {
    open_gadget_binary({"/nonexistent/snapshot"});
    ADD_FAILURE() << "no error";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::io) << e.what();
  }
}
