// A deliberately naive serial deposit, written independently of lib/grid, for comparison in tests.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace phew::test {

// Mass per cell on an [n][n][n]-shaped grid of extent `box` from the origin, periodic.
// kernel: "ngp", "cic" or "tsc". Each particle is spread over the 1, 8 or 27 cells around it.
std::vector<double> reference_deposit(const std::array<long, 3>& n, const std::array<double, 3>& box,
                                      const std::vector<double>& pos, const std::vector<double>& mass,
                                      const std::string& kernel);

}  // namespace phew::test
