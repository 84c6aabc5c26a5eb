// Velocity deblending of one peak patch (Geda & Teyssier 2025, Sec. 3.2): a 3-D histogram of the
// member velocities with bins of a fraction of the escape velocity, segmented by the same watershed,
// saddle search and relevance merging as the density grid (lib/phew), all on one rank.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace phew::phasespace {

struct VelocitySplitParams {
  double bin = 0;                   // histogram bin size (velocity units), f * v_e
  double relevance = 3;             // velocity peaks with peak/key saddle below this merge upward
  std::int64_t min_particles = 20;  // velocity peaks with fewer particles join the primary
  std::int64_t max_bins = 128;      // per axis; a wider velocity range gets wider bins (recorded)
};

struct VelocitySplit {
  std::vector<int> peak;                      // per particle: 0 = the primary velocity peak, 1, 2, ... the others
  int n_peaks = 1;                            // velocity peaks kept (primary included)
  double bin = 0;                             // the bin size used
  std::array<std::int64_t, 3> bins{1, 1, 1};  // histogram shape
};

// Splits particles (velocities [n][3], masses) in the order given. The primary is the most massive
// velocity peak; the others are numbered by decreasing peak density of their histogram peak. Not
// collective (runs on mpi::Comm::self(): no MPI call, so threads may run it).
VelocitySplit split_velocities(const std::vector<double>& velocity, const std::vector<double>& mass,
                               const VelocitySplitParams& params);

}  // namespace phew::phasespace
