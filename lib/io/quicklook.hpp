// A PNG quicklook of one map: log10 of the surface density over four decades below the maximum (NaN grey),
// a perceptually ordered colour map, u to the right and v up. Written without an image library
// (stored deflate blocks: larger files, no dependency).
#pragma once

#include <string>
#include <span>

namespace phew::io {

// The PNG file's bytes for a map [ng][ng] (sigma[i][j], i along u, j along v).
std::string quicklook_png(std::span<const double> sigma, int ng);

}  // namespace phew::io
