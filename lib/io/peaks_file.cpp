#include <phew/io/peaks_file.hpp>

#include <phew/core/error.hpp>
#include <phew/io/grid_file.hpp>

#include <algorithm>
#include <cmath>

namespace phew::io {

// The rows this file maps (lib/model).
using model::PeakMember;
using model::PeakRow;
using model::Peaks;

const Table<PeakRow>& peak_table() {
  // clang-format off: one column and its constraints per line
  static const Table<PeakRow> t = Table<PeakRow>()
                                      .column("id", &PeakRow::id)
                                      .above(0)
                                      .unique()
                                      .column("parent_clump", &PeakRow::parent_clump)
                                      .at_least(0)
                                      .column("position", &PeakRow::position, Unit::length)
                                      .finite()
                                      .column("densest_cell_position", &PeakRow::densest_cell_position, Unit::length)
                                      .finite()
                                      .column("velocity", &PeakRow::velocity, Unit::velocity)
                                      .finite()
                                      .column("n_particles", &PeakRow::n_particles)
                                      .at_least(0)
                                      .column("mass", &PeakRow::mass, Unit::mass)
                                      .finite()
                                      .at_least(0)
                                      .column("from_deblending", &PeakRow::from_deblending)
                                      .at_least(0)
                                      .at_most(1);
  // clang-format on
  return t;
}

const Table<PeakMember>& peak_member_table() {
  // clang-format off: one column and its constraints per line
  static const Table<PeakMember> t = Table<PeakMember>()
                                         .column("id", &PeakMember::id)
                                         .ascending()
                                         .column("peak", &PeakMember::peak)
                                         .refers_to("/peaks/id");
  // clang-format on
  return t;
}

void write_peaks(File& f, const Peaks& p, const mpi::Comm& comm) {
  f.create_group("/grid");
  write_grid_attributes(f, p.grid, "/grid");
  UnitNames units;
  units.length = p.grid.length_units;
  units.mass = p.grid.mass_units;
  units.velocity = p.meta.velocity_units;
  peak_table().write(f, "/peaks", p.peaks, units, comm);
  f.write_attribute<std::int64_t>("/peaks", "first_new_id", p.meta.first_new_id);
  peak_member_table().write(f, "/particles", p.particles, units, comm);
  f.write_attribute("/", "time", p.meta.time);
  f.write_attribute("/", "redshift", p.meta.redshift);
  f.write_attribute("/", "gravitational_constant", p.meta.gravitational_constant);
}

PeaksHeader read_peaks_header(const File& f) {
  PeaksHeader h;
  h.grid = read_grid_attributes(f, "/grid", false);
  h.meta.time = f.read_attribute_scalar<double>("/", "time");
  h.meta.redshift = f.read_attribute_scalar<double>("/", "redshift");
  h.meta.gravitational_constant = f.read_attribute_scalar<double>("/", "gravitational_constant");
  h.meta.first_new_id = f.read_attribute_scalar<std::int64_t>("/peaks", "first_new_id");
  h.meta.velocity_units = f.read_attribute_string("/peaks/velocity", "units");
  h.n_peaks = peak_table().size(f, "/peaks");
  h.n_particles = peak_member_table().size(f, "/particles");
  return h;
}

void check_peculiar_velocities(const PeaksHeader& h, const std::string& path) {
  if (!h.meta.velocity_units.ends_with("(peculiar)"))
    throw core::Error::input(
        "{}: /peaks/velocity is in '{}', not peculiar velocities (a peaks.h5 from before 2026-11-26): "
        "re-run deblend",
        path, h.meta.velocity_units);
}

std::vector<PeakRow> read_peak_rows(const File& f) {
  std::vector<PeakRow> rows = peak_table().read(f, "/peaks");
  // IDs key other tables downstream (any numbering: a tree must not depend on it, so deblend's scheme of
  // clump IDs and first_new_id is not required), and a NaN position would silently get no voters.
  std::vector<std::int64_t> ids;
  ids.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const PeakRow& p = rows[i];
    if (p.id < 1) throw core::Error::input("{}: /peaks/id row {} is {} (IDs are positive)", f.path(), i, p.id);
    ids.push_back(p.id);
    bool finite = std::isfinite(p.mass) && p.mass >= 0;
    for (std::size_t d = 0; d < 3; ++d)
      finite &=
          std::isfinite(p.position[d]) && std::isfinite(p.velocity[d]) && std::isfinite(p.densest_cell_position[d]);
    if (!finite) throw core::Error::input("{}: peak {} has a non-finite position, velocity or mass", f.path(), p.id);
  }
  std::sort(ids.begin(), ids.end());
  if (const auto twice = std::adjacent_find(ids.begin(), ids.end()); twice != ids.end())
    throw core::Error::input("{}: peak ID {} appears twice in /peaks/id", f.path(), *twice);
  return rows;
}

std::vector<PeakMember> read_peak_members(const File& f, std::uint64_t begin, std::uint64_t count) {
  return peak_member_table().read(f, "/particles", begin, count);
}

std::vector<PeakMember> read_peak_members(const File& f) {
  // The table's constraints check that each particle's peak is one of /peaks and that the rows are in
  // ascending particle ID, which the tree's member lookups rely on.
  return peak_member_table().read(f, "/particles");
}

}  // namespace phew::io
