// Every table a product declares (io::Table), with each column's constraint: the one list docs/formats.md
// shows and the tests edit value by value (tests/tools/product_constraints.cpp, tests/cli/edited_products.py).
#pragma once

#include <phew/io/table.hpp>

#include <string>
#include <vector>

namespace phew::io {

struct DeclaredTable {
  std::string product;  // "patches.h5"
  std::string group;    // "/peaks"
  std::vector<ColumnInfo> columns;
};

std::vector<DeclaredTable> declared_tables();

// Reads every declared table of the product `path` (of manifest kind `kind`: "patches" is patches.h5's
// tables) a chunk at a time, so that each value is checked against its column's constraint, and the
// checks between tables the product's readers make (saddles below their peaks, each peak's voters as
// many as it says, ...): a tool taking a product as input refuses a damaged one whatever of it it reads.
// Throws Error(input) naming the file, dataset, row and value. A kind without tables passes.
void check_product(const std::string& path, const std::string& kind);

}  // namespace phew::io
