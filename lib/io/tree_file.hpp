// tree.h5 (mergertree): every peak of every stage with its links, the stages, and the state the next
// on-the-fly run continues from (docs/formats.md). Rows are plain: lib/mergertree converts its tree to
// and from them.
#pragma once

#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/model/tree.hpp>

#include <array>
#include <string>
#include <vector>

namespace phew::io {

// The columns of each table (the rows are lib/model/tree.hpp's).
const Table<model::TreePeakRow>& tree_peak_table();
const Table<model::TreeSnapshotRow>& tree_snapshot_table();
// The tables of /state, what --add continues from.
const Table<model::StatePeakRow>& state_peak_table();
const Table<model::StateMemberRow>& state_member_table();
const Table<model::StateVoterRow>& state_voter_table();
const Table<model::GraveRow>& grave_table();
const Table<model::ArtefactRow>& artefact_table();

// Writes the tree held by rank 0 (the other ranks pass an empty one: their rows are ignored and rank
// 0's state attributes are used). Collective.
void write_tree(File& file, const model::TreeRows& tree, const mpi::Comm& comm);

// Reads a whole tree file. Throws Error(input) "PATH: not a readable merger-tree state (...)" for any
// problem, including a file that does not open. Not collective.
model::TreeRows read_tree(const std::string& path);

}  // namespace phew::io
