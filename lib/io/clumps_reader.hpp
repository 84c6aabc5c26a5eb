// Reading a clumps.h5 (phew-merge) for its haloes' centres: what dtfe-surface maps around.
#pragma once

#include "io/h5.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace phew::io {

struct HaloCentre {
  std::int64_t id = 0;
  double mass = 0;                   // snapshot mass units
  std::array<double, 3> position{};  // the halo's peak position, snapshot length units
};

// The haloes of a clumps.h5, most massive first (ties: the lower ID first). Throws Error(input) naming
// the file when its halo table is missing or its columns differ in length. Not collective.
std::vector<HaloCentre> read_halo_centres(const File& file);

}  // namespace phew::io
