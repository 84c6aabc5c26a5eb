// ytree's own arbor as fields and trees (mergertree's export; the files are made by
// lib/io/arbor_file.hpp): one value per row for every field, the rows tree by tree, each tree's root first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace phew::model {

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

}  // namespace phew::model
