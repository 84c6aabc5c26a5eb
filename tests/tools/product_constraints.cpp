// Test scaffolding: prints every product table's declared columns and constraints (io::declared_tables)
// as JSON, for the test that edits each constraint in turn (tests/cli/edited_products.py) and the one
// that holds docs/formats.md to them (tests/docs/formats_constraints.py).
// Usage: product-constraints
#include <phew/io/products.hpp>

#include <nlohmann/json.hpp>

#include <iostream>

int main() {
  using phew::io::Constraint;
  nlohmann::json out = nlohmann::json::array();
  for (const phew::io::DeclaredTable& t : phew::io::declared_tables()) {
    nlohmann::json columns = nlohmann::json::array();
    for (const phew::io::ColumnInfo& c : t.columns) {
      const Constraint& k = c.constraint;
      nlohmann::json j{{"name", c.name},           {"optional", c.optional},         {"describe", k.describe()},
                       {"finite", k.finite},       {"measured", k.measured},         {"unique", k.unique},
                       {"refers_to", k.refers_to}, {"zero_is_none", k.zero_is_none}, {"min_open", k.min_open}};
      j["min"] = k.min ? nlohmann::json(*k.min) : nlohmann::json(nullptr);
      j["max"] = k.max ? nlohmann::json(*k.max) : nlohmann::json(nullptr);
      const char* order[] = {"none", "non_decreasing", "ascending", "non_increasing"};
      j["order"] = order[static_cast<int>(k.order)];
      columns.push_back(j);
    }
    out.push_back({{"product", t.product}, {"group", t.group}, {"columns", columns}});
  }
  std::cout << out.dump(1) << "\n";
  return 0;
}
