#include "centers.hpp"

#include <phew/core/error.hpp>
#include <phew/io/centres_file.hpp>
#include <phew/io/clumps_file.hpp>

#include <cmath>
#include <filesystem>

namespace phew::tools {
namespace {

struct Spec {
  std::string path, dataset = io::kDefaultCentresDataset;
};

// "FILE.h5:/dataset" when FILE.h5 exists and the whole spec does not.
Spec split(const std::string& spec) {
  Spec s{spec};
  const auto colon = spec.rfind(':');
  if (colon != std::string::npos && colon > 0 && !std::filesystem::exists(spec) &&
      std::filesystem::exists(spec.substr(0, colon)))
    s = {spec.substr(0, colon), spec.substr(colon + 1)};
  if (!std::filesystem::exists(s.path)) throw core::Error::io("{}: no such centres file", s.path);
  return s;
}

bool is_clumps(const Spec& s) {
  if (s.dataset != io::kDefaultCentresDataset || !io::is_hdf5(s.path) || !std::filesystem::exists(s.path + ".json"))
    return false;
  try {
    return manifest::kind_of(s.path) == "clumps";
  } catch (const core::Error&) {
    return false;
  }
}

}  // namespace

Centers read_centers(const std::string& spec, std::int64_t top) {
  const Spec s = split(spec);
  Centers c;
  if (is_clumps(s)) {
    c.source = "clumps";
    for (const model::HaloCentre& h : io::read_halo_centres(io::File::open_read(s.path))) {
      c.position.push_back(h.position);
      c.id.push_back(h.id);
    }
  } else {
    c.source = io::is_hdf5(s.path) ? "hdf5" : "text";
    c.position = c.source == "hdf5" ? io::read_centres_table(s.path, s.dataset) : io::read_centres_text(s.path);
    for (std::size_t i = 0; i < c.position.size(); ++i) c.id.push_back(static_cast<std::int64_t>(i) + 1);
  }
  if (top > 0 && static_cast<std::size_t>(top) < c.position.size()) {
    c.position.resize(static_cast<std::size_t>(top));
    c.id.resize(static_cast<std::size_t>(top));
  }
  if (c.position.empty()) throw core::Error::input("{}: no field centres", spec);
  for (std::size_t i = 0; i < c.position.size(); ++i)
    for (double x : c.position[i])
      if (!std::isfinite(x)) throw core::Error::input("{}: centre {} is not finite", spec, i + 1);
  return c;
}

manifest::Input centers_input(const std::string& spec) {
  const Spec s = split(spec);
  return is_clumps(s) ? manifest::check_phew_input(s.path, {"clumps"}) : manifest::external_input(s.path, "centers");
}

std::vector<int> centers_grid_types(const std::string& spec) {
  const Spec s = split(spec);
  return is_clumps(s) ? manifest::grid_types_in_chain(s.path) : std::vector<int>{};
}

}  // namespace phew::tools
