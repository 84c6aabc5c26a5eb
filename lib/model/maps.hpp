// The rows of surface-density maps (dtfe-surface's result; maps.h5, lib/io/maps_file.hpp): a map per
// field centre and a row per field.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace phew::model {

// A field's row of /maps: where and how it was mapped and what went into it.
struct MapRow {
  std::array<double, 3> center{};  // wrapped into a periodic box
  std::int64_t id = 0;             // halo ID (clumps.h5) or the row number from 1
  double size = 0, depth = 0, margin = 0;
  std::int64_t resolution = 0;   // pixels per side
  std::int64_t axis = 2;         // line of sight: 0, 1, 2 = x, y, z
  std::int64_t n_particles = 0;  // particles (and periodic images) in the window
  std::int64_t n_vertices = 0;   // distinct positions triangulated
  std::int64_t n_tetrahedra = 0;
  double window_mass = 0;  // mass of the window's particles
  double map_mass = 0;     // the finite sigma (not NaN: outside the hull) summed times the pixel area
};

// Where and how long a field was computed (/timing): differs from run to run, so kept apart from /maps.
struct MapTiming {
  double triangulation = 0;       // seconds, with the densities
  double interpolation = 0;       // seconds
  double predicted = 0;           // the workload model's prediction (model schedule), seconds
  std::int64_t rank = 0;          // the rank that computed it
  std::int64_t model_sample = 0;  // 1: a field timed to fit the model
};

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
  double time = 0, redshift = 0;  // the snapshot's
  bool float64 = false;           // sigma stored as float64 (else float32)

  std::string sigma_units() const { return "(" + mass_units + ")/(" + length_units + ")^2"; }
};

// The whole product, as one rank holds it: its block of consecutive fields, after the lower ranks'.
struct Maps {
  MapsMeta meta;
  std::int64_t resolution = 0;  // pixels per side of every map
  std::vector<MapRow> rows;
  std::vector<MapTiming> timing;  // one per row
  std::vector<double> sigma;      // [rows][resolution][resolution]: sigma[f][i][j], i along u, j along v
};

}  // namespace phew::model
