#include "centers.hpp"

#include "core/error.hpp"
#include "io/h5.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

namespace phew {
namespace {

// Splits a line on blanks and commas; false if a token is not a number.
bool parse_numbers(const std::string& line, std::vector<double>& out) {
  out.clear();
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == ',' || line[i] == '\r')) ++i;
    if (i >= line.size()) break;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != ',' && line[j] != '\r') ++j;
    double v = 0;
    const auto [ptr, ec] = std::from_chars(line.data() + i, line.data() + j, v);
    if (ec != std::errc() || ptr != line.data() + j) return false;
    out.push_back(v);
    i = j;
  }
  return true;
}

Centers read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error::io("{}: cannot open the centres file", path);
  Centers c;
  c.source = "text";
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
      throw Error::input("{}: line {} is not three numbers x y z: '{}'", path, number, line);
    }
    first = false;
    if (v.size() != 3) throw Error::input("{}: line {} has {} numbers, expected three (x y z)", path, number, v.size());
    c.position.push_back({v[0], v[1], v[2]});
  }
  if (in.bad()) throw Error::io("{}: read error", path);
  return c;
}

Centers read_table(const std::string& path, const std::string& dataset) {
  const io::File f = io::File::open_read(path);
  if (!f.has(dataset)) throw Error::input("{}: no dataset {} (give FILE.h5:/path/to/dataset)", path, dataset);
  const io::TypeInfo info = f.dataset_info(dataset);
  if (info.cls != io::TypeInfo::Class::floating && info.cls != io::TypeInfo::Class::integer)
    throw Error::input("{}: {} is {}, expected numbers [n][3]", path, dataset, info.describe());
  if (info.shape.size() != 2 || info.shape[1] != 3)
    throw Error::input("{}: {} is {}, expected [n][3]", path, dataset, info.describe());
  const auto v = f.read<double>(dataset);
  Centers c;
  c.source = "hdf5";
  for (std::size_t i = 0; i + 2 < v.size(); i += 3) c.position.push_back({v[i], v[i + 1], v[i + 2]});
  return c;
}

Centers read_clumps(const std::string& path) {
  Centers c;
  c.source = "clumps";
  c.input = manifest::check_phew_input(path, {"clumps"});
  const io::File f = io::File::open_read(path);
  for (const char* d : {"/halos/id", "/halos/mass", "/halos/peak_position"})
    if (!f.has(d)) throw Error::input("{}: no dataset {} (is it a clumps.h5 from phew-merge?)", path, d);
  const auto id = f.read<std::int64_t>("/halos/id");
  const auto mass = f.read<double>("/halos/mass");
  const auto pos = f.read<double>("/halos/peak_position");
  if (mass.size() != id.size() || pos.size() != 3 * id.size())
    throw Error::input("{}: /halos tables of different lengths", path);
  std::vector<std::size_t> order(id.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return mass[a] != mass[b] ? mass[a] > mass[b] : id[a] < id[b];
  });
  for (std::size_t k : order) {
    c.position.push_back({pos[3 * k], pos[3 * k + 1], pos[3 * k + 2]});
    c.id.push_back(id[k]);
  }
  return c;
}

bool is_clumps_file(const std::string& path) {
  if (!std::filesystem::exists(path + ".json")) return false;
  try {
    return manifest::read_manifest(path).value("kind", "") == "clumps";
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

Centers read_centers(const std::string& spec, std::int64_t top) {
  std::string path = spec, dataset = "/centers";
  const auto colon = spec.rfind(':');
  if (colon != std::string::npos && colon > 0 && !std::filesystem::exists(spec) &&
      std::filesystem::exists(spec.substr(0, colon))) {
    path = spec.substr(0, colon);
    dataset = spec.substr(colon + 1);
  }
  if (!std::filesystem::exists(path)) throw Error::io("{}: no such centres file", path);
  Centers c;
  if (io::is_hdf5(path)) c = is_clumps_file(path) && dataset == "/centers" ? read_clumps(path) : read_table(path, dataset);
  else c = read_text(path);
  if (c.source != "clumps") c.input = manifest::external_input(path, "centers");
  if (c.id.empty())
    for (std::size_t i = 0; i < c.position.size(); ++i) c.id.push_back(static_cast<std::int64_t>(i) + 1);
  if (top > 0 && static_cast<std::size_t>(top) < c.position.size()) {
    c.position.resize(static_cast<std::size_t>(top));
    c.id.resize(static_cast<std::size_t>(top));
  }
  if (c.position.empty()) throw Error::input("{}: no field centres", spec);
  for (std::size_t i = 0; i < c.position.size(); ++i)
    for (double x : c.position[i])
      if (!std::isfinite(x)) throw Error::input("{}: centre {} is not finite", spec, i + 1);
  return c;
}

}  // namespace phew
