#include <phew/io/arbor_file.hpp>

#include <phew/core/error.hpp>
#include <phew/io/h5.hpp>

#include <nlohmann/json.hpp>

namespace phew::io {

// The rows this file maps (lib/model).
using model::Arbor;
using model::ArborField;
namespace {

std::size_t rows_of(const ArborField& f) { return f.integers.empty() ? f.values.size() : f.integers.size(); }

// The field's values at the given rows.
void write_field(File& f, const std::string& path, const ArborField& field, const std::vector<std::uint64_t>* rows) {
  if (!field.integers.empty()) {
    std::vector<std::int64_t> v;
    if (rows)
      for (std::uint64_t r : *rows) v.push_back(field.integers[r]);
    f.write<std::int64_t>(path, rows ? v : field.integers);
  } else {
    std::vector<double> v;
    if (rows)
      for (std::uint64_t r : *rows) v.push_back(field.values[r]);
    f.write<double>(path, rows ? v : field.values);
  }
}

}  // namespace

std::pair<std::string, std::string> arbor_images(const Arbor& a) {
  const std::size_t n = a.fields.empty() ? 0 : rows_of(a.fields.front());
  for (const ArborField& fl : a.fields)
    if (rows_of(fl) != n) throw core::Error::internal("arbor field {} has {} rows, not {}", fl.name, rows_of(fl), n);
  const auto trees = static_cast<std::int64_t>(a.tree_start.size());
  std::vector<std::int64_t> start, end;
  for (std::size_t t = 0; t < a.tree_start.size(); ++t) {
    start.push_back(static_cast<std::int64_t>(a.tree_start[t]));
    end.push_back(static_cast<std::int64_t>(t + 1 < a.tree_start.size() ? a.tree_start[t + 1] : n));
  }

  // The data file: every row, and where each tree's rows are.
  File data = File::create_in_memory("arbor_0000.h5");
  data.create_group("/index");
  data.write<std::int64_t>("/index/tree_start_index", start);
  data.write<std::int64_t>("/index/tree_end_index", end);
  data.create_group("/data");
  for (const ArborField& fl : a.fields) write_field(data, "/data/" + fl.name, fl, nullptr);

  // The header: what the arbor is, its fields and units, the roots' values, and which trees each data
  // file holds (cumulative counts; one data file here).
  File head = File::create_in_memory("arbor.h5");
  nlohmann::json info = nlohmann::json::object();
  for (const ArborField& fl : a.fields) info[fl.name] = {{"units", fl.units}, {"description", fl.description}};
  head.write_attribute_fixed("/", "arbor_type", "YTreeArbor");
  head.write_attribute_fixed("/", "field_info", info.dump());
  head.write_attribute<std::int64_t>("/", "total_trees", trees);
  head.write_attribute<std::int64_t>("/", "total_files", 1);
  head.write_attribute<std::int64_t>("/", "total_nodes", static_cast<std::int64_t>(n));
  head.write_attribute("/", "hubble_constant", a.hubble_constant);
  head.write_attribute("/", "omega_matter", a.omega_matter);
  head.write_attribute("/", "omega_lambda", a.omega_lambda);
  head.write_attribute("/", "box_size", a.box_size);
  head.write_attribute_fixed("/", "box_size_units", a.box_size_units);
  head.create_group("/index");
  head.write<std::int64_t>("/index/tree_start_index", std::vector<std::int64_t>{0});
  head.write<std::int64_t>("/index/tree_end_index", std::vector<std::int64_t>{trees});
  head.write<std::int64_t>("/index/tree_size", std::vector<std::int64_t>{static_cast<std::int64_t>(n)});
  head.create_group("/data");
  for (const ArborField& fl : a.fields) write_field(head, "/data/" + fl.name, fl, &a.tree_start);
  return {head.image(), data.image()};
}

}  // namespace phew::io
