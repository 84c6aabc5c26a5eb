// Sub-cell position of a density peak from a quadratic fit of its 3x3x3 neighbourhood.
#pragma once

#include <array>

namespace phew::watershed {

// Least-squares quadratic f(x) = c + g.x + x.H.x/2 through the 27 values (index (dx+1)*9+(dy+1)*3+(dz+1),
// offsets in cells), and the offset of its maximum, -H^-1 g, clipped to the cell ([-0.5, 0.5] per axis).
// Returns {0,0,0} when the fit has no maximum (H not negative definite).
std::array<double, 3> quadratic_peak_offset(const std::array<double, 27>& f);

}  // namespace phew::watershed
