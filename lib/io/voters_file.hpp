// voters.h5 (voters): each peak's most-bound particles and the search that found them
// (docs/formats.md). mergertree reads it back through the readers here.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/model/voters.hpp>

#include <array>
#include <string>
#include <vector>

namespace phew::io {

// The columns of each table (the rows are lib/model/voters.hpp's).
const Table<model::VoterRow>& voter_table();
const Table<model::VoterPeakRow>& voter_peak_table();

// Writes /grid (attributes), /voters, /peaks and the root attributes. Collective.
void write_voters(File& file, const model::Voters& voters, const mpi::Comm& comm);

struct VotersHeader {
  grid::GridMeta grid;
  model::VotersMeta meta;
  std::uint64_t n_voters = 0, n_peaks = 0;
};
// Throws Error(input) naming the file and what is missing. Not collective.
VotersHeader read_voters_header(const File& file);
std::vector<model::VoterRow> read_voter_rows(const File& file);  // the whole /voters table, with `rank` filled in
std::vector<model::VoterPeakRow> read_voter_peaks(const File& file);

}  // namespace phew::io
