// A product's table, its columns listed once: rows are a plain struct, each column names a member, the
// quantity its units come from and what it means. The same list writes the table (one dataset per
// column under a group, rows distributed over ranks in rank order) and reads it back, so a product's
// writer and reader cannot drift apart.
//
//   const io::Table<PeakRow> table = io::Table<PeakRow>()
//       .column("id", &PeakRow::id)
//       .column("position", &PeakRow::position, io::Unit::length);
//   table.write(file, "/peaks", rows, units, comm);       // collective
//   std::vector<PeakRow> back = table.read(file, "/peaks");
#pragma once

#include <phew/core/error.hpp>
#include <phew/io/h5.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <cstdint>
#include <functional>
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

template <typename Row>
class Table {
 public:
  // A column of member type T: an integer type, double, bool (stored as int8) or std::array<double, 3>
  // (a dataset of [rows][3]). `optional` columns are written only when asked for and read when present.
  template <typename T>
  Table& column(std::string name, T Row::*member, Unit unit = Unit::none, std::string description = "",
                bool optional = false) {
    columns_.push_back({std::move(name), unit, std::move(description), optional, writer(member), reader(member)});
    return *this;
  }

  // Writes this rank's rows after the rows of lower ranks, one dataset per column under `group` (which
  // is created unless it exists: tables of different lengths may share a group), with "units" and
  // "description" attributes. `optional` names the optional columns to write. Collective.
  void write(File& f, const std::string& group, std::span<const Row> rows, const UnitNames& units,
             const mpi::Comm& comm, const std::set<std::string>& optional = {}) const {
    if (!f.has(group)) f.create_group(group);
    for (const auto& c : columns_) {
      if (c.optional && !optional.count(c.name)) continue;
      const std::string path = group + "/" + c.name;
      c.write(f, path, rows, comm);
      if (c.unit != Unit::none) f.write_attribute(path, "units", units.of(c.unit));
      if (!c.description.empty()) f.write_attribute(path, "description", c.description);
    }
  }
  void write(File& f, const std::string& group, const std::vector<Row>& rows, const UnitNames& units,
             const mpi::Comm& comm, const std::set<std::string>& optional = {}) const {
    write(f, group, std::span<const Row>(rows), units, comm, optional);
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
        throw core::Error::input("{}: {} has {} rows, but {} has {}", f.path(), path, info.shape.empty() ? 0 : info.shape[0],
                           group + "/" + columns_.front().name, n);
      c.read(f, path, begin, count, rows);
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
    std::function<void(File&, const std::string&, std::span<const Row>, const mpi::Comm&)> write;
    std::function<void(const File&, const std::string&, std::uint64_t, std::uint64_t, std::span<Row>)> read;
  };

  template <typename T>
  static constexpr bool is_vec3 = std::is_same_v<T, std::array<double, 3>>;
  // bool is stored as int8 (HDF5 has no portable boolean).
  template <typename T>
  using Stored = std::conditional_t<std::is_same_v<T, bool>, std::int8_t, T>;

  template <typename T>
  static auto writer(T Row::*member) {
    return [member](File& f, const std::string& path, std::span<const Row> rows, const mpi::Comm& comm) {
      if constexpr (is_vec3<T>) {
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
    return [member](const File& f, const std::string& path, std::uint64_t begin, std::uint64_t count, std::span<Row> rows) {
      if constexpr (is_vec3<T>) {
        const TypeInfo info = f.dataset_info(path);
        if (info.shape.size() != 2 || info.shape[1] != 3)
          throw core::Error::input("{}: {} is {}, expected [n][3]", f.path(), path, info.describe());
        const auto v = f.read_rows<double>(path, begin, count);
        for (std::size_t i = 0; i < rows.size(); ++i) rows[i].*member = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
      } else {
        // Read as the widest type of the same kind, so that a file written with another integer width
        // still reads (HDF5 converts); a float never reads as an integer (h5.hpp refuses it).
        using Wide = std::conditional_t<std::is_floating_point_v<T>, double,
                                        std::conditional_t<std::is_unsigned_v<T> && !std::is_same_v<T, bool>,
                                                           std::uint64_t, std::int64_t>>;
        const auto v = f.read_rows<Wide>(path, begin, count);
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
