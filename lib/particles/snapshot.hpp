// Reading a snapshot, whatever its format: the reader interface the formats implement (lib/snapshot
// opens one: Gadget HDF5 and binary, RAMSES, phew's particle file), and the reads every tool shares.
//
// Particles are numbered globally: for each selected type in ascending order, through the files in
// order (or, when SnapshotInfo::file_major, through the files, then the types). Any rank can read any
// range of that numbering, so ranks read disjoint shares in parallel.
#pragma once

#include <phew/mpi/comm.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/particles/particle_set.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace phew::particles {

using FileCounts = std::vector<std::vector<std::uint64_t>>;  // [file][type] particles

// One format's reader. Implementations live in lib/snapshot (gadget_hdf5.cpp, gadget_binary.cpp,
// particle_file.cpp, ramses.cpp); snapshot::open_snapshot picks one.
class SnapshotReader {
 public:
  virtual ~SnapshotReader() = default;
  virtual const SnapshotInfo& info() const = 0;
  // Appends `count` particles of `type` from file `file`, starting at `offset` within that file and type.
  // Masses come from the mass table when it is non-zero. No wrapping, no checks: read_particles does those.
  virtual void read(int file, int type, std::uint64_t offset, std::uint64_t count, const FieldSelection& fields,
                    ParticleSet& out) const = 0;
  // Counts the particles of each type in files [first, last) of info().files (one row per file), for
  // formats whose headers do not say (info().file_counts empty). Reads those files only. Throws
  // Error(input/io) naming the file for a missing, truncated or inconsistent one.
  virtual FileCounts count_files(std::size_t first, std::size_t last) const;
};

// [file][type] counts of every file: info().file_counts when the headers give them; otherwise each rank
// counts its even share of the files (count_files) and the counts are all-gathered, so that no rank
// reads every file. Checked against info().type_totals. Collective (errors agreed, naming the first bad file).
FileCounts file_counts(const SnapshotReader& reader, const mpi::Comm& comm);

// Particles [begin, begin+count) of the global numbering over `types`. Positions are wrapped into a
// periodic box; positions, velocities and masses are checked (finite, masses > 0) and a bad value gives
// Error(input) naming the file and particle. Not collective.
// When the headers do not give the per-file counts, this counts every file first (see file_counts).
ParticleSet read_particles(const SnapshotReader& reader, const std::vector<int>& types, std::uint64_t begin,
                           std::uint64_t count, const FieldSelection& fields);
// The same with the counts given (from file_counts).
ParticleSet read_particles(const SnapshotReader& reader, const FileCounts& counts, const std::vector<int>& types,
                           std::uint64_t begin, std::uint64_t count, const FieldSelection& fields);

// This rank's even share of the selected particles: rank r's is a contiguous range [begin, end) of the
// numbering over `types`, rank r's before rank r+1's; `most` is the largest share of any rank, and
// `counts` what read_particles needs to read it. Collective (file_counts).
struct Share {
  FileCounts counts;
  std::uint64_t begin = 0, end = 0, most = 0;
};
Share share_of(const SnapshotReader& reader, const std::vector<int>& types, const mpi::Comm& comm);

// Error(input), the same on every rank, naming the smallest particle ID held by more than one of `ids`
// (each rank's part of a selection). read_share and for_each_share_chunk check every selection they read
// with IDs. Collective.
void check_unique_ids(std::span<const std::uint64_t> ids, const std::string& snapshot, const mpi::Comm& comm);

// This rank's share, read whole. Collective: file_counts(), then agreeing on errors.
ParticleSet read_share(const SnapshotReader& reader, const std::vector<int>& types, const FieldSelection& fields,
                       const mpi::Comm& comm);

// This rank's share read `chunk` particles at a time, each given to `use` in order and let go after it,
// so the share is never whole. Every rank makes as many calls (the last ones may be empty), so `use`
// may be collective. Collective: file_counts(), then agreeing on each chunk's errors.
void for_each_share_chunk(const SnapshotReader& reader, const std::vector<int>& types, const FieldSelection& fields,
                          std::uint64_t chunk, const mpi::Comm& comm,
                          const std::function<void(const ParticleSet&)>& use);

// "1", "0,1", "all" -> type list, checked against the snapshot's number of types.
std::vector<int> parse_types(const std::string& text, int num_types);

// The particle types a tool uses: `text` as for parse_types, or "auto" for dark matter (type 1, also
// RAMSES' family 1; type 0 in phew particle files). Throws Error(input), naming the types present, when
// the selection holds no particle: every tool refuses an empty selection alike.
std::vector<int> selected_types(const SnapshotInfo& info, const std::string& text);
// The types of a stage after the grid: `text` as above, but "auto" takes the types the grid was made of
// (`grid_types`, from the provenance chain; empty when unknown), and other types than those are refused
// with Error(usage) unless `allow_other` (a grid of all types and a catalogue of dark matter only
// would measure different things).
std::vector<int> chain_types(const SnapshotInfo& info, const std::string& text, const std::vector<int>& grid_types,
                             bool allow_other);

// Throws Error(input) unless the snapshot has the grid's periodic box and length and mass units:
// "SNAPSHOT: box ... does not match the grid of OTHER (...): not the snapshot the grid was made from, or
// read in other units (give every tool the same --units)".
void check_snapshot_matches_grid(const SnapshotInfo& info, const grid::GridMeta& grid, const std::string& snapshot,
                                 const std::string& other);

}  // namespace phew::particles
