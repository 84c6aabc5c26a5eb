// ytree's own arbor format: the layout ytree.save_arbor writes and ytree.load reads (ytree 2.0 and
// later; docs/formats.md). A header file PREFIX.h5 (attributes, the roots' fields, which rows each data
// file holds) and one data file PREFIX_0000.h5 (every row, tree by tree, each tree's root first).
#pragma once

#include <phew/model/arbor.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace phew::io {

// The two files as images (bytes): {header, data}. Not collective.
std::pair<std::string, std::string> arbor_images(const model::Arbor& arbor);

}  // namespace phew::io
