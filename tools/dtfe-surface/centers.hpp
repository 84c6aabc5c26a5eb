// Where the fields go: a text/CSV file, an HDF5 table, or the most massive haloes of a clumps.h5.
#pragma once

#include "manifest/manifest.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace phew {

struct Centers {
  std::vector<std::array<double, 3>> position;  // snapshot length units
  std::vector<std::int64_t> id;                 // halo ID (clumps.h5) or row number from 1
  std::string source;                           // "text", "hdf5" or "clumps"
  manifest::Input input;                        // for the manifest
};

// Reads FILE:
//   text/CSV: three numbers x y z per line (separated by blanks or commas); '#' starts a comment;
//     a first line that is not numbers is a header;
//   HDF5 "FILE.h5" or "FILE.h5:/dataset": an [n][3] float dataset (default /centers);
//   a phew clumps.h5 (its manifest says so): /halos/peak_position, most massive first (ties by ID).
// `top` > 0 keeps the first `top` rows. Throws Error(io) when the file cannot be read, Error(input)
// for bad content (no rows, wrong shape, non-finite values, a stale clumps.h5). Not collective.
Centers read_centers(const std::string& spec, std::int64_t top);

}  // namespace phew
