// Tree-quality statistics of the Sussing Merger Trees comparison (Srisawat et al. 2013; Avila et al.
// 2014), over the trees of the peaks of the last snapshot: main-branch lengths, branches per tree,
// direct progenitors, mass growth β_M and fluctuation ξ_M along main branches, the displacement
// statistic Δ_r, and counts of revivals, links that skip snapshots and artefacts. Conventions are in
// docs/tools/mergertree.md ("Tree statistics") and repeated in the report.
#pragma once

#include <phew/mergertree/stages.hpp>

#include <nlohmann/json.hpp>

namespace phew::mergertree {

struct TreeStatsParams {
  double min_mass = 0;  // final peaks below this mass (snapshot units; Mvir when measured) are left out
};

// The report: {"conventions": ..., "haloes": {...}, "subhaloes": {...}, "counts": {...}}. Haloes are
// the final peaks that are centrals (no host), subhaloes those inside another peak's halo. Throws
// Error(input) as check_exportable (ctrees.hpp).
nlohmann::json tree_statistics(const Tree& tree, const TreeStatsParams& params);

// Cosmic time at scale factor a for a flat ΛCDM universe, in units of 1/H0 (a matter-only or a
// Λ-only universe are the limits). Used for the time ratios of β_M and, scaled by H0, for Δ_r.
double cosmic_time(double a, double omega_m, double omega_lambda);

// The mass-growth and fluctuation measures between adjacent main-branch entries (exposed for tests):
// β = (2/π) atan α, α = (t2 + t1)(M2 − M1) / ((t2 − t1)(M2 + M1)).
double mass_growth_beta(double t1, double m1, double t2, double m2);

}  // namespace phew::mergertree
