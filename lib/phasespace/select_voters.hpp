// voters' stage (Geda & Teyssier 2025, Sec. 4.1-4.4): each peak's search radius, its candidates (every
// particle within it), their potential (stored, or computed by lib/gravity) and its N_v most-bound
// candidates in the boosted potential (voters.hpp), as the rows of voters.h5.
#pragma once

#include <phew/core/timer.hpp>
#include <phew/gravity/setup.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/model/peaks.hpp>
#include <phew/model/voters.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/particle_set.hpp>

#include <string>
#include <vector>

namespace phew::phasespace {

// Voters per peak (Geda & Teyssier 2025), written here only: voters' option, the workflow schema and the
// docs show it (tests/cli/defaults.bats).
inline constexpr std::int64_t kDefaultVoters = 20;

struct VoterParams {
  std::int64_t n_voters = kDefaultVoters;
  double search_radius = 0;        // R, snapshot length units; 0: default_search_radius
  double min_radius = 0;           // the smallest search radius, however close the nearest peak
  bool boost = true;               // false: rank by the plain potential
  bool stored_potential = false;   // the particles carry the snapshot's Potential and Acceleration
  bool profile_potential = false;  // each peak's candidates in their own spherical potential (spherical_potential)
  double scale_factor = 1;         // a of a comoving snapshot (comoving positions, Gadget's potential), else 1
  double G = 0;                    // in the snapshot's units
  double softening = 0;            // computed potential: Plummer softening (length units)
  gravity::SetupParams gravity;    // computed potential: mesh and opening angle
  bool periodic = true;            // the snapshot's box, for the computed potential
  std::array<double, 3> box_size{};
  std::uint64_t n_particles = 0;  // in the snapshot (of the selected types)
  double mean_density = 0;        // for the default search radius; 0: the grid's (voters --mean-from)
  int threads = 1;                // peaks and tree groups shared among threads; the same voters for any number
};

// Half the radius within which the most massive peak would be 200x the grid's mean density (a cell
// when that is unknown).
double default_search_radius(const std::vector<model::PeakRow>& peaks, const grid::GridMeta& grid);

// Search radii min(R, 1/4 of the distance to the nearest other peak), at least min_radius, minimum
// image. Peaks deblended from the same patch (same parent clump) share its place and are told apart by
// velocity, not by the radius, so they do not shrink each other's sphere. Not collective.
std::vector<double> search_radii(const std::vector<model::PeakRow>& peaks, const grid::GridGeometry& grid, double R,
                                 double min_radius);

struct VoterSelection {
  std::vector<model::VoterRow> voters;     // this rank's rows, after the lower ranks' (by peak, most bound first)
  std::vector<model::VoterPeakRow> peaks;  // this rank's rows, after the lower ranks' (by peak ID)
  double search_radius = 0;                // R used
  std::string potential_source;            // what voters.h5 records
  // Totals over the ranks:
  std::int64_t n_peaks = 0, n_voters = 0;
  std::int64_t n_short = 0;      // peaks with fewer than n_voters candidates
  std::uint64_t n_computed = 0;  // particles whose potential was computed
};

// The voters of every peak of `peaks` (every rank holds them all: io::read_peak_rows) among the
// particles of the snapshot (`particles`: this rank's share, read with ids and velocities, and
// potential and acceleration when params.stored_potential; released once distributed). Rank r handles
// the peaks in its x-range and receives every particle its candidates (and their sources) need, and
// candidates are taken in particle-ID order, so the result does not depend on the rank count.
// Collective. Phases: long-range (computed potential only), distribute, potential, voters.
VoterSelection select_voters(const grid::GridMeta& grid, std::vector<model::PeakRow> peaks,
                             particles::ParticleSet particles, const VoterParams& params, const mpi::Comm& comm,
                             const core::PhaseReport& phase = {});

}  // namespace phew::phasespace
