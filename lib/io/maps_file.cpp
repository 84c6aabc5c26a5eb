#include <phew/io/maps_file.hpp>

#include <phew/core/error.hpp>
#include <phew/io/quicklook.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/mpi/route.hpp>

#include <fmt/format.h>

namespace phew::io {

// The rows this file maps (lib/model).
using model::MapRow;
using model::Maps;
using model::MapsMeta;
using model::MapTiming;
namespace {

constexpr const char* kAxisNames = "xyz";
constexpr const char* kPixels =
    "sigma[f][i][j]: pixel i along u, j along v, centred at center_u - size/2 + (i + 0.5) size/resolution; "
    "NaN where the pixel lies outside the triangulated hull";
constexpr const char* kEstimator = "DTFE (Delaunay tessellation field estimator), Rangel et al. 2016";

int axis_of(const File& f, const std::string& name) {
  const std::string a = f.read_attribute_string("/maps", name);
  if (a.size() != 1 || a[0] < 'x' || a[0] > 'z')
    throw core::Error::input("{}: /maps attribute {} is '{}', expected x, y or z", f.path(), name, a);
  return a[0] - 'x';
}

}  // namespace

const Table<MapRow>& map_table() {
  // clang-format off: one column and its constraints per line
  static const Table<MapRow> t = Table<MapRow>()
                                     .column("center", &MapRow::center, Unit::length)
                                     .finite()
                                     .column("id", &MapRow::id)
                                     .column("size", &MapRow::size, Unit::length)
                                     .finite()
                                     .above(0)
                                     .column("depth", &MapRow::depth, Unit::length)
                                     .finite()
                                     .at_least(0)
                                     .column("margin", &MapRow::margin, Unit::length)
                                     .finite()
                                     .at_least(0)
                                     .column("resolution", &MapRow::resolution)
                                     .at_least(1)
                                     .column("axis", &MapRow::axis)
                                     .at_least(0)
                                     .at_most(2)
                                     .column("n_particles", &MapRow::n_particles)
                                     .at_least(0)
                                     .column("n_vertices", &MapRow::n_vertices)
                                     .at_least(0)
                                     .column("n_tetrahedra", &MapRow::n_tetrahedra)
                                     .at_least(0)
                                     .column("window_mass", &MapRow::window_mass, Unit::mass)
                                     .finite()
                                     .at_least(0)
                                     .column("map_mass", &MapRow::map_mass, Unit::mass)
                                     .finite();
  // clang-format on
  return t;
}

const Table<MapTiming>& map_timing_table() {
  // clang-format off: one column and its constraints per line
  static const Table<MapTiming> t = Table<MapTiming>()
                                        .column("triangulation", &MapTiming::triangulation, Unit::time)
                                        .column("interpolation", &MapTiming::interpolation, Unit::time)
                                        .column("predicted", &MapTiming::predicted, Unit::time)
                                        .column("rank", &MapTiming::rank)
                                        .column("model_sample", &MapTiming::model_sample);
  // clang-format on
  return t;
}

void write_maps(File& f, const Maps& maps, const mpi::Comm& comm) {
  const MapsMeta& m = maps.meta;
  if (maps.timing.size() != maps.rows.size())
    throw core::Error::internal("maps: {} timing rows for {} fields", maps.timing.size(), maps.rows.size());
  const auto ng = static_cast<std::uint64_t>(maps.resolution);
  const mpi::RankSum fields = mpi::exclusive_scan(comm, maps.rows.size());
  UnitNames units;
  units.length = m.length_units;
  units.mass = m.mass_units;
  units.time = "s";
  map_table().write(f, "/maps", maps.rows, units, comm);
  if (m.float64)
    f.write_rows<double, double>("/maps/sigma", {fields.total, ng, ng}, fields.before, maps.sigma);
  else
    f.write_rows<float, double>("/maps/sigma", {fields.total, ng, ng}, fields.before, maps.sigma);
  f.write_attribute("/maps/sigma", "units", m.sigma_units());
  map_timing_table().write(f, "/timing", maps.timing, units, comm);

  f.write_attribute("/maps", "units", m.sigma_units());
  f.write_attribute("/maps", "length_units", m.length_units);
  f.write_attribute("/maps", "mass_units", m.mass_units);
  f.write_attribute("/maps", "u_axis", std::string(1, kAxisNames[m.axes[0]]));
  f.write_attribute("/maps", "v_axis", std::string(1, kAxisNames[m.axes[1]]));
  f.write_attribute("/maps", "line_of_sight", std::string(1, kAxisNames[m.axes[2]]));
  f.write_attribute("/maps", "pixels", kPixels);
  f.write_attribute("/maps", "mode", m.mode);
  f.write_attribute("/maps", "samples", m.samples);
  f.write_attribute("/maps", "backend", m.backend);
  f.write_attribute("/maps", "estimator", kEstimator);
  f.write_attribute("/maps", "centers_source", m.centers_source);
  f.write_attribute<double>("/maps", "box_size", std::span<const double>(m.box_size));
  f.write_attribute("/maps", "periodic", static_cast<std::int8_t>(m.periodic ? 1 : 0));
  f.write_attribute("/maps", "time", m.time);
  f.write_attribute("/maps", "redshift", m.redshift);
}

MapsHeader read_maps_header(const File& f) {
  MapsHeader h;
  MapsMeta& m = h.meta;
  m.length_units = f.read_attribute_string("/maps", "length_units");
  m.mass_units = f.read_attribute_string("/maps", "mass_units");
  m.axes = {axis_of(f, "u_axis"), axis_of(f, "v_axis"), axis_of(f, "line_of_sight")};
  m.mode = f.read_attribute_string("/maps", "mode");
  m.samples = f.read_attribute_scalar<std::int64_t>("/maps", "samples");
  m.backend = f.read_attribute_string("/maps", "backend");
  m.centers_source = f.read_attribute_string("/maps", "centers_source");
  const auto box = f.read_attribute<double>("/maps", "box_size");
  if (box.size() != 3)
    throw core::Error::input("{}: /maps attribute box_size has {} values, expected 3", f.path(), box.size());
  m.box_size = {box[0], box[1], box[2]};
  m.periodic = f.read_attribute_scalar<std::int64_t>("/maps", "periodic") != 0;
  m.time = f.read_attribute_scalar<double>("/maps", "time");
  m.redshift = f.read_attribute_scalar<double>("/maps", "redshift");
  const TypeInfo sigma = f.dataset_info("/maps/sigma");
  if (sigma.cls != TypeInfo::Class::floating || sigma.shape.size() != 3 || sigma.shape[1] != sigma.shape[2])
    throw core::Error::input("{}: /maps/sigma is {}, expected float [n][ng][ng]", f.path(), sigma.describe());
  m.float64 = sigma.size == 8;
  h.n_fields = map_table().size(f, "/maps");
  if (sigma.shape[0] != h.n_fields)
    throw core::Error::input("{}: /maps/sigma holds {} maps for {} fields", f.path(), sigma.shape[0], h.n_fields);
  h.resolution = static_cast<std::int64_t>(sigma.shape[1]);
  return h;
}

std::vector<MapRow> read_map_rows(const File& f) { return map_table().read(f, "/maps"); }
std::vector<MapTiming> read_map_timing(const File& f) { return map_timing_table().read(f, "/timing"); }

std::vector<double> read_map_sigma(const File& f, std::uint64_t first, std::uint64_t count) {
  return f.read_rows<double>("/maps/sigma", first, count);
}

std::string quicklook_path(const std::string& output, std::size_t index) {
  std::string stem = output;
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".h5") == 0) stem.resize(stem.size() - 3);
  return fmt::format("{}.{:04d}.png", stem, index + 1);
}

std::vector<std::pair<std::string, std::string>> quicklooks(const std::string& output, const Maps& maps,
                                                            const mpi::Comm& comm) {
  const std::uint64_t first = mpi::exclusive_scan(comm, maps.rows.size()).before;
  const auto pixels = static_cast<std::size_t>(maps.resolution) * static_cast<std::size_t>(maps.resolution);
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < maps.rows.size(); ++i)
    out.emplace_back(quicklook_path(output, first + i),
                     quicklook_png(std::span<const double>(maps.sigma).subspan(i * pixels, pixels),
                                   static_cast<int>(maps.resolution)));
  return out;
}

}  // namespace phew::io
