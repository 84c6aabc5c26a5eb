// Plain-text catalogues for people and spreadsheets: RAMSES' clump-finder columns and CSV.
#pragma once

#include "io/clumps_file.hpp"
#include "mpi/comm.hpp"

#include <string>

namespace phew {

// Writes OUTPUT.clumps.txt, OUTPUT.halos.txt (whitespace columns with a header line, as RAMSES'
// clump finder writes them) and OUTPUT.clumps.csv, OUTPUT.halos.csv. Rows are gathered on rank 0.
// Collective.
void export_catalogue_text(const std::string& output, const io::ClumpRows& clumps, const io::HaloRows& halos,
                           const mpi::Comm& comm);

}  // namespace phew
