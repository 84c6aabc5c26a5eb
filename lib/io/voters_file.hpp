// voters.h5 (voters): each peak's most-bound particles and the search that found them
// (docs/formats.md). mergertree reads it back through the readers here.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>

#include <array>
#include <string>
#include <vector>

namespace phew::io {

// A voter of a peak (/voters): rows sorted by peak, most bound first.
struct VoterRow {
  std::int64_t peak = 0;
  std::uint64_t particle_id = 0;
  double binding_energy = 0;  // per unit mass, physical
  std::int64_t rank = 0;      // 0 for the most bound voter of its peak, 1, 2, ... (the row order; not stored)
};
const Table<VoterRow>& voter_table();

// The search of a peak (/peaks).
struct VoterPeakRow {
  std::int64_t id = 0;
  double search_radius = 0;
  std::array<double, 3> a0{};  // the candidates' mean acceleration (the boost), physical
  std::int64_t n_voters = 0;
  std::int64_t n_candidates = 0;
};
const Table<VoterPeakRow>& voter_peak_table();

struct VotersMeta {
  std::string potential_source;  // "snapshot Potential and Acceleration" or the computed method
  std::int64_t n_voters_requested = 0;
  double time = 0;
  bool boosted = true;
  std::string energy_units, acceleration_units;  // of binding_energy and a0
};

// The whole product, as one rank holds it: its rows of both tables (which follow the lower ranks' rows).
struct Voters {
  grid::GridMeta grid;
  VotersMeta meta;
  std::vector<VoterRow> voters;
  std::vector<VoterPeakRow> peaks;
};

// Writes /grid (attributes), /voters, /peaks and the root attributes. Collective.
void write_voters(File& file, const Voters& voters, const mpi::Comm& comm);

struct VotersHeader {
  grid::GridMeta grid;
  VotersMeta meta;
  std::uint64_t n_voters = 0, n_peaks = 0;
};
// Throws Error(input) naming the file and what is missing. Not collective.
VotersHeader read_voters_header(const File& file);
std::vector<VoterRow> read_voter_rows(const File& file);  // the whole /voters table, with `rank` filled in
std::vector<VoterPeakRow> read_voter_peaks(const File& file);

}  // namespace phew::io
