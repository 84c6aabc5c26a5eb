// A straightforward serial watershed and saddle search on a whole grid, written independently of
// lib/phew, for comparison in tests: sort all test cells, one pass, brute-force saddles.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace phew::test {

struct ReferenceResult {
  std::vector<std::int64_t> label;      // per cell, 0 below threshold
  std::vector<std::int64_t> peak_cell;  // by ID - 1
  // (peak_a, peak_b) -> (saddle density, cell_a, cell_b)
  std::map<std::pair<std::int64_t, std::int64_t>, std::tuple<double, std::int64_t, std::int64_t>> saddles;
};

ReferenceResult reference_watershed(const std::vector<double>& density, const std::array<long, 3>& n, bool periodic,
                                    double threshold);

}  // namespace phew::test
