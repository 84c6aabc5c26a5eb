// The rows of a deblending (deblend's result; peaks.h5, lib/io/peaks_file.hpp): the phase-space peaks
// and every patch particle's peak. voters and mergertree take them as their input.
#pragma once

#include <phew/grid/geometry.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace phew::model {

// A peak (/peaks): a level-0 clump's primary velocity peak (it keeps the clump's ID) or a peak found
// only in velocity space.
struct PeakRow {
  std::int64_t id = 0;
  std::int64_t parent_clump = 0;
  std::array<double, 3> position{};               // mass-weighted mean of its particles (periodic-aware)
  std::array<double, 3> densest_cell_position{};  // centre of the grid cell holding most of them
  std::array<double, 3> velocity{};               // mass-weighted peculiar velocity (physical)
  std::int64_t n_particles = 0;
  double mass = 0;
  bool from_deblending = false;  // exists only in velocity space
};

// A particle of a patch and its peak (/particles).
struct PeakMember {
  std::uint64_t id = 0;
  std::int64_t peak = 0;
};

struct PeaksMeta {
  double time = 0, redshift = 0;      // of the snapshot
  double gravitational_constant = 0;  // in the snapshot's units
  std::int64_t first_new_id = 1;      // peaks found only in velocity space are numbered from here
  std::string velocity_units;         // of /peaks/velocity: "km/s (peculiar)"
};

// The whole product, as one rank holds it: its rows of both tables (which follow the lower ranks' rows).
struct Peaks {
  grid::GridMeta grid;
  PeaksMeta meta;
  std::vector<PeakRow> peaks;         // sorted by ID over the ranks
  std::vector<PeakMember> particles;  // sorted by particle ID over the ranks
};

}  // namespace phew::model
