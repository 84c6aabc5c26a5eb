// What deblend reads of clumps.h5 (phew-merge): the grid, the clump label planes, the peak count and the
// clumps' peak positions. (To be folded into clumps_file.hpp with the rest of the product.)
#pragma once

#include "grid/geometry.hpp"
#include "io/h5.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <vector>

namespace phew::io {

// The grid's attributes, copied into clumps.h5. Throws Error(input).
GridMeta read_clumps_grid(const File& file);
// The number of peaks of the segmentation (/peaks rows): IDs found later are numbered above it.
std::int64_t count_peaks(const File& file);
// Level-0 clump labels of planes [x0, x1) (0 = no clump).
std::vector<std::int64_t> read_clump_labels(const File& file, std::int64_t x0, std::int64_t x1);
// The peak positions of the clumps among `ids` (sorted) that are in the catalogue, read in chunks so
// that no rank holds the whole catalogue.
std::map<std::int64_t, std::array<double, 3>> read_clump_peak_positions(const File& file,
                                                                        const std::vector<std::int64_t>& ids);

}  // namespace phew::io
