// dtfe-surface's stage: surface-density maps around many centres on many ranks (Rangel et al. 2016,
// Sec. IV B-E). The domain (the periodic box, a closed box or the particles' extent), a block per rank
// with ghost zones of the window's half-widths, each field's margin (fixed, or grown until the hull
// covers the map: silhouette.hpp; wider ghost zones in another round when a field needs them), a task
// per field on the rank whose block holds its centre, the fields shared by a schedule
// (field_runner.hpp), and every map sent to the rank that writes its row of maps.h5.
#pragma once

#include <phew/core/timer.hpp>
#include <phew/dtfe/field_runner.hpp>
#include <phew/dtfe/surface_density.hpp>
#include <phew/model/maps.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace phew::dtfe {

struct SurfaceMapsParams {
  double size = 0;              // side of each square map, snapshot length units
  int resolution = 0;           // pixels per side
  std::optional<double> depth;  // along the line of sight; empty: the periodic box (twice an open box)
  double margin = 0;            // triangulated beyond the map's sides (auto_margin: the first try)
  bool auto_margin = false;     // each field's margin: margin * 2^k, the first that margin_suffices
  int axis = 2;                 // line of sight: 0, 1, 2 = x, y, z
  MapSettings map;              // ray or exact, samples, backend, threads
  Schedule schedule = Schedule::dynamic;
};

// The particles and the fields. Centres and IDs are the same on every rank.
struct SurfaceMapsInput {
  std::vector<double> position, mass;          // this rank's share, [n][3] (wrapped in a periodic box) and [n]
  std::array<double, 3> box_size{};            // the snapshot's box; 0 on an axis: none (the particles' extent)
  bool periodic = false;                       // the box is periodic
  std::vector<std::array<double, 3>> centres;  // every field's centre
  std::vector<std::int64_t> ids;               // every field's ID
  std::string snapshot, centres_file;          // named in error messages
};

// Totals over every field (summed in field order: the same on any rank count) and how the work went.
struct SurfaceMapsSummary {
  double depth = 0;  // the depth used, length units
  bool periodic = false;
  std::uint64_t n_particles = 0, steps = 0, flat_tetrahedra = 0, absorbed = 0;
  std::uint64_t pixels_outside = 0, fields_outside = 0;  // NaN pixels (outside the hull), fields with any
  double margin_min = 0, margin_max = 0;                 // over the fields
  int margin_rounds = 0;                                 // redistributions with wider ghost zones
  double window_mass = 0, map_mass = 0, seconds_triangulation = 0, seconds_interpolation = 0;
  std::array<int, 3> decomposition{1, 1, 1};
  std::uint64_t fields_moved = 0;
  double busy_seconds_max = 0, busy_seconds_mean = 0;
  RunReport report;  // this rank's; the fitted model is every rank's
};

struct SurfaceMaps {
  model::Maps maps;  // this rank's block of fields; meta: the map's axes, mode, samples, backend, box
  SurfaceMapsSummary summary;
};

// The maps of every field. Each rank returns a block of consecutive fields in rank order (write them
// with io::write_maps after setting the units, time and source in maps.meta); the maps do not depend on
// the rank count, the schedule or the threads; nor do the margins, which depend only on each field's
// particles. Pixels outside a field's hull are NaN (surface_density.hpp), unless the field's window
// holds every particle across the line of sight (an open box). Collective. Throws Error(usage) for a depth beyond a
// periodic box, Error(input) (agreed) for a particle or centre outside an open box, a field with fewer
// than 4 particles or coplanar ones, or too little memory. Phases: distribute, count, fields, gather.
SurfaceMaps surface_maps(SurfaceMapsInput input, const SurfaceMapsParams& params, const mpi::Comm& comm,
                         const core::PhaseReport& phase = {});

}  // namespace phew::dtfe
