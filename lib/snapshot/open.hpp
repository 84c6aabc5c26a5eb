// Opening a snapshot: the format is detected from the content (Gadget-2/3/4, SWIFT and AREPO HDF5, single
// and multi-file; Gadget binary, SnapFormat 1 and 2, either byte order; RAMSES outputs, ramses.hpp;
// phew's own particle file), and the header values every format must have sane are checked once.
#pragma once

#include <phew/particles/snapshot.hpp>

#include <memory>
#include <string>
#include <vector>

namespace phew::snapshot {

using particles::SnapshotReader;

// Opens a snapshot given as one or more paths. A single path may be the first piece of a multi-file
// snapshot ("snap_010.0.hdf5", or any other piece) or its stem ("snap_010"): the other pieces are found from the header.
// Throws Error(io) for unreadable files, Error(input) for unknown formats and inconsistent headers.
std::unique_ptr<SnapshotReader> open_snapshot(const std::vector<std::string>& paths);

// Readers per format (used by open_snapshot; exposed for tests).
std::unique_ptr<SnapshotReader> open_hdf5_snapshot(const std::vector<std::string>& files);
std::unique_ptr<SnapshotReader> open_gadget_binary(const std::vector<std::string>& files);
std::unique_ptr<SnapshotReader> open_particle_file(const std::string& file);
bool is_gadget_binary(const std::string& path);
// Throws Error(input) naming the file and the record when `path` is a Gadget binary file whose header
// record has one marker damaged; returns for anything else.
void check_gadget_binary_markers(const std::string& path);

}  // namespace phew::snapshot
