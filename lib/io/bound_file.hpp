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
// The most-bound particles as a tree's voters (mergertree PEAKS:BOUND): /most_bound with each particle's
// energy from /particles, rows by object then rank. Throws Error(input) naming the file when an object
// is not one of `peaks` (read from `peaks_path`), the rows are out of order or a particle is missing.
// Not collective.
std::vector<model::VoterRow> read_bound_voters(const File& file, const std::vector<model::PeakRow>& peaks,
                                               const std::string& peaks_path);

// The objects as a yt halo catalogue (yt's halo_catalog frontend: root attribute data_type
// "halo_catalog", the cosmology and domain attributes it reads, one root dataset per field with a
// `units` attribute, in cgs). `objects` are this rank's rows, after the lower ranks'. Collective.
void write_yt_halo_catalogue(File& file, const std::vector<model::BoundObject>& objects, const grid::GridMeta& grid,
                             const model::BoundMeta& meta, const mpi::Comm& comm);

}  // namespace phew::io
