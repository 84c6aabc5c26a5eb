// peaks.h5 (deblend): the phase-space peaks and every patch particle's peak (docs/formats.md). voters and
// mergertree read it back through the readers here.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>

#include <array>
#include <string>
#include <vector>

namespace phew::io {

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
const Table<PeakRow>& peak_table();

// A particle of a patch and its peak (/particles).
struct PeakMember {
  std::uint64_t id = 0;
  std::int64_t peak = 0;
};
const Table<PeakMember>& peak_member_table();

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
  std::vector<PeakRow> peaks;          // sorted by ID over the ranks
  std::vector<PeakMember> particles;   // sorted by particle ID over the ranks
};

// Writes /grid (attributes), /peaks, /particles and the root attributes. Collective.
void write_peaks(File& file, const Peaks& peaks, const mpi::Comm& comm);

struct PeaksHeader {
  grid::GridMeta grid;
  PeaksMeta meta;
  std::uint64_t n_peaks = 0, n_particles = 0;
};
// Throws Error(input) naming the file and what is missing. Not collective.
PeaksHeader read_peaks_header(const File& file);
// Throws Error(input) for a peaks.h5 whose /peaks/velocity is not peculiar: one written before 2026-11-26
// held the velocities as the snapshot stored them (Gadget's u = v_pec / sqrt(a)), to be re-made by deblend.
void check_peculiar_velocities(const PeaksHeader& header, const std::string& path);
std::vector<PeakRow> read_peak_rows(const File& file);        // the whole /peaks table
std::vector<PeakMember> read_peak_members(const File& file);  // the whole /particles table

}  // namespace phew::io
