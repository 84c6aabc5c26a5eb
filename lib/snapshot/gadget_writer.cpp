#include <phew/snapshot/gadget_writer.hpp>

#include <phew/core/error.hpp>
#include <phew/mpi/route.hpp>

#include <array>
#include <vector>

namespace phew::snapshot {
namespace {

// This rank's rows of an [n] or [n][cols] dataset stored as float64 or float32 (converted by HDF5).
void write_real(io::File& f, bool f64, const std::string& name, const mpi::RankSum& rows, std::uint64_t cols,
                std::span<const double> data, const std::string& units) {
  std::vector<std::uint64_t> shape{rows.total};
  if (cols > 1) shape.push_back(cols);
  if (f64)
    f.write_rows<double, double>(name, shape, rows.before, data);
  else
    f.write_rows<float, double>(name, shape, rows.before, data);
  f.write_attribute(name, "units", units);
}

// /PartType<t> of this rank's `p`, after the lower ranks' rows.
void write_type_group(io::File& f, const GadgetHeader& h, int t, const GadgetParticles& p, const mpi::RankSum& rows) {
  const std::string g = "/PartType" + std::to_string(t);
  f.create_group(g);
  if (h.double_precision) {
    f.write_rows<double, double>(g + "/Coordinates", {rows.total, 3}, rows.before, p.position);
  } else {
    // Rounded to float32 here rather than by HDF5, so that a coordinate just below BoxSize does not
    // round up to BoxSize (periodically, that is 0).
    std::vector<float> x(p.position.size());
    const auto box = static_cast<float>(h.box_size);
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(p.position[i]);
      if (h.box_size > 0 && x[i] >= box) x[i] = 0;
    }
    f.write_rows<float, float>(g + "/Coordinates", {rows.total, 3}, rows.before, x);
  }
  f.write_attribute(g + "/Coordinates", "units", h.length_units);
  write_real(f, h.double_precision, g + "/Velocities", rows, 3, p.velocity, h.velocity_units);
  f.write_rows<std::uint64_t, std::uint64_t>(g + "/ParticleIDs", {rows.total}, rows.before, p.id);
  if (h.particle_mass == 0) write_real(f, h.double_precision, g + "/Masses", rows, 1, p.mass, h.mass_units);
  if (h.potential) write_real(f, h.double_precision, g + "/Potential", rows, 1, p.potential, h.potential_units);
  if (h.acceleration)
    write_real(f, h.double_precision, g + "/Acceleration", rows, 3, p.acceleration, h.acceleration_units);
}

// The rows of `p` whose type is t, as their own columns.
struct TypeRows {
  std::vector<double> position, velocity, mass, potential, acceleration;
  std::vector<std::uint64_t> id;
  GadgetParticles view() const { return {position, velocity, id, mass, potential, acceleration, {}}; }
};
TypeRows rows_of_type(const GadgetParticles& p, int t) {
  TypeRows out;
  const auto copy = [](std::span<const double> from, std::size_t i, std::size_t width, std::vector<double>& to) {
    if (!from.empty())
      to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(width * i),
                from.begin() + static_cast<std::ptrdiff_t>(width * (i + 1)));
  };
  for (std::size_t i = 0; i < p.id.size(); ++i) {
    if (p.type[i] != t) continue;
    out.id.push_back(p.id[i]);
    copy(p.position, i, 3, out.position);
    copy(p.velocity, i, 3, out.velocity);
    copy(p.mass, i, 1, out.mass);
    copy(p.potential, i, 1, out.potential);
    copy(p.acceleration, i, 3, out.acceleration);
  }
  return out;
}

}  // namespace

void write_gadget_hdf5(io::File& f, const GadgetHeader& h, const GadgetParticles& p, const mpi::Comm& comm) {
  if (h.type < 0 || h.type > 5) throw core::Error::internal("Gadget particle type {} is not 0..5", h.type);
  const std::uint64_t n = p.id.size();
  if (p.position.size() != 3 * n || p.velocity.size() != 3 * n || (h.particle_mass == 0 && p.mass.size() != n) ||
      (h.potential && p.potential.size() != n) || (h.acceleration && p.acceleration.size() != 3 * n) ||
      (!p.type.empty() && p.type.size() != n))
    throw core::Error::internal("{}: Gadget snapshot columns of different lengths ({} IDs)", f.path(), n);
  for (const std::uint8_t t : p.type)
    if (t > 5) throw core::Error::internal("Gadget particle type {} is not 0..5", t);
  // Each type's rows over the ranks (every rank takes part in every type's collective writes), and the
  // types written: those with particles, and the header's one type even when empty, as Gadget writes it.
  std::array<mpi::RankSum, 6> rows{};
  std::array<bool, 6> written{};
  for (int t = 0; t < 6; ++t) {
    const auto k = static_cast<std::size_t>(t);
    const std::uint64_t here = p.type.empty() ? (t == h.type ? n : 0)
                                              : static_cast<std::uint64_t>(std::count(p.type.begin(), p.type.end(), t));
    rows[k] = mpi::exclusive_scan(comm, here);
    written[k] = rows[k].total > 0 || (p.type.empty() && t == h.type);
  }

  f.create_group("/Header");
  std::array<std::uint32_t, 6> count{}, high{};
  std::array<double, 6> mass_table{};
  for (std::size_t t = 0; t < 6; ++t) {
    count[t] = static_cast<std::uint32_t>(rows[t].total & 0xffffffffu);
    high[t] = static_cast<std::uint32_t>(rows[t].total >> 32);
    if (written[t]) mass_table[t] = h.particle_mass;
  }
  f.write_attribute<std::uint32_t>("/Header", "NumPart_ThisFile", count);
  f.write_attribute<std::uint32_t>("/Header", "NumPart_Total", count);
  f.write_attribute<std::uint32_t>("/Header", "NumPart_Total_HighWord", high);
  f.write_attribute<double>("/Header", "MassTable", mass_table);
  f.write_attribute("/Header", "BoxSize", h.box_size);
  f.write_attribute("/Header", "Time", h.time);
  f.write_attribute("/Header", "Redshift", h.redshift);
  f.write_attribute("/Header", "NumFilesPerSnapshot", std::int32_t{1});
  f.write_attribute("/Header", "Omega0", h.omega0);
  f.write_attribute("/Header", "OmegaLambda", h.omega_lambda);
  f.write_attribute("/Header", "HubbleParam", h.hubble_param);
  f.write_attribute("/Header", "UnitLength_in_cm", h.units.length_cm);
  f.write_attribute("/Header", "UnitMass_in_g", h.units.mass_g);
  f.write_attribute("/Header", "UnitVelocity_in_cm_per_s", h.units.velocity_cm_per_s);
  f.write_attribute("/Header", "Flag_DoublePrecision", std::int32_t{h.double_precision ? 1 : 0});

  for (int t = 0; t < 6; ++t) {
    if (!written[static_cast<std::size_t>(t)]) continue;
    if (p.type.empty())
      write_type_group(f, h, t, p, rows[static_cast<std::size_t>(t)]);
    else
      write_type_group(f, h, t, rows_of_type(p, t).view(), rows[static_cast<std::size_t>(t)]);
  }
}

}  // namespace phew::snapshot
