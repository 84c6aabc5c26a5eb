// Test scaffolding: makes FILE.json describe FILE's current bytes again (size and fingerprint), so that
// tests can edit a phew output with h5py and check how a tool treats bad *content* rather than a
// stale manifest. Inputs named after FILE (edited upstream files) get their new fingerprints too.
// Usage: remanifest FILE [UPSTREAM...]
#include <phew/manifest/fingerprint.hpp>
#include <phew/manifest/manifest.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: remanifest FILE [UPSTREAM...]\n";
    return 2;
  }
  namespace fs = std::filesystem;
  const std::string path = argv[1];
  auto m = phew::manifest::read_manifest(path);
  m["outputs"][0]["size"] = fs::file_size(path);
  m["outputs"][0]["fingerprint"] = phew::manifest::fingerprint_file(path);
  for (int i = 2; i < argc; ++i) {
    const std::string up = fs::absolute(argv[i]).lexically_normal().string();
    for (auto& in : m["inputs"])
      if (in.value("path", "") == up) in["fingerprint"] = phew::manifest::fingerprint_file(up);
  }
  std::ofstream(path + ".json") << m.dump(2) << "\n";
  return 0;
}
