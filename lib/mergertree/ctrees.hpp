// The Consistent-Trees export (docs/formats.md, "tree_0_0_0.dat"): the layout consistent-trees itself
// writes and ytree's consistent_trees frontend reads. Units follow consistent-trees: comoving Mpc/h for
// positions, comoving kpc/h for radii, Msun/h for masses, physical peculiar km/s for velocities and the
// scale factor for `scale`.
#pragma once

#include <phew/mergertree/stages.hpp>
#include <phew/model/arbor.hpp>

#include <string>
#include <vector>

namespace phew::mergertree {

// The trees of `tree`: every peak without a descendant is a root (the peaks of the last snapshot, and a
// lineage that ends without being linked on); its tree is every row whose chain of descendants leads to
// it. Returns, per tree, the rows of tree.state.rows in depth-first order from the root, the main
// progenitor before the other progenitors (then by mass, descending; then by (snapshot, ID)). Trees are
// ordered by their root: latest snapshot first, then by mass, descending.
std::vector<std::vector<std::size_t>> depth_first_trees(const TreeState& state);

// Throws Error(input) unless the tree can be exported or measured: it knows its simulation's units (a
// tree.h5 from before they were stored, or stages whose snapshots could not be read, do not), a
// cosmological run has its cosmology, and the stages go forward in time (a --backwards tree's
// descendants are earlier peaks).
void check_exportable(const Tree& tree);

// Whether spherical-overdensity masses were measured (mergertree --particles) for any stage of the
// tree: then Mvir, Rvir and M200c are the measurements, NaN where there is none; otherwise Mvir is the
// peak's mass and Rvir and M200c are 0, as each file's header says (docs/formats.md).
bool has_so_masses(const Tree& tree);

// Whether any stage of the tree came with unbind's bound.h5 (halo.bound.given): then Mvir, Rvir and
// M200c are bound.h5's for its rows, and the exports carry the bound properties (NaN where there is none).
bool has_bound_properties(const Tree& tree);

// A peak's mass for the merger ratio of scale_of_last_MM and the statistics' fallbacks: its bound mass
// when its stage came with a bound.h5, else the peak's mass (its particles).
double bound_or_peak_mass(const TreeRow& r);

// One row of the exports, in consistent-trees' units (docs/formats.md).
struct ExportRow {
  double scale = 0, desc_scale = 0;
  std::int64_t id = 0, desc_id = -1, num_prog = 0, pid = -1, desc_pid = -1;
  double mvir = 0, rvir = 0, m200c = 0;  // Msun/h, comoving kpc/h (has_so_masses or has_bound_properties)
  // With has_bound_properties: bound.h5's, NaN where not measured or the stage had none. Comoving kpc/h,
  // physical km/s, Msun/h.
  double rs = 0, vrms = 0, vmax = 0, spin = 0, xoff = 0, spin_bullock = 0, b_to_a = 0, c_to_a = 0, virial_ratio = 0;
  double bound_mass = 0;
  // Per type of Tree::bound_types (empty without), with bound sub-objects: bound mass (Msun/h),
  // half-mass radius (comoving kpc/h), 1-D velocity dispersion (km/s) and the masses within the tree's
  // apertures ([aperture][type], Msun/h); NaN for a stage without per-type columns.
  std::vector<double> mass_type{}, half_mass_radius_type{}, velocity_dispersion_type{}, aperture_mass_type{};
  std::array<double, 3> j{};  // (Msun/h) (Mpc/h) km/s, physical; NaN as the others, 0 without bound properties
  bool mmp = false;
  double scale_of_last_mm = 0;
  std::array<double, 3> x{}, v{};  // comoving Mpc/h, physical peculiar km/s
  std::int64_t breadth_first = 0, depth_first = 0, tree_root = 0, orig_id = 0, snap = 0;
  std::int64_t next_coprogenitor = -1, last_progenitor = 0, last_mainleaf = 0;
  std::int64_t lineage = 0, gap = 0;
  bool merged = false, revived = false, artefact = false, from_deblending = false;
};

// The rows of every tree (the order of depth_first_trees). Throws Error(input) when the tree does not
// know its simulation's units (a tree.h5 from before the units were stored, or stages whose snapshots
// could not be read).
std::vector<std::vector<ExportRow>> export_rows(const Tree& tree);

// tree_0_0_0.dat, the whole file.
std::string ctrees_file(const Tree& tree, const std::string& written_by);

// The same trees as ytree's own arbor (io/arbor_file.hpp): the fields ytree knows by name (uid,
// desc_uid, scale_factor, mass, virial_radius, position_*, velocity_*, upid) and phew's.
model::Arbor arbor_of(const Tree& tree);

// Conversion factors from the snapshot's units to consistent-trees' (Mpc/h, Msun/h, km/s), and the
// Hubble parameter the header states (1 when the snapshot has no cosmology).
struct CtreesUnits {
  double mpc_h = 1, msun_h = 1, km_s = 1, h = 1;
};
CtreesUnits ctrees_units(const SimulationUnits& u);

}  // namespace phew::mergertree
