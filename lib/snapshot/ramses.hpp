// RAMSES particle outputs (2017 and later: with part_file_descriptor.txt), behind SnapshotReader.
//
// An output folder `output_NNNNN/` holds info_NNNNN.txt (ncpu, boxlen, aexp, cosmology, unit_l/d/t),
// header_NNNNN.txt (particles per family), part_file_descriptor.txt (the fields, in record order, with
// their types) and one Fortran unformatted file per RAMSES rank, part_NNNNN.out00001 ... outNCPU. The
// families are mixed within each file, so the per-file counts come from each file's family record
// (SnapshotReader::count_files) and particles are numbered file-major.
//
// Types are RAMSES family codes: 0 gas tracers, 1 dark matter, 2 stars, 3 clouds (sink particles' cloud
// particles), 4 debris, 5 other; the tracer families -1..-5 (of DM, stars, clouds, debris, other) are
// types 11..15 (10 + |family|). Units: comoving Mpc/h, Msun/h and peculiar velocities in km/s
// for cosmological runs; kpc, Msun and km/s otherwise (docs/formats.md).
#pragma once

#include <phew/particles/snapshot.hpp>

#include <memory>
#include <optional>
#include <string>

namespace phew::snapshot {
using particles::SnapshotReader;

inline constexpr int kRamsesNumTypes = 16;

// The phew particle type of a RAMSES family code, or nullopt for a code RAMSES does not use.
std::optional<int> ramses_type_of_family(int family);

// True for a folder holding a RAMSES info file (recognised by its content) or for such a file itself.
bool is_ramses_output(const std::string& path);

// Opens the output at `path` (its folder or its info file). Reads the text files and lists the folder;
// no particle file is opened. Throws Error(input) naming the file for a missing or inconsistent part.
std::unique_ptr<SnapshotReader> open_ramses(const std::string& path);

}  // namespace phew::snapshot
