// The text files of a RAMSES output (info and header files).
#include <phew/snapshot/ramses_info.hpp>

#include <phew/core/error.hpp>
#include <phew/core/files.hpp>
#include <phew/snapshot/ramses.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>

namespace phew::snapshot::ramses {

namespace fs = std::filesystem;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> read_lines(const std::string& path) {
  core::check_readable_file(path);
  std::ifstream in(path);
  if (!in) throw core::Error::io("{}: cannot open for reading", path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::optional<double> parse_number(std::string text) {
  text = trim(text);
  std::replace(text.begin(), text.end(), 'D', 'E');
  std::replace(text.begin(), text.end(), 'd', 'e');
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::map<std::string, std::string> key_values(const std::vector<std::string>& lines) {
  std::map<std::string, std::string> kv;
  for (const auto& line : lines) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    kv.emplace(trim(line.substr(0, eq)), trim(line.substr(eq + 1)));
  }
  return kv;
}

bool looks_like_info(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > (1u << 20)) return false;
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first)) return false;
  const auto eq = first.find('=');
  if (eq == std::string::npos || trim(first.substr(0, eq)) != "ncpu") return false;
  bool ndim = false, boxlen = false;
  for (std::string line; std::getline(in, line);) {
    const auto e = line.find('=');
    if (e == std::string::npos) continue;
    const std::string key = trim(line.substr(0, e));
    ndim |= key == "ndim";
    boxlen |= key == "boxlen";
  }
  return ndim && boxlen;
}

std::vector<fs::path> info_files_in(const fs::path& folder) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("info_", 0) == 0 && name.size() > 9 && name.substr(name.size() - 4) == ".txt" &&
        looks_like_info(e.path()))
      found.push_back(e.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// header_NNNNN.txt: "#      Family     Count" and one row per family, -5..5 then undefined (RAMSES
// prints them by position; its label for family -1 reads "other_tracer", so names are not trusted).
std::vector<std::uint64_t> parse_header_totals(const std::string& path) {
  const auto lines = read_lines(path);
  std::size_t row = 0;
  while (row < lines.size() &&
         !(lines[row].find("Family") != std::string::npos && lines[row].find("Count") != std::string::npos))
    ++row;
  if (row == lines.size())
    throw core::Error::input("{}: no 'Family Count' table (RAMSES outputs from 2017 on have one)", path);
  std::vector<std::pair<std::string, std::uint64_t>> table;
  static const std::regex row_re(R"(^\s*(\S+)\s+(\d+)\s*$)");
  std::smatch m;
  for (++row; row < lines.size() && std::regex_match(lines[row], m, row_re); ++row)
    table.emplace_back(m[1], std::stoull(m[2]));
  if (table.size() != 12 || table[6].first != "DM")
    throw core::Error::input("{}: the family table has {} rows, 12 expected (families -5..5 and undefined, DM 7th)",
                             path, table.size());
  std::vector<std::uint64_t> totals(kRamsesNumTypes, 0);
  for (int i = 0; i < 11; ++i)
    totals[static_cast<std::size_t>(*ramses_type_of_family(i - 5))] = table[static_cast<std::size_t>(i)].second;
  if (table[11].second != 0)
    throw core::Error::input("{}: {} particles of the undefined family (RAMSES' internal family 127)", path,
                             table[11].second);
  return totals;
}

}  // namespace phew::snapshot::ramses
