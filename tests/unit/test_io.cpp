// The HDF5 wrapper, atomic outputs and manifests.
#include <phew/core/error.hpp>
#include <phew/io/atomic_output.hpp>
#include <phew/io/chunk_codec.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/io/h5.hpp>
#include <phew/manifest/fingerprint.hpp>
#include <phew/manifest/manifest.hpp>
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include <unistd.h>

namespace phew {
namespace {

namespace fs = std::filesystem;

using H5 = test::TempDir;

TEST_F(H5, WritesAndReadsDatasetsAndAttributes) {
  const mpi::Comm comm;
  {
    io::File f = io::File::create(path("a.h5"), comm);
    f.create_group("/g");
    const std::vector<double> v{1, 2, 3, 4, 5, 6};
    f.write<double>("/g/table", {2, 3}, v);
    f.write_rows<float, double>("/g/rows", {2, 3}, 0, v);
    f.write_attribute("/g", "name", "hello");
    f.write_attribute<std::int64_t>("/g", "count", 7);
    f.write_attribute(std::string("/"), "big", std::string(200000, 'x'));  // beyond the 64 KiB compact limit
  }
  const io::File f = io::File::open_read(path("a.h5"));
  EXPECT_TRUE(f.has("/g/table"));
  EXPECT_FALSE(f.has("/nope/table"));
  EXPECT_EQ(f.dataset_info("/g/rows").describe(), "float32 [2,3]");
  EXPECT_EQ(f.read<double>("/g/table"), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.read_rows<double>("/g/table", 1, 1), (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(f.read_attribute_string("/g", "name"), "hello");
  EXPECT_EQ(f.read_attribute_scalar<std::int64_t>("/g", "count"), 7);
  EXPECT_EQ(f.read_attribute_string("/", "big").size(), 200000u);
}

TEST_F(H5, RefusesFloatsAsIntegersAndNamesMissingDatasets) {
  const mpi::Comm comm;
  {
    io::File f = io::File::create(path("b.h5"), comm);
    f.write<double>("/x", std::vector<double>{1.5});
  }
  const io::File f = io::File::open_read(path("b.h5"));
  try {
    f.read<std::int64_t>("/x");
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("integers are expected"), std::string::npos);
  }
  try {
    f.read<double>("/y");
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(std::string(e.what()), path("b.h5") + ": missing dataset /y");
  }
}

TEST_F(H5, NotHdf5AndMissingFilesAreReported) {
  std::ofstream(path("text.h5")) << "hello";
  try {
    io::File::open_read(path("text.h5"));
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::input);
  }
  try {
    io::File::open_read(path("missing.h5"));
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::io);
  }
}

// Byte k of every element together, the bytes past the last whole element left at the end (HDF5's
// shuffle filter), and a chunk coded and decoded back; a stream cut short or of the wrong length is
// refused, not read as zeros.
TEST(ChunkCodec, ShufflesAsHdf5AndRoundTrips) {
  std::vector<std::byte> in(11), out(11), back(11);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>(i);
  io::shuffle_bytes(in, 4, out);  // two whole elements (0-3, 4-7) and three bytes left over
  const std::vector<int> want{0, 4, 1, 5, 2, 6, 3, 7, 8, 9, 10};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(static_cast<int>(out[i]), want[i]) << i;
  io::unshuffle_bytes(out, 4, back);
  EXPECT_EQ(back, in);
  // Every element size (the columns' 2, 4 and 8 have their own loops) against the definition, with
  // bytes left over and without.
  for (const std::size_t size : {1, 2, 3, 4, 5, 8, 12}) {
    for (const std::size_t bytes : {std::size_t{0}, size * 37, size * 37 + 1, size * 37 + size - 1}) {
      std::vector<std::byte> data(bytes), shuffled(bytes), restored(bytes);
      for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<std::byte>((i * 131 + 7) % 251);
      io::shuffle_bytes(data, size, shuffled);
      const std::size_t n = size > 1 ? bytes / size : 0;
      for (std::size_t i = 0; i < bytes; ++i) {
        const std::size_t want_from = i < n * size ? (i % n) * size + i / n : i;
        ASSERT_EQ(shuffled[i], data[want_from]) << "element size " << size << ", " << bytes << " bytes, byte " << i;
      }
      io::unshuffle_bytes(shuffled, size, restored);
      EXPECT_EQ(restored, data) << "element size " << size << ", " << bytes << " bytes";
    }
  }

  std::vector<std::byte> chunk(4000), scratch, decoded(chunk.size());
  std::mt19937_64 rng(7);
  for (std::size_t i = 0; i < chunk.size(); i += 8) {
    const std::uint64_t v = rng() % 1000;  // small integers: shuffled, the high bytes are zeros
    std::memcpy(&chunk[i], &v, 8);
  }
  const std::vector<std::byte> stored = io::encode_chunk(chunk, 8, true, 1, scratch);
  ASSERT_FALSE(stored.empty());
  EXPECT_LT(stored.size(), chunk.size() / 2);
  ASSERT_TRUE(io::decode_chunk(stored, 8, true, true, decoded, scratch));
  EXPECT_EQ(decoded, chunk);
  const std::span<const std::byte> cut(stored.data(), stored.size() - 9);
  EXPECT_FALSE(io::decode_chunk(cut, 8, true, true, decoded, scratch));
  std::vector<std::byte> longer(chunk.size() + 8);
  EXPECT_FALSE(io::decode_chunk(stored, 8, true, true, longer, scratch));
}

// Chunks coded on threads (h5_chunks.cpp) against HDF5's own filter pipeline (one thread): the same
// file, byte for byte, and the same values read back on either path, whole, from rows that cut chunks,
// and converted to another type.
TEST_F(H5, ChunksCodedOnThreadsAreHdf5sOwn) {
  const mpi::Comm comm;
  constexpr std::uint64_t kRows = 1000;
  std::vector<std::int64_t> table(kRows * 3);
  std::vector<std::uint32_t> labels(kRows);
  std::vector<float> noisy(kRows);
  std::mt19937_64 rng(11);
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<std::int64_t>(i / 7) - 300;
  for (std::size_t i = 0; i < kRows; ++i) {
    labels[i] = static_cast<std::uint32_t>(i / 90);
    noisy[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
  }
  auto write = [&](const std::string& name, int threads) {
    io::set_io_threads(threads);
    io::File f = io::File::create(path(name), comm);
    f.write_rows<std::int64_t, std::int64_t>("/table", {kRows, 3}, 0, table, io::Storage{64, 1});
    f.write_rows<std::uint32_t, std::uint32_t>("/labels", {kRows}, 0, labels, io::Storage{100, 6});
    f.write_rows<float, float>("/noisy", {kRows}, 0, noisy, io::Storage{128, 1});
    f.write_rows<float, double>("/converted", {kRows}, 0, std::vector<double>(kRows, 0.5), io::Storage{128, 1});
    f.close();
  };
  write("one.h5", 1);
  write("three.h5", 3);
  auto bytes = [&](const std::string& name) {
    std::ifstream in(path(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes("one.h5"), bytes("three.h5"));

  for (const int threads : {1, 3}) {
    io::set_io_threads(threads);
    const io::File f = io::File::open_read(path("three.h5"));
    EXPECT_EQ(f.read<std::int64_t>("/table"), table);
    EXPECT_EQ(f.read<std::uint32_t>("/labels"), labels);
    EXPECT_EQ(f.read<float>("/noisy"), noisy);
    EXPECT_EQ(f.read<double>("/converted"), std::vector<double>(kRows, 0.5));
    const auto rows = f.read_rows<std::int64_t>("/table", 63, 130);  // from the end of chunk 0 into chunk 3
    EXPECT_EQ(rows, std::vector<std::int64_t>(table.begin() + 63 * 3, table.begin() + 193 * 3));
    const auto wide = f.read_rows<std::int64_t>("/labels", 150, 850);  // converted, up to the last row
    for (std::size_t i = 0; i < wide.size(); ++i) ASSERT_EQ(wide[i], labels[150 + i]) << i;
  }
  io::set_io_threads(1);
}

// The binary search of an ascending dataset against std::lower_bound: values below, above, on and
// between its rows, over more rows than it reads at once, stored contiguous and in compressed chunks.
TEST_F(H5, FirstRowNotBelowIsLowerBound) {
  const mpi::Comm comm;
  std::vector<std::int64_t> v(200003);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 3 * static_cast<std::int64_t>(i / 2);  // runs of two
  {
    io::File f = io::File::create(path("sorted.h5"), comm);
    f.write_rows<std::int64_t, std::int64_t>("/plain", {v.size()}, 0, v);
    f.write_rows<std::int64_t, std::int64_t>("/chunked", {v.size()}, 0, v, io::Storage{1 << 16, 1});
    f.close();
  }
  const io::File f = io::File::open_read(path("sorted.h5"));
  for (const std::string name : {"/plain", "/chunked"})
    for (const std::int64_t x : {std::int64_t{-5}, std::int64_t{0}, std::int64_t{1}, std::int64_t{3},
                                 std::int64_t{98304}, std::int64_t{150001}, std::int64_t{299997}, std::int64_t{299999},
                                 std::int64_t{300004}, std::int64_t{1} << 40})
      EXPECT_EQ(f.first_row_not_below<std::int64_t>(name, x),
                static_cast<std::uint64_t>(std::lower_bound(v.begin(), v.end(), x) - v.begin()))
          << name << " " << x;
}

// A damaged chunk is an I/O error on either path, never values read as zeros.
TEST_F(H5, ADamagedChunkIsAnIoError) {
  const mpi::Comm comm;
  std::vector<std::int64_t> v(1 << 16);
  std::mt19937_64 rng(3);
  for (std::int64_t& x : v) x = static_cast<std::int64_t>(rng());  // incompressible: the chunks fill the file
  {
    io::File f = io::File::create(path("d.h5"), comm);
    f.write_rows<std::int64_t, std::int64_t>("/v", {v.size()}, 0, v, io::Storage{4096, 1});
    f.close();
  }
  {
    std::fstream file(path("d.h5"), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(fs::file_size(path("d.h5")) / 2));
    const std::string junk(64, 'x');
    file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  for (const int threads : {1, 3}) {
    io::set_io_threads(threads);
    const io::File f = io::File::open_read(path("d.h5"));
    try {
      f.read<std::int64_t>("/v");
      ADD_FAILURE() << threads << " threads read a damaged chunk";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::io) << e.what();
    }
  }
  io::set_io_threads(1);
}

using Atomic = test::TempDir;

TEST_F(Atomic, UncommittedOutputLeavesNothingAndKeepsThePreviousFile) {
  const mpi::Comm comm;
  std::ofstream(path("out.h5")) << "previous";
  {
    io::AtomicOutput out(path("out.h5"), comm);
    std::ofstream(out.temp_path()) << "half";
    EXPECT_NE(out.temp_path(), path("out.h5"));
  }  // no commit: as if the run failed
  std::ifstream in(path("out.h5"));
  std::string s;
  in >> s;
  EXPECT_EQ(s, "previous");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(Atomic, ACommitMovesEveryFileIntoPlaceTogether) {
  const mpi::Comm comm;
  std::ofstream(path("out.h5")) << "previous";
  std::ofstream(path("out.h5.json")) << "{\"old\": 1}";
  {
    io::AtomicOutput out(path("out.h5"), comm);
    std::ofstream(out.temp_path()) << "new";
    io::Commit commit;
    commit.add(out.temp_path(), path("out.h5"));
    out.hand_over();
    commit.add_text(path("out.h5.json"), "{\"new\": 1}");
    commit.add_text(path("out.h5.txt"), "side");
    // Before the commit: the old pair is whole, the new files are hidden temporary files.
    std::string s;
    std::ifstream(path("out.h5")) >> s;
    EXPECT_EQ(s, "previous");
    EXPECT_FALSE(fs::exists(path("out.h5.txt")));
    commit.apply(comm);
  }
  auto read = [&](const std::string& name) {
    std::string s;
    std::ifstream(path(name)) >> s;
    return s;
  };
  EXPECT_EQ(read("out.h5"), "new");
  EXPECT_EQ(read("out.h5.json"), "{\"new\":");
  EXPECT_EQ(read("out.h5.txt"), "side");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 3);  // no temporary left
}

TEST_F(Atomic, AnUnappliedCommitRemovesItsTemporaryFiles) {
  const mpi::Comm comm;
  {
    io::Commit commit;
    commit.add_text(path("a.txt"), "a");
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 0);
}

TEST_F(Atomic, StaleTemporaryFilesOfDeadRunsAreRemoved) {
  const mpi::Comm comm;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  // A dead process of this host (PID 2^22 - 1 is beyond Linux's default pid_max), an old-style name,
  // a live one (our parent) and another host's: only the dead ones of this host go.
  const std::string dead = path(".out.h5.partial-" + std::string(host) + "-4194303");
  const std::string old_style = path(".out.h5.partial-4194302");
  const std::string alive = path(".out.h5.partial-" + std::string(host) + "-" + std::to_string(getppid()));
  const std::string other = path(".out.h5.partial-elsewhere-4194303");
  for (const auto& p : {dead, old_style, alive, other}) std::ofstream(p) << "x";
  { io::AtomicOutput out(path("out.h5"), comm); }
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(old_style));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(alive));
}

// The temporary name is short whatever the output's (Open MPI lengthens it), and names its owner: a
// dead process's files go from the folder whatever output they were for, a live one's stay.
TEST_F(Atomic, TemporaryNamesAreShortAndDeadOnesOfAnyOutputAreRemoved) {
  const mpi::Comm comm;
  const std::string long_name = path(std::string(240, 'g') + ".h5");
  std::string owner;
  {
    io::AtomicOutput out(long_name, comm);
    const std::string name = fs::path(out.temp_path()).filename().string();
    EXPECT_EQ(name.rfind(".phew-", 0), 0u);
    EXPECT_LT(name.size(), 40u);
    owner = name.substr(0, name.rfind('-', name.rfind('-') - 1));  // .phew-HOST
  }
  const std::string dead = path(owner + "-4194303-abcdef");
  const std::string alive = path(owner + "-" + std::to_string(getppid()) + "-abcdef");
  const std::string other_host = path(".phew-00000000-4194303-abcdef");
  const std::string old_manifest = path(".other.h5.json.partial-4194302");
  for (const auto& p : {dead, alive, other_host, old_manifest}) std::ofstream(p) << "x";
  io::remove_stale_temporaries(path("out.h5"));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(old_manifest));
  EXPECT_TRUE(fs::exists(alive));
  EXPECT_EQ(fs::exists(other_host), owner != ".phew-00000000");  // another host's stays
}

TEST_F(Atomic, MissingFolderIsAnIoError) {
  const mpi::Comm comm;
  try {
    io::AtomicOutput out(path("no/such/dir/out.h5"), comm);
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::io);
  }
}

using Manifest = test::TempDir;

TEST_F(Manifest, FingerprintsChangeWithContent) {
  std::ofstream(path("f")) << "abc";
  const auto a = manifest::fingerprint_file(path("f"));
  std::ofstream(path("f")) << "abd";
  EXPECT_NE(a, manifest::fingerprint_file(path("f")));
  EXPECT_EQ(a.rfind("xxh3-128:", 0), 0u);
}

TEST_F(Manifest, ChecksKindAndStaleness) {
  std::ofstream(path("x.h5")) << "data";
  std::ofstream(path("snap")) << "particles";
  manifest::Builder b("tool-a", {"tool-a", "in"}, 1);
  b.set_kind("grid");
  b.add_input(manifest::external_input(path("snap"), "snapshot"));
  b.parameter("n", 3, "cells");
  const auto m = b.finish(path("x.h5"), 4, manifest::fingerprint_file(path("x.h5")));
  std::ofstream(path("x.h5.json")) << m.dump();

  const auto in = manifest::check_phew_input(path("x.h5"), {"grid"});
  EXPECT_EQ(in.manifest_id, m["id"]);
  EXPECT_EQ(in.provenance.size(), 1u);
  EXPECT_THROW(manifest::check_phew_input(path("x.h5"), {"patches"}), core::Error);  // wrong stage
  std::ofstream(path("x.h5")) << "changed";
  EXPECT_THROW(manifest::check_phew_input(path("x.h5"), {"grid"}), core::Error);  // stale
  fs::remove(path("x.h5.json"));
  EXPECT_THROW(manifest::check_phew_input(path("x.h5"), {"grid"}), core::Error);  // no manifest
}

// A manifest without outputs or inputs is named as such, not compared as an empty fingerprint.
TEST_F(Manifest, OutputsAndInputsMustBeRecorded) {
  std::ofstream(path("x.h5")) << "data";
  std::ofstream(path("snap")) << "particles";
  manifest::Builder b("tool-a", {"tool-a"}, 1);
  b.set_kind("grid");
  b.add_input(manifest::external_input(path("snap"), "snapshot"));
  const auto good = b.finish(path("x.h5"), 4, manifest::fingerprint_file(path("x.h5")));
  auto message = [&](const manifest::Json& m) -> std::string {
    std::ofstream(path("x.h5.json")) << m.dump();
    try {
      manifest::check_phew_input(path("x.h5"), {"grid"});
      return "accepted";
    } catch (const core::Error& e) {
      return e.kind() == core::ErrorKind::input ? e.what() : "not an input error";
    }
  };
  EXPECT_EQ(message(good), "accepted");
  for (const manifest::Json& outputs : {manifest::Json::array(), manifest::Json(nullptr)}) {
    manifest::Json m = good;
    m["outputs"] = outputs;
    EXPECT_NE(message(m).find("x.h5.json: manifest field outputs is missing, empty or not a list"), std::string::npos)
        << message(m);
  }
  for (const manifest::Json& inputs : {manifest::Json::object(), manifest::Json::array(), manifest::Json(nullptr)}) {
    manifest::Json m = good;
    m["inputs"] = inputs;
    EXPECT_NE(message(m).find("manifest field inputs is missing, empty or not a list"), std::string::npos)
        << message(m);
  }
  manifest::Json m = good;
  m["inputs"][0].erase("fingerprint");
  EXPECT_NE(message(m).find("inputs[0].fingerprint is missing"), std::string::npos) << message(m);
}

// Malformed manifests (the fuzzer's first finding: a JSON array) are bad input, never a library exception.
TEST_F(Manifest, MalformedManifestsAreInputErrors) {
  std::ofstream(path("x.h5")) << "data";
  for (const char* text : {"[]", "[1, {\"kind\": 3}]", "{\"kind\": 3}", "{\"schema\": []}", "7", "{\"inputs\": 5}",
                           "{\"provenance\": [1, {\"inputs\": [2, {\"kind\": 4}]}]}", "{"}) {
    std::ofstream(path("x.h5.json")) << text;
    auto input_error = [&](auto&& f) {
      try {
        f();
        return false;
      } catch (const core::Error& e) {
        return e.kind() == core::ErrorKind::input;
      }
    };
    EXPECT_TRUE(input_error([&] { manifest::check_phew_input(path("x.h5"), {"grid"}); })) << text;
    EXPECT_TRUE(input_error([&] { manifest::recorded_input(path("x.h5"), 0); })) << text;
    EXPECT_TRUE(input_error([&] { manifest::snapshot_inputs_in_chain(path("x.h5"), {path("x.h5")}); })) << text;
    // kind_of and made_from answer "none" for a well-formed object with odd fields, else throw Error.
    EXPECT_TRUE(input_error([&] { manifest::kind_of(path("x.h5")); }) || manifest::kind_of(path("x.h5")).empty())
        << text;
    EXPECT_TRUE(input_error([&] { manifest::made_from(path("x.h5"), "f"); }) || !manifest::made_from(path("x.h5"), "f"))
        << text;
  }
}

TEST_F(Manifest, ProvenanceChainsGrow) {
  std::ofstream(path("x.h5")) << "data";
  std::ofstream(path("snap")) << "particles";
  manifest::Builder a("tool-a", {"tool-a"}, 1);
  a.set_kind("grid");
  a.add_input(manifest::external_input(path("snap"), "snapshot"));
  std::ofstream(path("x.h5.json")) << a.finish(path("x.h5"), 4, manifest::fingerprint_file(path("x.h5"))).dump();
  manifest::Builder b("tool-b", {"tool-b"}, 2);
  b.set_kind("patches");
  b.add_input(manifest::check_phew_input(path("x.h5"), {"grid"}));
  const auto m = b.finish(path("y.h5"), 0, "");
  ASSERT_EQ(m["provenance"].size(), 2u);
  EXPECT_EQ(m["provenance"][0]["tool"]["name"], "tool-a");
  EXPECT_EQ(m["provenance"][1]["tool"]["name"], "tool-b");
  EXPECT_EQ(m["provenance"][1]["inputs"][0]["manifest_id"], m["inputs"][0]["manifest_id"]);
  EXPECT_EQ(m["provenance"][1]["inputs"][0]["fingerprint"], m["inputs"][0]["fingerprint"]);
  EXPECT_EQ(b.finish(path("y.h5"), 0, "")["id"], m["id"]);  // stable across calls
}

}  // namespace
}  // namespace phew
