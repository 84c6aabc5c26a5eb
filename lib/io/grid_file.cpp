#include <phew/io/grid_file.hpp>

#include <phew/core/error.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace phew::io {
namespace {

template <typename T, std::size_t N>
std::span<const T> as_span(const std::array<T, N>& a) {
  return {a.data(), N};
}

}  // namespace

Precision parse_precision(const std::string& text) {
  if (text == "float32" || text == "f32") return Precision::f32;
  if (text == "float64" || text == "f64") return Precision::f64;
  throw core::Error::usage("precision '{}': expected float32 or float64", text);
}

void write_grid_attributes(File& file, const grid::GridMeta& meta, const std::string& o) {
  const grid::GridGeometry& g = meta.geometry;
  file.write_attribute<std::int64_t>(o, "shape", as_span(g.shape));
  file.write_attribute<double>(o, "box_size", as_span(g.extent));
  file.write_attribute<double>(o, "origin", as_span(g.origin));
  const auto cell = g.cell_size();
  file.write_attribute<double>(o, "cell_size", as_span(cell));
  file.write_attribute<std::int8_t>(o, "periodic", g.periodic ? 1 : 0);
  file.write_attribute(o, "total_mass", meta.total_mass);
  file.write_attribute(o, "mean_density", meta.mean_density);
  file.write_attribute<std::uint64_t>(o, "n_particles", meta.n_particles);
  file.write_attribute(o, "particle_mass", meta.particle_mass);
  file.write_attribute(o, "assignment", meta.assignment);
  file.write_attribute(o, "units", meta.density_units);
  file.write_attribute(o, "length_units", meta.length_units);
  file.write_attribute(o, "mass_units", meta.mass_units);
  file.write_attribute(o, "time", meta.time);
  file.write_attribute(o, "redshift", meta.redshift);
  file.write_attribute<std::int8_t>(o, "comoving", meta.comoving ? 1 : 0);
  if (meta.omega_m) file.write_attribute(o, "omega_m", *meta.omega_m);
  if (meta.omega_lambda) file.write_attribute(o, "omega_lambda", *meta.omega_lambda);
  if (meta.hubble_param) file.write_attribute(o, "hubble_param", *meta.hubble_param);
  if (meta.critical_density) file.write_attribute(o, "critical_density", *meta.critical_density);
}

namespace {

// The grid's shape, and this rank's block as the start and size of a box.
struct BoxSelection {
  std::vector<std::uint64_t> shape, begin, size;
};
BoxSelection box_of(const grid::GridGeometry& g, const mpi::BlockDecomposition& blocks, int rank) {
  const mpi::BlockDecomposition::Box box = blocks.box(rank);
  BoxSelection out;
  for (std::size_t d = 0; d < 3; ++d) {
    out.shape.push_back(static_cast<std::uint64_t>(g.shape[d]));
    out.begin.push_back(static_cast<std::uint64_t>(box.lo[d]));
    out.size.push_back(static_cast<std::uint64_t>(box.hi[d] - box.lo[d]));
  }
  return out;
}

}  // namespace

void write_grid(File& file, const grid::GridMeta& meta, const mpi::BlockDecomposition& blocks,
                std::span<const double> density, Precision precision, bool compress) {
  const BoxSelection b = box_of(meta.geometry, blocks, file.rank());
  file.create_group("/grid");
  const Storage storage = compress ? Storage{1, kGridDeflate} : Storage{};
  if (precision == Precision::f32 && compress) {
    // Parallel HDF5 writes filtered datasets collectively only without a type conversion on the way.
    const std::vector<float> single(density.begin(), density.end());
    file.write_box<float, float>("/grid/density", b.shape, b.begin, b.size, std::span<const float>(single), storage);
  } else if (precision == Precision::f32)
    file.write_box<float, double>("/grid/density", b.shape, b.begin, b.size, density, storage);
  else
    file.write_box<double, double>("/grid/density", b.shape, b.begin, b.size, density, storage);
  file.write_attribute("/grid/density", "units", meta.density_units);
  write_grid_attributes(file, meta, "/grid");
}

void write_grid(File& file, const grid::GridMeta& meta, const mpi::BlockDecomposition& blocks,
                std::span<const float> density, bool compress) {
  const BoxSelection b = box_of(meta.geometry, blocks, file.rank());
  file.create_group("/grid");
  file.write_box<float, float>("/grid/density", b.shape, b.begin, b.size, density,
                               compress ? Storage{1, kGridDeflate} : Storage{});
  file.write_attribute("/grid/density", "units", meta.density_units);
  write_grid_attributes(file, meta, "/grid");
}

grid::GridMeta read_grid_meta(const File& f) {
  // An adaptive grid (cic-project --refine) has /grid/leaves instead of /grid/density; the tools after
  // cic-project read it once the adaptive segmentation lands (docs/thresholds.md, "An adaptive mesh").
  if (f.has("/grid/leaves"))
    throw core::Error::input(
        "{}: an adaptive grid (cic-project --refine), which this tool does not read yet: make a uniform "
        "grid (cic-project without --refine)",
        f.path());
  return read_grid_attributes(f, "/grid", true);
}

double reference_mean_density(const std::string& path, const grid::GridMeta& mine) {
  // Its attributes only, from either mesh: a uniform grid's or an adaptive one's (/grid/leaves).
  const File f = File::open_read(path);
  const grid::GridMeta ref = read_grid_attributes(f, "/grid", !f.has("/grid/leaves"));
  // Each quantity with its own name: a box size is not printed beside the density units.
  const auto region = [](const grid::GridMeta& g) {
    const auto& e = g.geometry.extent;
    const auto& o = g.geometry.origin;
    return fmt::format("box {:g} x {:g} x {:g} {} at ({:g}, {:g}, {:g}), {}, densities in {}", e[0], e[1], e[2],
                       g.length_units, o[0], o[1], o[2], g.geometry.periodic ? "periodic" : "open", g.density_units);
  };
  if (ref.density_units != mine.density_units || ref.geometry.extent != mine.geometry.extent ||
      ref.geometry.origin != mine.geometry.origin || ref.geometry.periodic != mine.geometry.periodic)
    throw core::Error::input("{}: not a grid of the same region and units as this one ({}; this one: {})", path,
                             region(ref), region(mine));
  if (!(ref.mean_density > 0)) throw core::Error::input("{}: its mean density is {}", path, ref.mean_density);
  return ref.mean_density;
}

namespace {

// The unit names the tools write (particles::Units: kpc, Mpc, pc or "X cm"; 1e10 Msun, Msun or "X g";
// each with "/h" when h-scaled), and the density's made of them: a name edited to anything else
// ("furlong") would be carried into every product and export as if it were a unit.
void check_unit_names(const File& f, const std::string& o, const grid::GridMeta& m) {
  const auto base = [](const std::string& name) {
    return name.ends_with("/h") ? name.substr(0, name.size() - 2) : name;
  };
  const auto numbered = [](const std::string& name, const std::string& unit) {
    if (!name.ends_with(" " + unit)) return false;
    const std::string number = name.substr(0, name.size() - unit.size() - 1);
    double v = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    return ec == std::errc() && ptr == number.data() + number.size() && v > 0 && std::isfinite(v);
  };
  const std::string length = base(m.length_units), mass = base(m.mass_units);
  if (!(length == "kpc" || length == "Mpc" || length == "pc" || numbered(length, "cm")))
    throw core::Error::input(
        "{}: {} attribute length_units is '{}' (expected kpc, Mpc, pc or a number of cm, each /h or not)", f.path(), o,
        m.length_units);
  if (!(mass == "1e10 Msun" || mass == "Msun" || numbered(mass, "g")))
    throw core::Error::input(
        "{}: {} attribute mass_units is '{}' (expected 1e10 Msun, Msun or a number of g, each /h or not)", f.path(), o,
        m.mass_units);
  const std::string density = "(" + m.mass_units + ")/(" + m.length_units + ")^3";
  if (m.density_units != density)
    throw core::Error::input("{}: {} attribute units is '{}', but its length and mass units make '{}'", f.path(), o,
                             m.density_units, density);
}

}  // namespace

grid::GridMeta read_grid_attributes(const File& f, const std::string& o, bool with_density) {
  grid::GridMeta m;
  const auto shape = f.read_attribute<std::int64_t>(o, "shape");
  const auto box = f.read_attribute<double>(o, "box_size");
  const auto origin = f.read_attribute<double>(o, "origin");
  if (shape.size() != 3 || box.size() != 3 || origin.size() != 3)
    throw core::Error::input("{}: /grid attributes shape, box_size and origin need 3 values each", f.path());
  for (std::size_t d = 0; d < 3; ++d) {
    m.geometry.shape[d] = shape[d];
    m.geometry.extent[d] = box[d];
    m.geometry.origin[d] = origin[d];
  }
  m.geometry.periodic = f.read_attribute_scalar<std::int64_t>(o, "periodic") != 0;
  // Invariants of every grid: a NaN box would propagate into every output.
  for (std::size_t d = 0; d < 3; ++d)
    if (!(shape[d] >= 1) || !(box[d] > 0) || !std::isfinite(box[d]) || !std::isfinite(origin[d]))
      throw core::Error::input(
          "{}: {} attributes shape {}, box_size {:g}, origin {:g} in axis {} (expected a cell count >= 1, "
          "a finite size > 0 and a finite origin)",
          f.path(), o, shape[d], box[d], origin[d], "xyz"[d]);
  const TypeInfo info = with_density
                            ? f.dataset_info("/grid/density")
                            : TypeInfo{TypeInfo::Class::floating,
                                       8,
                                       true,
                                       {static_cast<std::uint64_t>(shape[0]), static_cast<std::uint64_t>(shape[1]),
                                        static_cast<std::uint64_t>(shape[2])}};
  if (info.cls != TypeInfo::Class::floating || info.shape.size() != 3 ||
      info.shape != std::vector<std::uint64_t>{static_cast<std::uint64_t>(shape[0]),
                                               static_cast<std::uint64_t>(shape[1]),
                                               static_cast<std::uint64_t>(shape[2])})
    throw core::Error::input("{}: /grid/density is {}, expected float [{},{},{}]", f.path(), info.describe(), shape[0],
                             shape[1], shape[2]);
  m.assignment = f.read_attribute_string(o, "assignment");
  m.total_mass = f.read_attribute_scalar<double>(o, "total_mass");
  m.mean_density = f.read_attribute_scalar<double>(o, "mean_density");
  if (!(m.mean_density > 0) || !std::isfinite(m.mean_density))
    throw core::Error::input("{}: {} attribute mean_density is {} (a grid of particles has a finite mean density > 0)",
                             f.path(), o, m.mean_density);
  m.n_particles = f.read_attribute_scalar<std::uint64_t>(o, "n_particles");
  m.particle_mass = f.read_attribute_scalar<double>(o, "particle_mass");
  m.density_units = f.read_attribute_string(o, "units");
  m.length_units = f.read_attribute_string(o, "length_units");
  m.mass_units = f.read_attribute_string(o, "mass_units");
  check_unit_names(f, o, m);
  if (f.has_attribute(o, "cell_size")) {  // the box over the shape, as written; an edit of either breaks it
    const auto cell = f.read_attribute<double>(o, "cell_size");
    for (std::size_t d = 0; d < 3 && cell.size() == 3; ++d) {
      const double want = box[d] / static_cast<double>(shape[d]);
      if (!(std::abs(cell[d] - want) <= 1e-9 * want))
        throw core::Error::input("{}: {} attribute cell_size is {:g} in axis {}, but box_size / shape is {:g}",
                                 f.path(), o, cell[d], "xyz"[d], want);
    }
    if (cell.size() != 3)
      throw core::Error::input("{}: {} attribute cell_size has {} values, 3 expected", f.path(), o, cell.size());
  }
  m.time = f.read_attribute_scalar<double>(o, "time");
  m.redshift = f.read_attribute_scalar<double>(o, "redshift");
  m.comoving = f.read_attribute_scalar<std::int64_t>(o, "comoving") != 0;
  auto optional = [&](const char* name) -> std::optional<double> {
    if (!f.has_attribute(o, name)) return std::nullopt;
    return f.read_attribute_scalar<double>(o, name);
  };
  m.omega_m = optional("omega_m");
  m.omega_lambda = optional("omega_lambda");
  m.hubble_param = optional("hubble_param");
  m.critical_density = optional("critical_density");
  return m;
}

template <typename Real>
core::RawVector<Real> read_grid_box(const File& f, const grid::GridGeometry& g, const std::array<std::int64_t, 3>& lo,
                                    const std::array<std::int64_t, 3>& hi, std::size_t spare) {
  std::array<std::uint64_t, 3> start{}, count{};
  for (std::size_t d = 0; d < 3; ++d) {
    start[d] = static_cast<std::uint64_t>(lo[d]);
    count[d] = static_cast<std::uint64_t>(std::max<std::int64_t>(hi[d] - lo[d], 0));
  }
  core::RawVector<Real> out;
  out.reserve(count[0] * count[1] * count[2] + spare);
  out.resize(count[0] * count[1] * count[2]);
  f.read_box_into<Real>("/grid/density", start, count, out);
  for (std::size_t s = 0; s < out.size(); ++s) {
    const double v = out[s];
    if (!std::isfinite(v) || v < 0) {
      const auto row = static_cast<std::int64_t>(s / count[2]);
      const std::int64_t i = lo[0] + row / static_cast<std::int64_t>(count[1]),
                         j = lo[1] + row % static_cast<std::int64_t>(count[1]),
                         k = lo[2] + static_cast<std::int64_t>(s % count[2]);
      throw core::Error::input("{}: /grid/density has {} at cell {} (densities must be finite and >= 0)", f.path(), v,
                               grid::linear_index(i, j, k, g.shape[1], g.shape[2]));
    }
  }
  return out;
}

template core::RawVector<double> read_grid_box<double>(const File&, const grid::GridGeometry&,
                                                       const std::array<std::int64_t, 3>&,
                                                       const std::array<std::int64_t, 3>&, std::size_t);
template core::RawVector<float> read_grid_box<float>(const File&, const grid::GridGeometry&,
                                                     const std::array<std::int64_t, 3>&,
                                                     const std::array<std::int64_t, 3>&, std::size_t);

bool grid_is_float32(const File& f) { return f.dataset_info("/grid/density").is_float32(); }

std::vector<double> read_grid_cells(const File& file, const grid::GridGeometry& g,
                                    std::span<const std::int64_t> cells) {
  constexpr std::int64_t kPlanes = 8;  // planes per read: few reads, bounded memory
  const auto plane = static_cast<std::int64_t>(g.plane_cells());
  std::vector<double> out(cells.size());
  std::vector<double> block;  // one room for every read: a new one each time would be new pages each time
  std::size_t k = 0;
  while (k < cells.size()) {
    const std::int64_t first = cells[k] / plane;
    const std::int64_t last = std::min({first + kPlanes, g.shape[0], cells.back() / plane + 1});
    block.resize(static_cast<std::size_t>((last - first) * plane));
    file.read_rows_into<double>("/grid/density", static_cast<std::uint64_t>(first),
                                static_cast<std::uint64_t>(last - first), block);
    for (; k < cells.size() && cells[k] < last * plane; ++k)
      out[k] = block[static_cast<std::size_t>(cells[k] - first * plane)];
  }
  return out;
}

}  // namespace phew::io
