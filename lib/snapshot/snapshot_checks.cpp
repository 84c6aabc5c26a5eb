#include <phew/snapshot/snapshot_checks.hpp>

#include <phew/core/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

namespace phew::snapshot {
namespace {

// Values are printed as the shortest text that reads back the same double: two values that differ in
// the 12th digit never both read "1".
std::string show(double v) { return fmt::format("{}", v); }
std::string show(std::int64_t v) { return std::to_string(v); }
std::string show(std::uint64_t v) { return std::to_string(v); }
template <typename T>
std::string show(const std::optional<T>& v) {
  return v ? show(*v) : "absent";
}
template <typename T>
std::string show(const std::vector<T>& v) {
  if (v.size() == 1) return show(v[0]);
  std::vector<std::string> s;
  for (const T& x : v) s.push_back(show(x));
  return fmt::format("[{}]", fmt::join(s, ", "));
}

// Pieces written by one run carry the same header values; a converter that printed and re-read them
// (a text round trip) may change the last digits. Floating values agree within kHeaderTolerance.
constexpr double kHeaderTolerance = 1e-9;
bool agree(double a, double b) {
  return a == b || std::abs(a - b) <= kHeaderTolerance * std::max(std::abs(a), std::abs(b));
}
bool agree(std::int64_t a, std::int64_t b) { return a == b; }
bool agree(std::uint64_t a, std::uint64_t b) { return a == b; }
template <typename T>
bool agree(const std::optional<T>& a, const std::optional<T>& b) {
  return a.has_value() == b.has_value() && (!a || agree(*a, *b));
}
template <typename T>
bool agree(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!agree(a[i], b[i])) return false;
  return true;
}

template <typename T>
void same(const PieceHeader& first, const PieceHeader& piece, const char* field, const T& a, const T& b) {
  if (!agree(a, b))
    throw core::Error::input("{}: Header/{} is {}, but {} has {} (not a piece of the same snapshot)", piece.path, field,
                             show(b), first.path, show(a));
}

}  // namespace

void check_same_snapshot(const PieceHeader& first, const PieceHeader& piece) {
  same(first, piece, "NumFilesPerSnapshot", first.num_files, piece.num_files);
  same(first, piece, "Time", first.time, piece.time);
  same(first, piece, "BoxSize", first.box_size, piece.box_size);
  same(first, piece, "MassTable", first.mass_table, piece.mass_table);
  same(first, piece, "NumPart_Total", first.total, piece.total);
  same(first, piece, "Omega0", first.omega0, piece.omega0);
  same(first, piece, "OmegaLambda", first.omega_lambda, piece.omega_lambda);
  same(first, piece, "HubbleParam", first.hubble_param, piece.hubble_param);
}

void check_distinct_files(const std::vector<std::string>& paths) {
  for (std::size_t i = 0; i < paths.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      std::error_code ec;
      if (paths[i] == paths[j] || std::filesystem::equivalent(paths[i], paths[j], ec))
        throw core::Error::input("{}: the same file as {}: a piece of the snapshot is given twice", paths[i], paths[j]);
    }
}

void PieceSignatures::add(const std::string& path, int type, std::uint64_t first_id,
                          const std::array<double, 3>& first_position) {
  const auto [it, fresh] = seen_.emplace(std::tuple{type, first_id, first_position}, path);
  if (!fresh && it->second != path)
    throw core::Error::input("{}: holds the particles of {} (both start type {} with ID {}): a piece copied twice",
                             path, it->second, type, first_id);
}

void check_header_cosmology(const std::string& path, std::optional<double> omega0, std::optional<double> omega_lambda,
                            std::optional<double> hubble_param) {
  const std::pair<const char*, std::optional<double>> values[] = {
      {"Omega0", omega0}, {"OmegaLambda", omega_lambda}, {"HubbleParam", hubble_param}};
  for (const auto& [name, v] : values)
    if (v && !std::isfinite(*v)) throw core::Error::input("{}: Header/{} is {} (not a number)", path, name, *v);
  for (const auto& [name, v] : {values[0], values[2]})
    if (v && *v < 0) throw core::Error::input("{}: Header/{} is {:g} (must be >= 0)", path, name, *v);
  if (omega0 && *omega0 > 0 && !(hubble_param && *hubble_param > 0))
    throw core::Error::input(
        "{}: Header/HubbleParam is {} with Omega0 {:g}: a cosmological run needs both > 0 "
        "(a run without cosmology has Omega0 0)",
        path, show(hubble_param), *omega0);
}

void check_num_files(const std::string& path, const char* field, double num_files) {
  if (!(num_files >= 1) || num_files != std::floor(num_files) || num_files > 1e9)
    throw core::Error::input("{}: Header/{} is {:g} (a snapshot has 1 or more files)", path, field, num_files);
}

}  // namespace phew::snapshot
