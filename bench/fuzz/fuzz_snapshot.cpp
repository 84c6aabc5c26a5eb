// libFuzzer target: the snapshot readers written in this project (Gadget binary SnapFormat 1 and 2,
// either byte order; the RAMSES particle files). The input becomes a file the reader opens; every
// particle it declares is read with all fields. A phew::Error (one clear line) is a correct answer to a
// bad file; a crash, a sanitizer report, a hang or any other exception is a finding.
//
// PHEW_FUZZ_FORMAT=gadget (default): the input is a whole Gadget binary snapshot.
// PHEW_FUZZ_FORMAT=gadget-pieces: the input is a two-piece Gadget binary snapshot, NAME.0 and NAME.1: a
// little-endian uint32 L, then L bytes of piece 0, then piece 1 (the pieces' headers must agree,
// hold NumPart_Total together, and no piece may repeat another).
// PHEW_FUZZ_FORMAT=ramses: the input replaces part_00002.out00001 of a copy of the RAMSES run in
// ../shared/data (PHEW_FUZZ_RAMSES names the output folder to copy).
#include <phew/core/error.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/snapshot.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

std::string g_target;  // the file the input is written to
std::string g_second;  // gadget-pieces: the file of the input's second piece
std::string g_open;    // what is opened

void read_everything(const std::string& path) {
  const auto reader = phew::snapshot::open_snapshot({path});
  const phew::particles::SnapshotInfo& info = reader->info();
  std::vector<int> types;
  for (int t = 0; t < info.num_types(); ++t)
    if (info.total(t) > 0) types.push_back(t);
  const std::uint64_t n = info.total(types);
  if (n > 4'000'000) return;  // a header may declare anything; the reader refuses short files itself
  phew::particles::FieldSelection all{true, info.has_velocities, info.has_potential, info.has_acceleration};
  // As the tools read: one rank's share, whose IDs are checked to be unique.
  (void)phew::particles::read_share(*reader, types, all, phew::mpi::Comm());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  static phew::mpi::Environment env(*argc, *argv);
  const char* format = std::getenv("PHEW_FUZZ_FORMAT");
  const fs::path dir = fs::temp_directory_path() / ("phew-fuzz-" + std::to_string(getpid()));
  fs::create_directories(dir);
  if (format && std::string(format) == "ramses") {
    const char* src = std::getenv("PHEW_FUZZ_RAMSES");
    const fs::path from = src ? src : "../shared/data/ramses-cosmo-L20-N32/output_00002";
    fs::copy(from, dir / "output_00002", fs::copy_options::recursive);
    g_target = (dir / "output_00002" / "part_00002.out00001").string();
    g_open = (dir / "output_00002").string();
  } else if (format && std::string(format) == "gadget-pieces") {
    g_target = g_open = (dir / "snap.0").string();
    g_second = (dir / "snap.1").string();
  } else {
    g_target = g_open = (dir / "snap.gadget").string();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::size_t first = size;  // bytes of the first file
  if (!g_second.empty()) {
    std::uint32_t length = 0;
    for (std::size_t i = 0; i < 4 && i < size; ++i) length |= static_cast<std::uint32_t>(data[i]) << (8 * i);
    const std::size_t skip = std::min<std::size_t>(4, size);
    data += skip;
    size -= skip;
    first = std::min<std::size_t>(length, size);
    std::ofstream out(g_second, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + first), static_cast<std::streamsize>(size - first));
  }
  {
    std::ofstream out(g_target, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(first));
  }
  try {
    read_everything(g_open);
  } catch (const phew::core::Error&) {
    // the documented answer to a bad file
  }
  return 0;
}
