// ytree's own arbor format: the layout ytree.save_arbor writes and ytree.load reads (ytree 2.0 and
// later; docs/formats.md). A header file PREFIX.h5 (attributes, the roots' fields, which rows each data
// file holds) and one data file PREFIX_0000.h5 (every row, tree by tree, each tree's root first).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace phew::io {

struct ArborField {
  std::string name, units, description;  // units as unyt parses them ("Msun/h", "Mpc/h", "km/s"; "" none)
  std::vector<double> values;            // a float field, one value per row ...
  std::vector<std::int64_t> integers;    // ... or an integer field (uid, desc_uid, ...)
};

struct Arbor {
  std::vector<ArborField> fields;         // uid and desc_uid among them (desc_uid -1 for a root)
  std::vector<std::uint64_t> tree_start;  // the first row (the root) of each tree; a tree ends where the next starts
  double hubble_constant = 1, omega_matter = 0, omega_lambda = 0;
  double box_size = 0;
  std::string box_size_units = "Mpc/h";
};

// The two files as images (bytes): {header, data}. Not collective.
std::pair<std::string, std::string> arbor_images(const Arbor& arbor);

}  // namespace phew::io
