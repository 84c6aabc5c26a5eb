// Test scaffolding: makes FILE.json describe FILE's current bytes again (size and fingerprint), so that
// tests can edit a phew output with h5py and check how a tool treats bad *content* rather than a
// stale manifest. Usage: remanifest FILE
#include "manifest/fingerprint.hpp"
#include "manifest/manifest.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: remanifest FILE\n";
    return 2;
  }
  const std::string path = argv[1];
  auto m = phew::manifest::read_manifest(path);
  m["outputs"][0]["size"] = std::filesystem::file_size(path);
  m["outputs"][0]["fingerprint"] = phew::manifest::fingerprint_file(path);
  std::ofstream(path + ".json") << m.dump(2) << "\n";
  return 0;
}
