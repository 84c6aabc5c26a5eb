// The Consistent-Trees export (docs/formats.md, "tree_0_0_0.dat"): the layout consistent-trees itself
// writes and ytree's consistent_trees frontend reads. Units follow consistent-trees: comoving Mpc/h for
// positions, comoving kpc/h for radii, Msun/h for masses, physical peculiar km/s for velocities and the
// scale factor for `scale`.
#pragma once

#include "mergertree/stages.hpp"

#include <string>
#include <vector>

namespace phew {

// The trees of `tree`: every peak without a descendant is a root (the peaks of the last snapshot, and a
// lineage that ends without being linked on); its tree is every row whose chain of descendants leads to
// it. Returns, per tree, the rows of tree.state.rows in depth-first order from the root, the main
// progenitor before the other progenitors (then by mass, descending; then by (snapshot, ID)). Trees are
// ordered by their root: latest snapshot first, then by mass, descending.
std::vector<std::vector<std::size_t>> depth_first_trees(const TreeState& state);

// The whole file. Throws Error(input) when the tree does not know its simulation's units (a tree.h5
// from before the units were stored, or stages whose snapshots could not be read).
std::string ctrees_file(const Tree& tree, const std::string& written_by);

// Conversion factors from the snapshot's units to consistent-trees' (Mpc/h, Msun/h, km/s), and the
// Hubble parameter the header states (1 when the snapshot has no cosmology).
struct CtreesUnits {
  double mpc_h = 1, msun_h = 1, km_s = 1, h = 1;
};
CtreesUnits ctrees_units(const SimulationUnits& u);

}  // namespace phew
