// The frame of a snapshot's unbinding (Frame, docs/unbind-method.md): from its header and the grid the
// clumps were found on, and what bound.h5 records of it.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/model/bound.hpp>
#include <phew/particles/particle_set.hpp>
#include <phew/unbind/unbind.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace phew::unbind {

// Comoving positions and peculiar velocities; physical separations a dx and the Hubble flow H(a) a dx,
// H from the grid's comoving critical density (particles::hubble_rate; no Hubble flow without one, or
// in a non-comoving snapshot). `softening` comoving; none: gravity::default_softening of the grid for
// `n_particles`.
Frame frame_of(const particles::SnapshotInfo& info, const grid::GridMeta& grid, std::optional<double> softening,
               std::uint64_t n_particles);

// Apertures given in physical kpc as radii in the snapshot's physical length units: through its length
// unit, times h when that unit is h-scaled (h = 1 when the snapshot gives none, as for yt's catalogue).
std::vector<double> aperture_radii(const particles::SnapshotInfo& info, const std::vector<double>& kpc);

// bound.h5's record of the frame, the parameters and the snapshot's units and cosmology, with the
// per-type columns' types (params.types) and apertures in kpc.
model::BoundMeta bound_meta(const Frame& frame, const Params& params, const particles::SnapshotInfo& info,
                            const std::vector<double>& apertures_kpc);

}  // namespace phew::unbind
