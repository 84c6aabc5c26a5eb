// Lists of positions given by users (dtfe-surface's field centres): a text/CSV file or an HDF5 table.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace phew::io {

// The dataset read from an HDF5 centres file named without one (FILE.h5 rather than FILE.h5:/dataset).
inline constexpr const char* kDefaultCentresDataset = "/centers";

// Three numbers x y z per line, separated by blanks or commas; '#' starts a comment; blank lines are
// skipped; a first line that is not numbers is a header. Throws Error(io) when the file cannot be read,
// Error(input) naming the line for anything else. Not collective.
std::vector<std::array<double, 3>> read_centres_text(const std::string& path);

// An [n][3] numeric dataset of an HDF5 file. Throws Error(io) when the file cannot be opened,
// Error(input) when the dataset is missing or has another shape or type. Not collective.
std::vector<std::array<double, 3>> read_centres_table(const std::string& path, const std::string& dataset);

}  // namespace phew::io
