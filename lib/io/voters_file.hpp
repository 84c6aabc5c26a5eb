// voters.h5 (voters): each peak's most-bound particles and the search that found them
// (docs/formats.md). mergertree reads it back through the readers here.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/model/peaks.hpp>
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
// The whole /voters table, with `rank` filled in. Throws Error(input) naming the file when a voter's peak
// is not one of its /peaks or a binding energy is not finite.
std::vector<model::VoterRow> read_voter_rows(const File& file);
std::vector<model::VoterPeakRow> read_voter_peaks(const File& file);
// Throws Error(input) naming both files when a peak of voters.h5 (its /peaks/id) is not one of `peaks`,
// the rows of the peaks.h5 it was computed from (`peaks_path`): its votes would go to no peak.
void check_voter_peaks_resolve(const File& voters, const std::vector<model::PeakRow>& peaks,
                               const std::string& peaks_path);

}  // namespace phew::io
