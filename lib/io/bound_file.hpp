// bound.h5 (unbind): the objects after unbinding with their properties, every particle of their cells
// with the object it is bound to, and each object's most-bound particles (docs/formats.md); and the
// halo catalogue that yt's halo_catalog frontend loads (unbind --export-yt).
#pragma once

#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/model/bound.hpp>
#include <phew/model/peaks.hpp>
#include <phew/model/voters.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace phew::io {

// The columns of each table (the rows are lib/model/bound.hpp's).
const Table<model::BoundObject>& bound_object_table();

// One object's per-type columns of /objects as the file holds them (model::BoundTypeRow gathered by
// object): [types], the aperture masses [apertures][types] in C order.
struct ObjectTypes {
  std::vector<std::int64_t> n_bound, n_bound_inclusive;
  std::vector<double> mass, mass_inclusive, half_mass_radius, half_mass_radius_inclusive;
  std::vector<double> velocity_dispersion, velocity_dispersion_inclusive;
  std::vector<double> aperture_mass, aperture_mass_inclusive;
};
// The per-type columns of /objects (written when types were measured: optional to a reader).
const Table<ObjectTypes>& bound_type_table();
// A rank's objects' per-type columns from its rows (Bound::by_type). Throws Error(internal) when the
// rows are not a row per object and type, in order.
std::vector<ObjectTypes> object_types(const model::Bound& bound);
const Table<model::BoundParticle>& bound_particle_table();
const Table<model::MostBoundRow>& most_bound_table();

// Writes /grid (attributes), /objects, /particles, /most_bound and the root attributes. Collective.
void write_bound(File& file, const model::Bound& bound, const mpi::Comm& comm);

struct BoundHeader {
  grid::GridMeta grid;
  model::BoundMeta meta;
  std::uint64_t n_objects = 0, n_particles = 0;
};
// Throws Error(input) naming the file and what is missing. Not collective.
BoundHeader read_bound_header(const File& file);
std::vector<model::BoundObject> read_bound_objects(const File& file);  // the whole /objects table
// The per-type columns of every object (empty when the file has none), their widths checked against the
// attributes type_codes and apertures_kpc. Throws Error(input).
std::vector<ObjectTypes> read_bound_types(const File& file);
// The most-bound particles as a tree's voters (mergertree PEAKS:BOUND): /most_bound with each particle's
// energy from /particles, rows by object then rank. Throws Error(input) naming the file when an object
// is not one of `peaks` (read from `peaks_path`), the rows are out of order or a particle is missing.
// Not collective.
std::vector<model::VoterRow> read_bound_voters(const File& file, const std::vector<model::PeakRow>& peaks,
                                               const std::string& peaks_path);

// The objects as a yt halo catalogue (yt's halo_catalog frontend: root attribute data_type
// "halo_catalog", the cosmology and domain attributes it reads, one root dataset per field with a
// `units` attribute, in cgs), with the per-type masses, half-mass radii, dispersions and aperture masses
// of the own bound particles when types were measured (mass_gas, half_mass_radius_stars,
// velocity_dispersion_dark_matter, mass_stars_30kpc, ...). `bound` holds this rank's rows, after the
// lower ranks'. Collective.
void write_yt_halo_catalogue(File& file, const model::Bound& bound, const mpi::Comm& comm);

}  // namespace phew::io
