#include <phew/io/centres_file.hpp>

#include <phew/core/error.hpp>
#include <phew/core/files.hpp>
#include <phew/io/h5.hpp>

#include <charconv>
#include <fstream>

namespace phew::io {
namespace {

// Splits a line on blanks and commas; false if a token is not a number.
bool parse_numbers(const std::string& line, std::vector<double>& out) {
  out.clear();
  std::size_t i = 0;
  auto separator = [&](std::size_t k) {
    return line[k] == ' ' || line[k] == '\t' || line[k] == ',' || line[k] == '\r';
  };
  while (i < line.size()) {
    while (i < line.size() && separator(i)) ++i;
    if (i >= line.size()) break;
    std::size_t j = i;
    while (j < line.size() && !separator(j)) ++j;
    // from_chars, not parse_number: "nan" and "inf" are numbers here, refused later by name.
    double v = 0;
    const auto [ptr, ec] = std::from_chars(line.data() + i, line.data() + j, v);
    if (ec != std::errc() || ptr != line.data() + j) return false;
    out.push_back(v);
    i = j;
  }
  return true;
}

}  // namespace

std::vector<std::array<double, 3>> read_centres_text(const std::string& path) {
  core::check_readable_file(path);
  std::ifstream in(path);
  if (!in) throw core::Error::io("{}: cannot open the centres file", path);
  std::vector<std::array<double, 3>> out;
  std::string line;
  std::vector<double> v;
  bool first = true;
  for (long number = 1; std::getline(in, line); ++number) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    if (line.find_first_not_of(" \t\r,") == std::string::npos) continue;
    if (!parse_numbers(line, v)) {
      if (first) {  // a header line
        first = false;
        continue;
      }
      throw core::Error::input("{}: line {} is not three numbers x y z: '{}'", path, number, line);
    }
    first = false;
    if (v.size() != 3)
      throw core::Error::input("{}: line {} has {} numbers, expected three (x y z)", path, number, v.size());
    out.push_back({v[0], v[1], v[2]});
  }
  if (in.bad()) throw core::Error::io("{}: read error", path);
  return out;
}

std::vector<std::array<double, 3>> read_centres_table(const std::string& path, const std::string& dataset) {
  const File f = File::open_read(path);
  if (!f.has(dataset)) throw core::Error::input("{}: no dataset {} (give FILE.h5:/path/to/dataset)", path, dataset);
  const TypeInfo info = f.dataset_info(dataset);
  if (info.cls != TypeInfo::Class::floating && info.cls != TypeInfo::Class::integer)
    throw core::Error::input("{}: {} is {}, expected numbers [n][3]", path, dataset, info.describe());
  if (info.shape.size() != 2 || info.shape[1] != 3)
    throw core::Error::input("{}: {} is {}, expected [n][3]", path, dataset, info.describe());
  const auto v = f.read<double>(dataset);
  std::vector<std::array<double, 3>> out;
  for (std::size_t i = 0; i + 2 < v.size(); i += 3) out.push_back({v[i], v[i + 1], v[i + 2]});
  return out;
}

}  // namespace phew::io
