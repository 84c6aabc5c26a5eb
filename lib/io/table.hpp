// A product's table, its columns listed once: rows are a plain struct, each column names a member, the
// quantity its units come from, what it means and what its values must be. The same list writes the
// table (one dataset per column under a group, rows distributed over ranks in rank order) and reads it
// back, checking every value read against the column's constraint, so a product's writer and reader
// cannot drift apart and no column is read unchecked.
//
//   const io::Table<PeakRow> table = io::Table<PeakRow>()
//       .column("id", &PeakRow::id).above(0).unique()
//       .column("position", &PeakRow::position, io::Unit::length).finite();
//   table.write(file, "/peaks", rows, units, comm);       // collective
//   std::vector<PeakRow> back = table.read(file, "/peaks");
#pragma once

#include <phew/core/error.hpp>
#include <phew/io/h5.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace phew::io {

// Which units a column carries (its "units" attribute), named per file by UnitNames.
enum class Unit { none, length, mass, velocity, density, energy, acceleration, time, angular_momentum };

struct UnitNames {
  std::string length, mass, velocity, density, energy, acceleration, time, angular_momentum;
  const std::string& of(Unit u) const;
};

// What a column's values must be, declared with the column (Table's constraint methods, applied to the
// column declared last) and checked on every read: a value that breaks it is a bad input, one line
// naming the file, the dataset, the row and the value. docs/formats.md shows each product's
// constraints (tests/docs/formats_constraints.py checks them against these declarations). A floating
// column must also be stored as floating point (an integer dataset read as a mass is a damaged file).
struct Constraint {
  bool finite = false;             // no NaN, no infinity
  bool measured = false;           // NaN allowed: a value that could not be measured (docs/formats.md); no infinity
  std::optional<double> min, max;  // inclusive, unless min_open (NaN skips them)
  bool min_open = false;
  enum class Order { none, non_decreasing, ascending, non_increasing } order = Order::none;
  bool unique = false;
  std::string refers_to;      // every value is one of this dataset's, in the same file
  bool zero_is_none = false;  // ... or 0, meaning none
  bool any() const {
    return finite || measured || min.has_value() || max.has_value() || order != Order::none || unique ||
           !refers_to.empty();
  }
  // "finite, >= 0", "> 0, unique, ascending", "one of /peaks/id or 0"
  std::string describe() const;
};

// A column as declared: what declared_tables (products.hpp) lists for the docs and the tests.
struct ColumnInfo {
  std::string name, description;
  Constraint constraint;
  bool optional;
};

// Checks `values` (rows [begin, begin + n) of `dataset`, `width` values a row, in row order) against `c`.
// `before` is the value of row begin - 1 when there is one (for the order across chunks). Throws
// Error(input).
void check_values(const File& f, const std::string& dataset, std::uint64_t begin, std::span<const double> values,
                  int width, const Constraint& c, const double* before);
void check_values(const File& f, const std::string& dataset, std::uint64_t begin, std::span<const std::int64_t> values,
                  int width, const Constraint& c, const std::int64_t* before);
void check_values(const File& f, const std::string& dataset, std::uint64_t begin, std::span<const std::uint64_t> values,
                  int width, const Constraint& c, const std::uint64_t* before);

// The shape of one row of each array column (a dataset of [rows][shape...]), by column name.
using RowShapes = std::map<std::string, std::vector<std::uint64_t>>;

template <typename Row>
class Table {
 public:
  // A column of member type T: an integer type, double, bool (stored as int8), std::array<double, 3>
  // (a dataset of [rows][3]) or an array of a row's values, std::vector<double> or
  // std::vector<std::int64_t> (a dataset of [rows][shape...]: the shape is given to write(), every row
  // holds that many values in C order; read back with the shape the file has). `optional` columns are
  // written only when asked for and read when present.
  template <typename T>
  Table& column(std::string name, T Row::*member, Unit unit = Unit::none, std::string description = "",
                bool optional = false) {
    columns_.push_back({std::move(name), unit, std::move(description), optional, {}, writer(member), reader(member)});
    return *this;
  }

  // The constraint of the column declared last (Constraint).
  Table& finite() {
    return last([](Constraint& c) { c.finite = true; });
  }
  Table& measured() {
    return last([](Constraint& c) { c.measured = true; });
  }
  Table& at_least(double v) {
    return last([v](Constraint& c) { c.min = v; });
  }
  Table& above(double v) {
    return last([v](Constraint& c) { c.min = v, c.min_open = true; });
  }
  Table& at_most(double v) {
    return last([v](Constraint& c) { c.max = v; });
  }
  Table& ascending() {
    return last([](Constraint& c) { c.order = Constraint::Order::ascending; });
  }
  Table& non_decreasing() {
    return last([](Constraint& c) { c.order = Constraint::Order::non_decreasing; });
  }
  Table& non_increasing() {
    return last([](Constraint& c) { c.order = Constraint::Order::non_increasing; });
  }
  Table& unique() {
    return last([](Constraint& c) { c.unique = true; });
  }
  Table& refers_to(std::string dataset, bool zero_is_none = false) {
    return last([&](Constraint& c) { c.refers_to = std::move(dataset), c.zero_is_none = zero_is_none; });
  }

  // Every column's name, description and constraint (the docs and the tests of the constraints read them).
  std::vector<ColumnInfo> info() const {
    std::vector<ColumnInfo> out;
    for (const auto& c : columns_) out.push_back({c.name, c.description, c.constraint, c.optional});
    return out;
  }

  // Writes this rank's rows after the rows of lower ranks, one dataset per column under `group` (which
  // is created unless it exists: tables of different lengths may share a group), with "units" and
  // "description" attributes. `optional` names the optional columns to write, `shapes` the row shape of
  // each array column written. Collective.
  void write(File& f, const std::string& group, std::span<const Row> rows, const UnitNames& units,
             const mpi::Comm& comm, const std::set<std::string>& optional = {}, const RowShapes& shapes = {}) const {
    if (!f.has(group)) f.create_group(group);
    for (const auto& c : columns_) {
      if (c.optional && !optional.count(c.name)) continue;
      const std::string path = group + "/" + c.name;
      const auto shape = shapes.find(c.name);
      c.write(f, path, rows, comm, shape == shapes.end() ? nullptr : &shape->second);
      if (c.unit != Unit::none) f.write_attribute(path, "units", units.of(c.unit));
      if (!c.description.empty()) f.write_attribute(path, "description", c.description);
    }
  }
  void write(File& f, const std::string& group, const std::vector<Row>& rows, const UnitNames& units,
             const mpi::Comm& comm, const std::set<std::string>& optional = {}, const RowShapes& shapes = {}) const {
    write(f, group, std::span<const Row>(rows), units, comm, optional, shapes);
  }

  // The number of rows in the file (of its first column). Throws Error(input) when missing.
  std::uint64_t size(const File& f, const std::string& group) const {
    const TypeInfo info = f.dataset_info(group + "/" + columns_.front().name);
    return info.shape.empty() ? 0 : info.shape[0];
  }
  // Rows [begin, begin + count); optional columns that are absent stay default. Every present column
  // must have the same number of rows. Throws Error(input) naming the file and dataset. Not collective.
  std::vector<Row> read(const File& f, const std::string& group, std::uint64_t begin, std::uint64_t count) const {
    const std::uint64_t n = size(f, group);
    std::vector<Row> rows(count);
    for (const auto& c : columns_) {
      const std::string path = group + "/" + c.name;
      if (c.optional && !f.has(path)) continue;
      const TypeInfo info = f.dataset_info(path);
      if (info.shape.empty() || info.shape[0] != n)
        throw core::Error::input("{}: {} has {} rows, but {} has {}", f.path(), path,
                                 info.shape.empty() ? 0 : info.shape[0], group + "/" + columns_.front().name, n);
      c.read(f, path, begin, count, rows, c.constraint);
    }
    return rows;
  }
  std::vector<Row> read(const File& f, const std::string& group) const { return read(f, group, 0, size(f, group)); }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& c : columns_) out.push_back(c.name);
    return out;
  }

 private:
  struct Column {
    std::string name;
    Unit unit;
    std::string description;
    bool optional;
    Constraint constraint;
    std::function<void(File&, const std::string&, std::span<const Row>, const mpi::Comm&,
                       const std::vector<std::uint64_t>*)>
        write;
    std::function<void(const File&, const std::string&, std::uint64_t, std::uint64_t, std::span<Row>,
                       const Constraint&)>
        read;
  };

  template <typename F>
  Table& last(F&& set) {
    if (columns_.empty()) throw core::Error::internal("io::Table: a constraint before any column");
    set(columns_.back().constraint);
    return *this;
  }

  template <typename T>
  static constexpr bool is_vec3 = std::is_same_v<T, std::array<double, 3>>;
  template <typename T>
  static constexpr bool is_array =
      std::is_same_v<T, std::vector<double>> || std::is_same_v<T, std::vector<std::int64_t>>;
  // bool is stored as int8 (HDF5 has no portable boolean).
  template <typename T>
  using Stored = std::conditional_t<std::is_same_v<T, bool>, std::int8_t, T>;

  template <typename T>
  static auto writer(T Row::*member) {
    return [member](File& f, const std::string& path, std::span<const Row> rows, const mpi::Comm& comm,
                    const std::vector<std::uint64_t>* shape) {
      if constexpr (is_array<T>) {
        if (!shape) throw core::Error::internal("{}: array column {} written without its row shape", f.path(), path);
        std::uint64_t width = 1;
        for (const std::uint64_t d : *shape) width *= d;
        std::vector<typename T::value_type> v;
        v.reserve(width * rows.size());
        for (const Row& r : rows) {
          if ((r.*member).size() != width)
            throw core::Error::internal("{}: a row of {} holds {} values, its shape {}", f.path(), path,
                                        (r.*member).size(), width);
          v.insert(v.end(), (r.*member).begin(), (r.*member).end());
        }
        f.write_distributed<typename T::value_type>(path, std::span<const typename T::value_type>(v), comm, *shape);
      } else if constexpr (is_vec3<T>) {
        std::vector<double> v;
        v.reserve(3 * rows.size());
        for (const Row& r : rows) v.insert(v.end(), (r.*member).begin(), (r.*member).end());
        f.write_distributed<double>(path, v, comm, 3);
      } else {
        std::vector<Stored<T>> v;
        v.reserve(rows.size());
        for (const Row& r : rows) v.push_back(static_cast<Stored<T>>(r.*member));
        f.write_distributed<Stored<T>>(path, v, comm);
      }
    };
  }
  template <typename T>
  static auto reader(T Row::*member) {
    return [member](const File& f, const std::string& path, std::uint64_t begin, std::uint64_t count,
                    std::span<Row> rows, const Constraint& c) {
      const TypeInfo info = f.dataset_info(path);
      if constexpr (is_vec3<T> || std::is_floating_point_v<T> || std::is_same_v<T, std::vector<double>>) {
        if (info.cls != TypeInfo::Class::floating)
          throw core::Error::input("{}: {} is {}, expected floating point", f.path(), path, info.describe());
      }
      if constexpr (is_array<T>) {
        using Value = std::conditional_t<std::is_same_v<T, std::vector<double>>, double, std::int64_t>;
        if (info.shape.size() < 2)
          throw core::Error::input("{}: {} is {}, expected [n][...]", f.path(), path, info.describe());
        std::size_t width = 1;
        for (std::size_t d = 1; d < info.shape.size(); ++d) width *= static_cast<std::size_t>(info.shape[d]);
        const auto v = f.read_rows<Value>(path, begin, count);
        if (c.any()) check_values(f, path, begin, std::span<const Value>(v), static_cast<int>(width), c, nullptr);
        for (std::size_t i = 0; i < rows.size(); ++i)
          rows[i].*member = T(v.begin() + static_cast<std::ptrdiff_t>(i * width),
                              v.begin() + static_cast<std::ptrdiff_t>((i + 1) * width));
      } else if constexpr (is_vec3<T>) {
        if (info.shape.size() != 2 || info.shape[1] != 3)
          throw core::Error::input("{}: {} is {}, expected [n][3]", f.path(), path, info.describe());
        const auto v = f.read_rows<double>(path, begin, count);
        if (c.any()) check_values(f, path, begin, std::span<const double>(v), 3, c, nullptr);
        for (std::size_t i = 0; i < rows.size(); ++i) rows[i].*member = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
      } else {
        // Read as the widest type of the same kind, so that a file written with another integer width
        // still reads (HDF5 converts); a float never reads as an integer (h5.hpp refuses it).
        using Wide = std::conditional_t<
            std::is_floating_point_v<T>, double,
            std::conditional_t<std::is_unsigned_v<T> && !std::is_same_v<T, bool>, std::uint64_t, std::int64_t>>;
        const auto v = f.read_rows<Wide>(path, begin, count);
        if (c.any()) {
          // The row before this chunk, for the order across chunks.
          std::vector<Wide> before;
          if (c.order != Constraint::Order::none && begin > 0) before = f.read_rows<Wide>(path, begin - 1, 1);
          check_values(f, path, begin, std::span<const Wide>(v), 1, c, before.empty() ? nullptr : before.data());
        }
        for (std::size_t i = 0; i < rows.size(); ++i) rows[i].*member = static_cast<T>(v[i]);
      }
    };
  }

  std::vector<Column> columns_;
};

// Labels read from a file (cell labels: 0 = none, else an ID of a table with `max_id` rows) must lie in
// [0, max_id]: they index arrays downstream. Throws Error(input) naming the file, dataset and value.
void check_labels(const File& file, const std::string& dataset, std::span<const std::int64_t> labels,
                  std::int64_t max_id);

}  // namespace phew::io
