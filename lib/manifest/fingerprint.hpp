// Content fingerprints of files: "xxh3-128:<32 hex digits>" over every byte of the file.
#pragma once

#include <string>

namespace phew::manifest {

// Throws Error(io) when the file cannot be read.
std::string fingerprint_file(const std::string& path);
// Fingerprint of a string (manifest ids).
std::string fingerprint_text(const std::string& text);

}  // namespace phew::manifest
