// Gravitational potential and acceleration at a set of points from a set of sources, by a Barnes-Hut
// octree (monopole moments, Plummer softening). Deterministic: the same sources in the same order give
// the same bits.
#pragma once

#include <array>
#include <vector>

namespace phew {

struct TreeParams {
  double G = 1;
  double theta = 0.5;     // opening angle: a node of size l at distance d is used whole when l/d < theta
  double softening = 0;   // Plummer softening length
  int leaf_size = 8;
};

struct PotentialAt {
  std::vector<double> potential;     // [n]
  std::vector<double> acceleration;  // [n][3] = -grad potential
};

// Sources at positions [m][3] with masses [m]; targets at [n][3]. A target that coincides with a source
// feels it softened only (no self-force singularity). Not collective.
PotentialAt tree_potential(const std::vector<double>& source_pos, const std::vector<double>& source_mass,
                           const std::vector<double>& target_pos, const TreeParams& p);

// The same by direct summation, O(n m): the reference for tests and small sets.
PotentialAt direct_potential(const std::vector<double>& source_pos, const std::vector<double>& source_mass,
                             const std::vector<double>& target_pos, const TreeParams& p);

}  // namespace phew
