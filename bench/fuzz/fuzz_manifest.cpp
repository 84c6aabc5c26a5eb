// libFuzzer target: the manifest reader. The input is written as FILE.json beside a small FILE, then
// read the ways the tools read their inputs' manifests: the kind, fingerprint, outputs and inputs check
// (any product kind, so that the manifests of a real chain get past the kind), every recorded input, the
// grid's particle types and the snapshot provenance chain, and path decoding. A phew::Error is the correct answer to a
// malformed manifest; any other exception (a raw nlohmann::json error), a crash or a sanitizer report
// is a finding.
#include <phew/core/error.hpp>
#include <phew/manifest/manifest.hpp>
#include <phew/mpi/comm.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {
std::string g_file;
}

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  static phew::mpi::Environment env(*argc, *argv);
  const fs::path dir = fs::temp_directory_path() / ("phew-fuzz-" + std::to_string(getpid()));
  fs::create_directories(dir);
  g_file = (dir / "grid.h5").string();
  std::ofstream(g_file) << "not really HDF5, only bytes to fingerprint";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  {
    std::ofstream out(g_file + ".json", std::ios::binary | std::ios::trunc);
    out << text;
  }
  auto attempt = [](auto&& f) {
    try {
      f();
    } catch (const phew::core::Error&) {}
  };
  attempt([] { (void)phew::manifest::read_manifest(g_file); });
  attempt([] {
    (void)phew::manifest::check_phew_input(g_file, {"grid", "patches", "clumps", "peaks", "voters", "tree", "maps"});
  });
  for (std::size_t i = 0; i < 4; ++i) attempt([i] { (void)phew::manifest::recorded_input(g_file, i); });
  attempt([] { (void)phew::manifest::grid_types_in_chain(g_file); });
  attempt([] { (void)phew::manifest::snapshot_inputs_in_chain(g_file, {g_file}); });
  attempt([] { (void)phew::manifest::kind_of(g_file); });
  attempt([] { (void)phew::manifest::made_from(g_file, "xxh3-128:0"); });
  (void)phew::manifest::decode_path(text);
  (void)phew::manifest::encode_path(text);
  return 0;
}
