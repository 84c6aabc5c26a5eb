// peaks.h5 (deblend): the phase-space peaks and every patch particle's peak (docs/formats.md). voters and
// mergertree read it back through the readers here.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/io/h5.hpp>
#include <phew/io/table.hpp>
#include <phew/model/peaks.hpp>

#include <array>
#include <string>
#include <vector>

namespace phew::io {

// The columns of each table (the rows are lib/model/peaks.hpp's).
const Table<model::PeakRow>& peak_table();
const Table<model::PeakMember>& peak_member_table();

// Writes /grid (attributes), /peaks, /particles and the root attributes. Collective.
void write_peaks(File& file, const model::Peaks& peaks, const mpi::Comm& comm);

struct PeaksHeader {
  grid::GridMeta grid;
  model::PeaksMeta meta;
  std::uint64_t n_peaks = 0, n_particles = 0;
};
// Throws Error(input) naming the file and what is missing. Not collective.
PeaksHeader read_peaks_header(const File& file);
// Throws Error(input) for a peaks.h5 whose /peaks/velocity is not peculiar: one written before 2026-11-26
// held the velocities as the snapshot stored them (Gadget's u = v_pec / sqrt(a)), to be re-made by deblend.
void check_peculiar_velocities(const PeaksHeader& header, const std::string& path);
std::vector<model::PeakRow> read_peak_rows(const File& file);        // the whole /peaks table
std::vector<model::PeakMember> read_peak_members(const File& file);  // the whole /particles table
// Rows [begin, begin + count) of /particles, unchecked (unbind reads one block per rank).
std::vector<model::PeakMember> read_peak_members(const File& file, std::uint64_t begin, std::uint64_t count);

}  // namespace phew::io
