#include <phew/io/clumps_file.hpp>

#include <phew/core/error.hpp>
#include <phew/io/amr_grid_file.hpp>
#include <phew/io/cells_file.hpp>
#include <phew/io/grid_file.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace phew::io {

// The rows this file maps (lib/model).
using model::Clump;
using model::Clumps;
using model::ClumpsMeta;
using model::Halo;
using model::HaloCentre;
using model::HierarchyRow;
using model::MergedPeak;
using Vec3 = std::array<double, 3>;

const Table<MergedPeak>& merged_peak_table() {
  static const Table<MergedPeak> t =
      // clang-format off: one column and its constraints per line
      Table<MergedPeak>()
          .column("id", &MergedPeak::id)
          .above(0)
          .ascending()
          .column("relevance", &MergedPeak::relevance)
          .finite()
          .above(0)
          .column("key_saddle", &MergedPeak::key_saddle, Unit::density)
          .finite()
          .at_least(0)
          .column("key_neighbour", &MergedPeak::key_neighbour)
          .refers_to("/peaks/id", true)
          .column("clump", &MergedPeak::clump, Unit::none,
                  "level-0 clump the peak belongs to after noise removal; 0 = discarded")
          .refers_to("/peaks/id", true);
  // clang-format on
  return t;
}

const Table<Clump>& clump_table() {
  // clang-format off: one column and its constraints per line
  static const Table<Clump> t = Table<Clump>()
                                    .column("id", &Clump::id)
                                    .refers_to("/peaks/id")
                                    .unique()
                                    .column("level", &Clump::level)
                                    .at_least(0)
                                    .column("parent", &Clump::parent)
                                    .refers_to("/peaks/id")
                                    .column("halo", &Clump::halo)
                                    .refers_to("/peaks/id")
                                    .column("n_cells", &Clump::n_cells)
                                    .at_least(0)
                                    .column("mass", &Clump::mass, Unit::mass)
                                    .finite()
                                    .at_least(0)
                                    .column("peak_position", &Clump::peak_position, Unit::length)
                                    .finite()
                                    .column("peak_density", &Clump::peak_density, Unit::density)
                                    .finite()
                                    .above(0)
                                    .column("saddle_density", &Clump::saddle_density, Unit::density)
                                    .finite()
                                    .at_least(0)
                                    .column("mean_density", &Clump::mean_density, Unit::density)
                                    .finite()
                                    .at_least(0)
                                    .column("relevance", &Clump::relevance)
                                    .finite()
                                    .above(0)
                                    .column("center_of_mass", &Clump::center_of_mass, Unit::length)
                                    .finite()
                                    .column("n_particles", &Clump::n_particles, Unit::none, "", true)
                                    .at_least(0)
                                    .column("particle_mass", &Clump::particle_mass, Unit::mass, "", true)
                                    .finite()
                                    .at_least(0)
                                    .column("bulk_velocity", &Clump::bulk_velocity, Unit::velocity, "", true)
                                    .finite();
  // clang-format on
  return t;
}

const Table<Halo>& halo_table() {
  // clang-format off: one column and its constraints per line
  static const Table<Halo> t = Table<Halo>()
                                   .column("id", &Halo::id)
                                   .refers_to("/peaks/id")
                                   .unique()
                                   .column("n_cells", &Halo::n_cells)
                                   .at_least(0)
                                   .column("mass", &Halo::mass, Unit::mass)
                                   .finite()
                                   .at_least(0)
                                   .column("peak_position", &Halo::peak_position, Unit::length)
                                   .finite()
                                   .column("peak_density", &Halo::peak_density, Unit::density)
                                   .finite()
                                   .above(0)
                                   .column("n_clumps", &Halo::n_clumps)
                                   .at_least(0)
                                   .column("n_particles", &Halo::n_particles, Unit::none, "", true)
                                   .at_least(0)
                                   .column("particle_mass", &Halo::particle_mass, Unit::mass, "", true)
                                   .finite()
                                   .at_least(0)
                                   .column("bulk_velocity", &Halo::bulk_velocity, Unit::velocity, "", true)
                                   .finite();
  // clang-format on
  return t;
}

const Table<HierarchyRow>& hierarchy_table() {
  // clang-format off: one column and its constraints per line
  static const Table<HierarchyRow> t = Table<HierarchyRow>()
                                           .column("clump", &HierarchyRow::clump)
                                           .refers_to("/clumps/id")
                                           .unique()
                                           .column("into", &HierarchyRow::into)
                                           .refers_to("/clumps/id")
                                           .column("level", &HierarchyRow::level)
                                           .at_least(1)
                                           .column("saddle_density", &HierarchyRow::saddle_density, Unit::density)
                                           .finite()
                                           .above(0);
  // clang-format on
  return t;
}

void write_clumps(File& f, const Clumps& c, const mpi::Comm& comm) {
  const grid::GridMeta& grid = c.grid;
  const grid::GridGeometry& g = grid.geometry;
  f.create_group("/grid");
  write_grid_attributes(f, grid, "/grid");

  if (c.refinement) {
    write_refinement(f, "/grid/refinement", *c.refinement);
    write_cell_keys(f, c.cells, comm);
  } else {
    write_cell_index(f, g, c.cells, comm);
  }
  write_cell_labels(f, "clump", c.cell_clump, "level-0 clump ID of each test cell; 0 = discarded as noise", comm);
  write_cell_labels(f, "halo", c.cell_halo, "halo ID of each test cell; 0 = discarded as noise", comm);

  const ClumpsMeta& meta = c.meta;
  const std::string m = "/";
  f.write_attribute(m, "density_threshold", meta.density_threshold);
  f.write_attribute(m, "relevance_threshold", meta.relevance);
  if (meta.saddle_threshold) {
    f.write_attribute(m, "saddle_threshold", *meta.saddle_threshold);
    f.write_attribute(m, "saddle_threshold_text", meta.saddle_threshold_text);
  }
  if (meta.second_relevance) f.write_attribute(m, "second_relevance_threshold", *meta.second_relevance);
  if (meta.mass_threshold) {
    f.write_attribute(m, "mass_threshold", *meta.mass_threshold);
    f.write_attribute(m, "mass_threshold_text", meta.mass_threshold_text);
  }
  if (meta.noise_floor) {
    f.write_attribute(m, "noise_floor", *meta.noise_floor);
    f.write_attribute(m, "noise_floor_text", meta.noise_floor_text);
  }

  UnitNames units;
  units.length = grid.length_units;
  units.mass = grid.mass_units;
  units.density = grid.density_units;
  units.velocity = meta.velocity_units;
  const std::set<std::string> particle_columns =
      meta.with_particles ? std::set<std::string>{"n_particles", "particle_mass", "bulk_velocity"}
                          : std::set<std::string>{};
  merged_peak_table().write(f, "/peaks", c.peaks, units, comm);
  clump_table().write(f, "/clumps", c.clumps, units, comm, particle_columns);
  halo_table().write(f, "/halos", c.halos, units, comm, particle_columns);
  hierarchy_table().write(f, "/hierarchy", c.hierarchy, units, comm);
  f.write_attribute(
      "/hierarchy", "description",
      "saddle-threshold mergers: clump merged into `into` through a saddle of this level (PHEW Sec. 2.6)");
}

ClumpsHeader read_clumps_header(const File& f) {
  check_cells_format(f, "re-run phew-merge");
  ClumpsHeader h;
  h.grid = read_grid_attributes(f, "/grid", false);
  if (f.has("/grid/refinement")) h.refinement = read_refinement(f, "/grid/refinement");
  if (f.has_attribute("/", "density_threshold"))
    h.density_threshold = f.read_attribute_scalar<double>("/", "density_threshold");
  h.n_peaks = merged_peak_table().size(f, "/peaks");
  h.n_clumps = clump_table().size(f, "/clumps");
  h.n_halos = halo_table().size(f, "/halos");
  return h;
}

namespace {

// Clump, halo and parent IDs are peak IDs of the file's /peaks (1..n); deblend numbers its new peaks
// after n, so an ID beyond it would collide with them.
void check_peak_id(const File& f, const char* column, std::uint64_t row, std::int64_t id, std::int64_t n_peaks) {
  if (id < 1 || id > n_peaks)
    throw core::Error::input("{}: {} row {} is {}, not a peak of /peaks (IDs 1..{})", f.path(), column, row, id,
                             n_peaks);
}

bool finite(const Vec3& x) { return std::isfinite(x[0]) && std::isfinite(x[1]) && std::isfinite(x[2]); }

void check_peak_position(const File& f, const char* table, std::int64_t id, const Vec3& p) {
  if (!finite(p))
    throw core::Error::input("{}: {} {} has peak_position ({}, {}, {}) (expected a finite position)", f.path(), table,
                             id, p[0], p[1], p[2]);
}

}  // namespace

std::vector<MergedPeak> read_merged_peaks(const File& f) { return merged_peak_table().read(f, "/peaks"); }

std::vector<Clump> read_clumps(const File& f) {
  std::vector<Clump> rows = clump_table().read(f, "/clumps");
  const auto n_peaks = static_cast<std::int64_t>(merged_peak_table().size(f, "/peaks"));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Clump& c = rows[i];
    check_peak_id(f, "/clumps/id", i, c.id, n_peaks);
    check_peak_id(f, "/clumps/halo", i, c.halo, n_peaks);
    check_peak_id(f, "/clumps/parent", i, c.parent, n_peaks);
    check_peak_position(f, "clump", c.id, c.peak_position);
  }
  return rows;
}

// Labels are peak IDs: checked against the peak table.
grid::CellLabels read_clump_cells(const File& f, std::int64_t begin, std::int64_t end) {
  return read_cell_labels(f, "clump", begin, end, static_cast<std::int64_t>(merged_peak_table().size(f, "/peaks")));
}

grid::CellLabels read_halo_cells(const File& f, std::int64_t begin, std::int64_t end) {
  return read_cell_labels(f, "halo", begin, end, static_cast<std::int64_t>(merged_peak_table().size(f, "/peaks")));
}

namespace {

// RAMSES' header lines, character for character (pm/clump_merger.f90, write_clump_properties), and its
// row formats: clumps (I8,X,I8,1X,I2,X,I10,X,I10,8(X,1PE18.9E2)), haloes (I10,X,I10,5(X,1PE18.9E2)).
constexpr const char* kRamsesClumpHeader =
    "   index  halo   lev   parent      ncell    peak_x             peak_y             peak_z     "
    "        rho-               rho+               rho_av             mass_cl            relevance   ";
constexpr const char* kRamsesHaloHeader =
    "     index      ncell    peak_x             peak_y             peak_z     "
    "        rho+               mass      ";

std::string real(double x) { return fmt::format(" {:18.9E}", x); }
std::string header_column(const std::string& name) { return fmt::format("{:<19}", name); }

// The columns phew adds after RAMSES' own: with --particles, the particles in the cells and their
// mass-weighted mean velocity.
std::string particle_header() {
  std::string h = header_column("n_particles");
  for (const char* d : {"x", "y", "z"}) h += header_column(std::string("bulk_velocity_") + d);
  return h;
}
std::string particle_columns(std::int64_t n, const Vec3& v) {
  return fmt::format(" {:18d}", n) + real(v[0]) + real(v[1]) + real(v[2]);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> catalogue_text(const std::vector<Clump>& clumps,
                                                                const std::vector<Halo>& halos,
                                                                const grid::GridMeta& grid, const ClumpsMeta& meta) {
  const bool particles = meta.with_particles;
  const std::string velocity = particles ? fmt::format(", bulk_velocity_* in {}", meta.velocity_units) : "";
  // A comment after the names: numpy.genfromtxt(names=True) and loadtxt(skiprows=1) read the file as RAMSES'.
  const std::string units =
      fmt::format("# units: peak_x peak_y peak_z in {}, rho- rho+ rho_av in {}, mass_cl in {}{}\n", grid.length_units,
                  grid.density_units, grid.mass_units, velocity);
  const std::string halo_units = fmt::format("# units: peak_x peak_y peak_z in {}, rho+ in {}, mass in {}{}\n",
                                             grid.length_units, grid.density_units, grid.mass_units, velocity);
  std::string txt = std::string(kRamsesClumpHeader) + (particles ? particle_header() : "") + "\n" + units;
  std::string csv =
      "id,level,parent,halo,n_cells,peak_x,peak_y,peak_z,saddle_density,peak_density,mean_density,"
      "mass,relevance,com_x,com_y,com_z";
  csv += particles ? ",n_particles,particle_mass,bulk_velocity_x,bulk_velocity_y,bulk_velocity_z\n" : "\n";
  for (const Clump& c : clumps) {
    const Vec3& p = c.peak_position;
    txt += fmt::format("{:8d} {:8d} {:2d} {:10d} {:10d}", c.id, c.halo, c.level, c.parent, c.n_cells);
    for (double x : {p[0], p[1], p[2], c.saddle_density, c.peak_density, c.mean_density, c.mass, c.relevance})
      txt += real(x);
    txt += (particles ? particle_columns(c.n_particles, c.bulk_velocity) : "") + "\n";
    csv += fmt::format("{},{},{},{},{}", c.id, c.level, c.parent, c.halo, c.n_cells);
    for (double x : {p[0], p[1], p[2], c.saddle_density, c.peak_density, c.mean_density, c.mass, c.relevance,
                     c.center_of_mass[0], c.center_of_mass[1], c.center_of_mass[2]})
      csv += fmt::format(",{:.17g}", x);
    if (particles)
      csv += fmt::format(",{},{:.17g},{:.17g},{:.17g},{:.17g}", c.n_particles, c.particle_mass, c.bulk_velocity[0],
                         c.bulk_velocity[1], c.bulk_velocity[2]);
    csv += "\n";
  }
  std::string htxt = std::string(kRamsesHaloHeader) + header_column("n_clumps") + (particles ? particle_header() : "") +
                     "\n" + halo_units;
  std::string hcsv = "id,n_cells,peak_x,peak_y,peak_z,peak_density,mass,n_clumps";
  hcsv += particles ? ",n_particles,particle_mass,bulk_velocity_x,bulk_velocity_y,bulk_velocity_z\n" : "\n";
  for (const Halo& h : halos) {
    const Vec3& p = h.peak_position;
    htxt += fmt::format("{:10d} {:10d}", h.id, h.n_cells);
    for (double x : {p[0], p[1], p[2], h.peak_density, h.mass}) htxt += real(x);
    htxt +=
        fmt::format(" {:18d}", h.n_clumps) + (particles ? particle_columns(h.n_particles, h.bulk_velocity) : "") + "\n";
    hcsv += fmt::format("{},{},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{}", h.id, h.n_cells, p[0], p[1], p[2],
                        h.peak_density, h.mass, h.n_clumps);
    if (particles)
      hcsv += fmt::format(",{},{:.17g},{:.17g},{:.17g},{:.17g}", h.n_particles, h.particle_mass, h.bulk_velocity[0],
                          h.bulk_velocity[1], h.bulk_velocity[2]);
    hcsv += "\n";
  }
  return {{".clumps.txt", txt}, {".clumps.csv", csv}, {".halos.txt", htxt}, {".halos.csv", hcsv}};
}

std::map<std::int64_t, std::array<double, 3>> read_clump_peak_positions(const File& f,
                                                                        const std::vector<std::int64_t>& ids) {
  std::map<std::int64_t, std::array<double, 3>> out;
  const std::uint64_t rows = f.dataset_info("/clumps/id").elements();
  const auto n_peaks = static_cast<std::int64_t>(merged_peak_table().size(f, "/peaks"));
  constexpr std::uint64_t kChunk = 1 << 20;
  for (std::uint64_t b = 0; b < rows; b += kChunk) {
    const std::uint64_t c = std::min(kChunk, rows - b);
    const auto id = f.read_rows<std::int64_t>("/clumps/id", b, c);
    const auto pos = f.read_rows<double>("/clumps/peak_position", b, c);
    if (pos.size() != 3 * c)
      throw core::Error::input("{}: /clumps/peak_position has {} values for {} rows of /clumps/id", f.path(),
                               pos.size(), c);
    for (std::size_t i = 0; i < c; ++i) {
      check_peak_id(f, "/clumps/id", b + i, id[i], n_peaks);
      if (!std::binary_search(ids.begin(), ids.end(), id[i])) continue;
      const Vec3 p{pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]};
      check_peak_position(f, "clump", id[i], p);
      out[id[i]] = p;
    }
  }
  return out;
}

std::vector<HaloCentre> read_halo_centres(const File& f) {
  for (const char* d : {"/halos/id", "/halos/mass", "/halos/peak_position"})
    if (!f.has(d)) throw core::Error::input("{}: no dataset {} (is it a clumps.h5 from phew-merge?)", f.path(), d);
  const auto id = f.read<std::int64_t>("/halos/id");
  const auto mass = f.read<double>("/halos/mass");
  const auto pos = f.read<double>("/halos/peak_position");
  if (mass.size() != id.size() || pos.size() != 3 * id.size())
    throw core::Error::input("{}: /halos tables of different lengths", f.path());
  std::vector<HaloCentre> out(id.size());
  for (std::size_t k = 0; k < id.size(); ++k) {
    out[k] = {id[k], mass[k], {pos[3 * k], pos[3 * k + 1], pos[3 * k + 2]}};
    check_peak_position(f, "halo", id[k], out[k].position);
    if (!std::isfinite(mass[k]) || mass[k] < 0)
      throw core::Error::input("{}: halo {} has mass {} (expected a finite mass >= 0)", f.path(), id[k], mass[k]);
  }
  std::stable_sort(out.begin(), out.end(), [](const HaloCentre& a, const HaloCentre& b) {
    return a.mass != b.mass ? a.mass > b.mass : a.id < b.id;
  });
  return out;
}

}  // namespace phew::io
