// Where the fields go: a text/CSV file, an HDF5 table, or the most massive haloes of a clumps.h5.
#pragma once

#include <phew/manifest/manifest.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace phew::tools {

struct Centers {
  std::vector<std::array<double, 3>> position;  // snapshot length units
  std::vector<std::int64_t> id;                 // halo ID (clumps.h5) or row number from 1
  std::string source;                           // "text", "hdf5" or "clumps"
};

// Reads SPEC: a text/CSV file (io::read_centres_text), "FILE.h5" or "FILE.h5:/dataset" (an [n][3]
// table, default /centers), or a phew clumps.h5 (its manifest says so; its haloes, most massive first).
// `top` > 0 keeps the first `top` rows. Throws Error(io) when the file cannot be read, Error(input) for
// bad content (no rows, wrong shape, non-finite values). Not collective.
Centers read_centers(const std::string& spec, std::int64_t top);

// SPEC as an input of the manifest: a clumps.h5 checked (kind and fingerprint: Error(input) when stale),
// anything else an external file of kind "centers". Not collective.
manifest::Input centers_input(const std::string& spec);

// The particle types the grid of a clumps.h5 SPEC was made of (its provenance chain), so that --types
// auto maps what the catalogue was found in; empty for any other centres. Not collective.
std::vector<int> centers_grid_types(const std::string& spec);

}  // namespace phew::tools
