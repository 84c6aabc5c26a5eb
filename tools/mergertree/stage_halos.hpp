// What a stage's own inputs add to its peaks for the exports: the host of each peak (from the clumps.h5
// the peaks were made from), the simulation's units and cosmology (from the snapshot's header) and, with
// --particles, spherical-overdensity masses and radii from the snapshot's particles. Rank 0 alone.
#pragma once

#include <phew/io/peaks_file.hpp>
#include <phew/manifest/manifest.hpp>
#include <phew/mergertree/stages.hpp>

#include <string>

namespace phew::tools {

// `rows` are the peak rows of `peaks_path` (for their parent clumps). Sets stage.peaks[*].halo.host and
// returns the units of the stage's simulation (known = false, with a warning, when the snapshot
// recorded in the manifest of `peaks_path` cannot be read), settled as every tool does (`units`: the
// --units text, "" for none; recorded in `man`). With `so_masses`, also halo.mvir, rvir and m200c
// around each peak's shrinking-sphere centre (NaN where not measurable; docs/tools/mergertree.md,
// "Spherical-overdensity masses"): Error(input) when the snapshot cannot be read, has no cosmology (no
// critical density) or lacks a particle of the peaks' membership.
mergertree::SimulationUnits add_stage_halos(mergertree::Stage& stage, const std::string& peaks_path,
                                            const io::PeaksHeader& header, const std::vector<model::PeakRow>& rows,
                                            bool so_masses, const std::string& units, int threads,
                                            manifest::Builder& man);

// The properties of each peak's bound particles from `bound_path` (unbind's bound.h5 of these peaks;
// an object is matched to the peak of the same ID): halo.bound, and halo.mvir, rvir and m200c replaced
// by bound.h5's (docs/tools/mergertree.md, "Bound objects"). Error(input) when a peak has no object or
// bound.h5 was made in other units than `units` (the stage's, when known).
void add_bound_properties(mergertree::Stage& stage, const std::string& bound_path,
                          const mergertree::SimulationUnits& units);

}  // namespace phew::tools
