// Mass assignment kernels (Hockney & Eastwood): nearest grid point, cloud in cell, triangular shaped cloud.
#pragma once

#include <cmath>
#include <string>

namespace phew::grid {

enum class Assignment { ngp, cic, tsc };

Assignment parse_assignment(const std::string& text);  // "ngp" | "cic" | "tsc"; throws Error(usage)
const char* to_string(Assignment a);                   // "NGP" | "CIC" | "TSC"

// The 1-D weights of a particle at u (in cell units from the grid origin; cell i spans [i, i+1)).
// Cells first .. first+width-1 get weights w[0..width-1]; `first` is not wrapped.
struct Weights1D {
  long first;
  int width;
  double w[3];
};

inline Weights1D weights_1d(Assignment a, double u) {
  switch (a) {
    case Assignment::ngp:
      return {static_cast<long>(std::floor(u)), 1, {1.0, 0.0, 0.0}};
    case Assignment::cic: {
      const double s = u - 0.5;  // distance in cells from the centre of the cell below
      const double f = std::floor(s);
      const double d = s - f;
      return {static_cast<long>(f), 2, {1.0 - d, d, 0.0}};
    }
    case Assignment::tsc: {
      const double f = std::floor(u);
      const double d = u - f - 0.5;  // offset from the centre of the nearest cell, in [-0.5, 0.5)
      return {static_cast<long>(f) - 1, 3, {0.5 * (0.5 - d) * (0.5 - d), 0.75 - d * d, 0.5 * (0.5 + d) * (0.5 + d)}};
    }
  }
  return {0, 1, {1.0, 0.0, 0.0}};
}

// Offsets of the cells a particle touches relative to the first one: 0 .. width-1.
inline int kernel_width(Assignment a) { return a == Assignment::ngp ? 1 : a == Assignment::cic ? 2 : 3; }

}  // namespace phew::grid
