#include <phew/io/voters_file.hpp>

#include <phew/io/grid_file.hpp>

#include <phew/core/error.hpp>

#include <algorithm>
#include <map>
#include <cmath>

namespace phew::io {

// The rows this file maps (lib/model).
using model::VoterPeakRow;
using model::VoterRow;
using model::Voters;

const Table<VoterRow>& voter_table() {
  // clang-format off: one column and its constraints per line
  static const Table<VoterRow> t = Table<VoterRow>()
                                       .column("peak", &VoterRow::peak)
                                       .refers_to("/peaks/id")
                                       .column("particle_id", &VoterRow::particle_id)
                                       .column("binding_energy", &VoterRow::binding_energy, Unit::energy)
                                       .finite();
  // clang-format on
  return t;
}

const Table<VoterPeakRow>& voter_peak_table() {
  // clang-format off: one column and its constraints per line
  static const Table<VoterPeakRow> t = Table<VoterPeakRow>()
                                           .column("id", &VoterPeakRow::id)
                                           .above(0)
                                           .unique()
                                           .column("search_radius", &VoterPeakRow::search_radius, Unit::length)
                                           .finite()
                                           .at_least(0)
                                           .column("a0", &VoterPeakRow::a0, Unit::acceleration)
                                           .finite()
                                           .column("n_voters", &VoterPeakRow::n_voters)
                                           .at_least(0)
                                           .column("n_candidates", &VoterPeakRow::n_candidates)
                                           .at_least(0);
  // clang-format on
  return t;
}

void write_voters(File& f, const Voters& v, const mpi::Comm& comm) {
  f.create_group("/grid");
  write_grid_attributes(f, v.grid, "/grid");
  UnitNames units;
  units.length = v.grid.length_units;
  units.energy = v.meta.energy_units;
  units.acceleration = v.meta.acceleration_units;
  voter_table().write(f, "/voters", v.voters, units, comm);
  voter_peak_table().write(f, "/peaks", v.peaks, units, comm);
  f.write_attribute("/", "potential_source", v.meta.potential_source);
  f.write_attribute<std::int64_t>("/", "n_voters_requested", v.meta.n_voters_requested);
  f.write_attribute("/", "time", v.meta.time);
  f.write_attribute<std::int8_t>("/", "boosted", v.meta.boosted ? 1 : 0);
}

VotersHeader read_voters_header(const File& f) {
  VotersHeader h;
  h.grid = read_grid_attributes(f, "/grid", false);
  h.meta.potential_source = f.read_attribute_string("/", "potential_source");
  h.meta.n_voters_requested = f.read_attribute_scalar<std::int64_t>("/", "n_voters_requested");
  h.meta.time = f.read_attribute_scalar<double>("/", "time");
  h.meta.boosted = f.read_attribute_scalar<std::int64_t>("/", "boosted") != 0;
  h.meta.energy_units = f.read_attribute_string("/voters/binding_energy", "units");
  h.meta.acceleration_units = f.read_attribute_string("/peaks/a0", "units");
  h.n_voters = voter_table().size(f, "/voters");
  h.n_peaks = voter_peak_table().size(f, "/peaks");
  return h;
}

std::vector<VoterRow> read_voter_rows(const File& f) {
  // The columns' own constraints (voter_table: every voter's peak is one of /peaks/id, energies finite),
  // and between the tables: each peak's voters are one run of rows, as many as its /peaks/n_voters says.
  std::vector<VoterRow> rows = voter_table().read(f, "/voters");
  std::map<std::int64_t, std::int64_t> counted;  // per peak, the length of its run
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t end = i + 1;
    while (end < rows.size() && rows[end].peak == rows[i].peak) ++end;
    if (!counted.emplace(rows[i].peak, static_cast<std::int64_t>(end - i)).second)
      throw core::Error::input(
          "{}: /voters/peak row {} is {}, whose voters came before (each peak's voters are one run of rows)", f.path(),
          i, rows[i].peak);
    for (std::size_t k = i; k < end; ++k) rows[k].rank = static_cast<std::int64_t>(k - i);
    i = end;
  }
  for (const VoterPeakRow& p : voter_peak_table().read(f, "/peaks"))
    if (const std::int64_t n = counted.count(p.id) ? counted[p.id] : 0; n != p.n_voters)
      throw core::Error::input("{}: /peaks/n_voters of peak {} is {}, but /voters holds {} of its voters", f.path(),
                               p.id, p.n_voters, n);
  return rows;
}

std::vector<VoterPeakRow> read_voter_peaks(const File& f) { return voter_peak_table().read(f, "/peaks"); }

void check_voter_peaks_resolve(const File& f, const std::vector<model::PeakRow>& peaks, const std::string& peaks_path) {
  std::vector<std::int64_t> ids;
  for (const model::PeakRow& p : peaks) ids.push_back(p.id);
  std::sort(ids.begin(), ids.end());
  const auto voter_peaks = f.read<std::int64_t>("/peaks/id");
  for (std::size_t i = 0; i < voter_peaks.size(); ++i)
    if (!std::binary_search(ids.begin(), ids.end(), voter_peaks[i]))
      throw core::Error::input("{}: /peaks/id row {} is {}, not a peak of {} (voters of another deblending?)", f.path(),
                               i, voter_peaks[i], peaks_path);
}

}  // namespace phew::io
