// maps.h5 (dtfe-surface): a surface-density map per field centre and a row per field (docs/formats.md).
#pragma once

#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace phew::io {

// A field's row of /maps: where and how it was mapped and what went into it.
struct MapRow {
  std::array<double, 3> center{};  // wrapped into a periodic box
  std::int64_t id = 0;             // halo ID (clumps.h5) or the row number from 1
  double size = 0, depth = 0, margin = 0;
  std::int64_t resolution = 0;     // pixels per side
  std::int64_t axis = 2;           // line of sight: 0, 1, 2 = x, y, z
  std::int64_t n_particles = 0;    // particles (and periodic images) in the window
  std::int64_t n_vertices = 0;     // distinct positions triangulated
  std::int64_t n_tetrahedra = 0;
  double window_mass = 0;          // mass of the window's particles
  double map_mass = 0;             // the finite sigma (not NaN: outside the hull) summed times the pixel area
};
const Table<MapRow>& map_table();

// Where and how long a field was computed (/timing): differs from run to run, so kept apart from /maps.
struct MapTiming {
  double triangulation = 0;   // seconds, with the densities
  double interpolation = 0;   // seconds
  double predicted = 0;       // the workload model's prediction (model schedule), seconds
  std::int64_t rank = 0;      // the rank that computed it
  std::int64_t model_sample = 0;  // 1: a field timed to fit the model
};
const Table<MapTiming>& map_timing_table();

// What every field shares (the attributes of /maps).
struct MapsMeta {
  std::string length_units, mass_units;  // sigma is in (mass)/(length)^2
  std::array<int, 3> axes{0, 1, 2};      // the map's axes u, v and the line of sight, as snapshot axes
  std::string mode;                      // "ray" or "exact"
  std::int64_t samples = 1;              // rays per pixel in ray mode
  std::string backend;                   // "cgal" or "qhull"
  std::string centers_source;            // "text", "hdf5" or "clumps"
  std::array<double, 3> box_size{};      // the snapshot's (0: none)
  bool periodic = false;
  double time = 0, redshift = 0;         // the snapshot's
  bool float64 = false;                  // sigma stored as float64 (else float32)

  std::string sigma_units() const;       // "(mass)/(length)^2"
};

// The whole product, as one rank holds it: its block of consecutive fields, after the lower ranks'.
struct Maps {
  MapsMeta meta;
  std::int64_t resolution = 0;     // pixels per side of every map
  std::vector<MapRow> rows;
  std::vector<MapTiming> timing;   // one per row
  std::vector<double> sigma;       // [rows][resolution][resolution]: sigma[f][i][j], i along u, j along v
};

// Writes /maps (sigma, the rows and the attributes) and /timing. Collective.
void write_maps(File& file, const Maps& maps, const mpi::Comm& comm);

// What a reader needs before the tables: the attributes, the number of fields and their resolution.
struct MapsHeader {
  MapsMeta meta;
  std::uint64_t n_fields = 0;
  std::int64_t resolution = 0;
};
MapsHeader read_maps_header(const File& file);  // throws Error(input) naming the file and object
std::vector<MapRow> read_map_rows(const File& file);
std::vector<MapTiming> read_map_timing(const File& file);
// Maps [first, first + count), [count][resolution][resolution], as float64 whatever is stored.
std::vector<double> read_map_sigma(const File& file, std::uint64_t first, std::uint64_t count);

// The PNG quicklook of field `index` (from 0) beside OUTPUT: OUTPUT without .h5, then .0001.png, ...
std::string quicklook_path(const std::string& output, std::size_t index);
// The quicklooks of this rank's fields (io/quicklook.hpp) as (path beside OUTPUT, PNG bytes). Collective
// (the numbering of the fields).
std::vector<std::pair<std::string, std::string>> quicklooks(const std::string& output, const Maps& maps,
                                                            const mpi::Comm& comm);

}  // namespace phew::io
