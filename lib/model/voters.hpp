// The rows of a voter selection (voters' result; voters.h5, lib/io/voters_file.hpp): each peak's
// most-bound particles and the search that found them. mergertree takes them as its input.
#pragma once

#include <phew/grid/geometry.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace phew::model {

// A voter of a peak (/voters): rows sorted by peak, most bound first.
struct VoterRow {
  std::int64_t peak = 0;
  std::uint64_t particle_id = 0;
  double binding_energy = 0;  // per unit mass, physical
  std::int64_t rank = 0;      // 0 for the most bound voter of its peak, 1, 2, ... (the row order; not stored)
};

// The search of a peak (/peaks).
struct VoterPeakRow {
  std::int64_t id = 0;
  double search_radius = 0;
  std::array<double, 3> a0{};  // the candidates' mean acceleration (the boost), physical
  std::int64_t n_voters = 0;
  std::int64_t n_candidates = 0;
};

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

}  // namespace phew::model
