#include <phew/io/bound_file.hpp>

#include <phew/core/error.hpp>
#include <phew/io/grid_file.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>

namespace phew::io {

using model::BoundMeta;
using model::BoundObject;
using model::BoundParticle;
using model::MostBoundRow;

const Table<BoundObject>& bound_object_table() {
  static const Table<BoundObject> t =
      // clang-format off: one column and its constraints per line
      Table<BoundObject>()
          .column("id", &BoundObject::id, Unit::none, "the clump's ID (clumps.h5)")
          .above(0)
          .unique()
          .column("parent", &BoundObject::parent, Unit::none, "the object its unbound particles pass to; 0 for a halo")
          .refers_to("/objects/id", true)
          .column("halo", &BoundObject::halo, Unit::none, "the top of its hierarchy")
          .refers_to("/objects/id")
          .column("depth", &BoundObject::depth, Unit::none, "ancestors: 0 for a halo")
          .at_least(0)
          .column("n_particles", &BoundObject::n_particles, Unit::none,
                  "particles unbound here: own and sub-objects' bound")
          .at_least(0)
          .column("n_received", &BoundObject::n_received, Unit::none, "own particles passed up from sub-objects")
          .at_least(0)
          .column("n_bound", &BoundObject::n_bound, Unit::none, "own bound particles (exclusive)")
          .at_least(0)
          .column("n_bound_inclusive", &BoundObject::n_bound_inclusive, Unit::none,
                  "with the sub-objects' bound particles")
          .at_least(0)
          .column("mass", &BoundObject::mass, Unit::mass, "bound mass, exclusive of bound sub-objects")
          .finite()
          .at_least(0)
          .column("mass_inclusive", &BoundObject::mass_inclusive, Unit::mass, "bound mass with the sub-objects'")
          .finite()
          .at_least(0)
          .column("peak_position", &BoundObject::peak_position, Unit::length, "density peak (clumps.h5), comoving")
          .finite()
          .column("centre", &BoundObject::centre, Unit::length, "the centre the properties use (--centre), comoving")
          .measured()
          .column("centre_of_mass", &BoundObject::centre_of_mass, Unit::length, "of the bound particles, comoving")
          .measured()
          .column("most_bound_position", &BoundObject::most_bound_position, Unit::length,
                  "the bound particle of lowest energy (ties by ID), comoving")
          .measured()
          .column("potential_minimum_position", &BoundObject::potential_minimum_position, Unit::length,
                  "the bound particle of lowest potential, comoving")
          .measured()
          .column("shrinking_sphere_centre", &BoundObject::shrinking_sphere_centre, Unit::length,
                  "shrinking spheres over the bound particles (Power et al. 2003), comoving")
          .measured()
          .column("bulk_velocity", &BoundObject::bulk_velocity, Unit::velocity, "mass-weighted, of the bound particles")
          .measured()
          .column(
              "angular_momentum", &BoundObject::angular_momentum, Unit::angular_momentum,
              "J of the bound particles about the centre, in the object's frame (physical separations and velocities)")
          .measured()
          .column("vrms", &BoundObject::vrms, Unit::velocity, "3-D, in the object's frame, physical")
          .measured()
          .at_least(0)
          .column("vmax", &BoundObject::vmax, Unit::velocity, "peak circular velocity sqrt(G M(<r) / r), physical")
          .measured()
          .at_least(0)
          .column("rmax", &BoundObject::rmax, Unit::length, "radius of vmax, comoving")
          .measured()
          .at_least(0)
          .column("virial_ratio", &BoundObject::virial_ratio, Unit::none, "T / |U|")
          .measured()
          .at_least(0)
          .column("spin_peebles", &BoundObject::spin_peebles)
          .measured()
          .at_least(0)
          .column("spin_bullock", &BoundObject::spin_bullock)
          .measured()
          .at_least(0)
          .column("mvir", &BoundObject::mvir, Unit::mass, "bound particles inside rvir (Bryan & Norman)")
          .measured()
          .at_least(0)
          .column("rvir", &BoundObject::rvir, Unit::length, "comoving")
          .measured()
          .at_least(0)
          .column("m200c", &BoundObject::m200c, Unit::mass, "bound particles only")
          .measured()
          .at_least(0)
          .column("r200c", &BoundObject::r200c, Unit::length, "comoving")
          .measured()
          .at_least(0)
          .column("m200m", &BoundObject::m200m, Unit::mass, "bound particles only")
          .measured()
          .at_least(0)
          .column("r200m", &BoundObject::r200m, Unit::length, "comoving")
          .measured()
          .at_least(0)
          .column("m500c", &BoundObject::m500c, Unit::mass, "bound particles only")
          .measured()
          .at_least(0)
          .column("r500c", &BoundObject::r500c, Unit::length, "comoving")
          .measured()
          .at_least(0)
          .column("rs_klypin", &BoundObject::rs_klypin, Unit::length, "NFW scale radius from vmax / vvir, comoving")
          .measured()
          .at_least(0)
          .column("concentration_klypin", &BoundObject::concentration_klypin, Unit::none, "rvir / rs_klypin")
          .measured()
          .at_least(0)
          .column("rs_fit", &BoundObject::rs_fit, Unit::length, "NFW scale radius of the profile fit, comoving")
          .measured()
          .at_least(0)
          .column("concentration_fit", &BoundObject::concentration_fit, Unit::none, "rvir / rs_fit")
          .measured()
          .at_least(0)
          .column("b_to_a", &BoundObject::b_to_a, Unit::none, "reduced inertia tensor inside rvir")
          .measured()
          .at_least(0)
          .at_most(1)
          .column("c_to_a", &BoundObject::c_to_a, Unit::none, "reduced inertia tensor inside rvir")
          .measured()
          .at_least(0)
          .at_most(1)
          .column("xoff", &BoundObject::xoff, Unit::length, "centre to centre of mass inside rvir, comoving")
          .measured()
          .at_least(0)
          .column("gas_temperature", &BoundObject::gas_temperature, Unit::none,
                  "K: mass-weighted temperature of the own bound gas (0: none)", true)
          .finite()
          .at_least(0)
          .column("gas_temperature_inclusive", &BoundObject::gas_temperature_inclusive, Unit::none,
                  "K: with the sub-objects' bound gas", true)
          .finite()
          .at_least(0)
          .column("star_forming_gas_mass", &BoundObject::star_forming_gas_mass, Unit::mass,
                  "own bound gas with a star formation rate > 0", true)
          .finite()
          .at_least(0)
          .column("star_forming_gas_mass_inclusive", &BoundObject::star_forming_gas_mass_inclusive, Unit::mass,
                  "with the sub-objects' bound gas", true)
          .finite()
          .at_least(0)
          .column("iterations", &BoundObject::iterations, Unit::none, "removal passes")
          .at_least(0)
          .column("converged", &BoundObject::converged, Unit::none, "1: the last pass removed nothing")
          .at_least(0)
          .at_most(1)
          .column("dissolved", &BoundObject::dissolved, Unit::none, "1: too few bound particles, all passed on")
          .at_least(0)
          .at_most(1);
  // clang-format on
  return t;
}

const Table<ObjectTypes>& bound_type_table() {
  static const Table<ObjectTypes> t =
      // clang-format off: one column and its constraints per line
      Table<ObjectTypes>()
          .column("n_bound_type", &ObjectTypes::n_bound, Unit::none,
                  "[n][types]: own bound particles of each type (the attribute types)", true)
          .at_least(0)
          .column("n_bound_inclusive_type", &ObjectTypes::n_bound_inclusive, Unit::none,
                  "[n][types]: with the sub-objects' bound particles", true)
          .at_least(0)
          .column("mass_type", &ObjectTypes::mass, Unit::mass, "[n][types]: own bound mass of each type", true)
          .finite()
          .at_least(0)
          .column("mass_inclusive_type", &ObjectTypes::mass_inclusive, Unit::mass,
                  "[n][types]: with the sub-objects' bound mass", true)
          .finite()
          .at_least(0)
          .column("half_mass_radius_type", &ObjectTypes::half_mass_radius, Unit::length,
                  "[n][types]: radius about the centre holding half of the type's own bound mass, comoving", true)
          .finite()
          .at_least(0)
          .column("half_mass_radius_inclusive_type", &ObjectTypes::half_mass_radius_inclusive, Unit::length,
                  "[n][types]: the same with the sub-objects' bound particles, comoving", true)
          .finite()
          .at_least(0)
          .column("velocity_dispersion_type", &ObjectTypes::velocity_dispersion, Unit::velocity,
                  "[n][types]: 1-D, of the type's own bound particles about their mean, physical", true)
          .finite()
          .at_least(0)
          .column("velocity_dispersion_inclusive_type", &ObjectTypes::velocity_dispersion_inclusive, Unit::velocity,
                  "[n][types]: the same with the sub-objects' bound particles", true)
          .finite()
          .at_least(0)
          .column("aperture_mass_type", &ObjectTypes::aperture_mass, Unit::mass,
                  "[n][apertures][types]: own bound mass within each physical aperture of the centre", true)
          .finite()
          .at_least(0)
          .column("aperture_mass_inclusive_type", &ObjectTypes::aperture_mass_inclusive, Unit::mass,
                  "[n][apertures][types]: the same with the sub-objects' bound particles", true)
          .finite()
          .at_least(0);
  // clang-format on
  return t;
}

std::vector<ObjectTypes> object_types(const model::Bound& b) {
  const std::size_t n_types = b.meta.types.size(), n_apertures = b.meta.apertures_kpc.size();
  if (b.by_type.size() != b.objects.size() * n_types)
    throw core::Error::internal("bound.h5: {} per-type rows for {} objects of {} types", b.by_type.size(),
                                b.objects.size(), n_types);
  std::vector<ObjectTypes> out(b.objects.size());
  for (std::size_t o = 0; o < out.size(); ++o) {
    ObjectTypes& x = out[o];
    for (std::vector<double>* v : {&x.mass, &x.mass_inclusive, &x.half_mass_radius, &x.half_mass_radius_inclusive,
                                   &x.velocity_dispersion, &x.velocity_dispersion_inclusive})
      v->resize(n_types);
    x.n_bound.resize(n_types);
    x.n_bound_inclusive.resize(n_types);
    x.aperture_mass.resize(n_apertures * n_types);
    x.aperture_mass_inclusive.resize(n_apertures * n_types);
    for (std::size_t t = 0; t < n_types; ++t) {
      const model::BoundTypeRow& r = b.by_type[o * n_types + t];
      if (r.object != b.objects[o].id || r.column != static_cast<std::int64_t>(t))
        throw core::Error::internal("bound.h5: per-type row ({}, {}) where ({}, {}) belongs", r.object, r.column,
                                    b.objects[o].id, t);
      x.n_bound[t] = r.n_bound;
      x.n_bound_inclusive[t] = r.n_bound_inclusive;
      x.mass[t] = r.mass;
      x.mass_inclusive[t] = r.mass_inclusive;
      x.half_mass_radius[t] = r.half_mass_radius;
      x.half_mass_radius_inclusive[t] = r.half_mass_radius_inclusive;
      x.velocity_dispersion[t] = r.velocity_dispersion;
      x.velocity_dispersion_inclusive[t] = r.velocity_dispersion_inclusive;
      for (std::size_t k = 0; k < n_apertures; ++k) {
        x.aperture_mass[k * n_types + t] = r.aperture_mass[k];
        x.aperture_mass_inclusive[k * n_types + t] = r.aperture_mass_inclusive[k];
      }
    }
  }
  return out;
}

const Table<BoundParticle>& bound_particle_table() {
  static const Table<BoundParticle> t =
      // clang-format off: one column and its constraints per line
      Table<BoundParticle>()
          .column("id", &BoundParticle::id)
          .ascending()
          .column("member_of", &BoundParticle::member_of, Unit::none,
                  "the object it was given to: the clump of its test cell, or its peak")
          .refers_to("/objects/id")
          .column("object", &BoundParticle::object, Unit::none, "the object it is bound to (exclusively); 0: unbound")
          .refers_to("/objects/id", true)
          .column("energy", &BoundParticle::energy, Unit::energy, "specific energy in the last object that tested it")
          .measured();
  // clang-format on
  return t;
}

const Table<MostBoundRow>& most_bound_table() {
  // clang-format off: one column and its constraints per line
  static const Table<MostBoundRow> t = Table<MostBoundRow>()
                                           .column("object", &MostBoundRow::object)
                                           .refers_to("/objects/id")
                                           .non_decreasing()
                                           .column("rank", &MostBoundRow::rank, Unit::none, "0: the most bound")
                                           .at_least(0)
                                           .column("particle_id", &MostBoundRow::id)
                                           .refers_to("/particles/id");
  // clang-format on
  return t;
}

namespace {

// /objects, with the per-type columns when types were measured: [n][types] and [n][apertures][types],
// the types named in the attributes types (names) and type_codes, the apertures in apertures_kpc.
void write_bound_objects(File& f, const model::Bound& b, const UnitNames& units, const mpi::Comm& comm) {
  const BoundMeta& m = b.meta;
  std::set<std::string> gas;
  if (m.gas_temperature) gas.insert({"gas_temperature", "gas_temperature_inclusive"});
  if (m.star_forming_gas) gas.insert({"star_forming_gas_mass", "star_forming_gas_mass_inclusive"});
  bound_object_table().write(f, "/objects", b.objects, units, comm, gas);
  for (const char* name : {"gas_temperature", "gas_temperature_inclusive"})
    if (m.gas_temperature) f.write_attribute(std::string("/objects/") + name, "units", "K");
  if (m.types.empty()) return;
  const auto n_types = static_cast<std::uint64_t>(m.types.size());
  const auto n_apertures = static_cast<std::uint64_t>(m.apertures_kpc.size());
  std::set<std::string> optional;
  RowShapes shapes;
  for (const char* name :
       {"n_bound_type", "n_bound_inclusive_type", "mass_type", "mass_inclusive_type", "half_mass_radius_type",
        "half_mass_radius_inclusive_type", "velocity_dispersion_type", "velocity_dispersion_inclusive_type"}) {
    optional.insert(name);
    shapes[name] = {n_types};
  }
  if (n_apertures > 0)
    for (const char* name : {"aperture_mass_type", "aperture_mass_inclusive_type"}) {
      optional.insert(name);
      shapes[name] = {n_apertures, n_types};
    }
  bound_type_table().write(f, "/objects", object_types(b), units, comm, optional, shapes);
  f.write_attribute("/objects", "types", m.type_names);
  std::vector<std::int64_t> codes(m.types.begin(), m.types.end());
  f.write_attribute<std::int64_t>("/objects", "type_codes", std::span<const std::int64_t>(codes));
  if (n_apertures > 0) {
    f.write_attribute<double>("/objects", "apertures_kpc", std::span<const double>(m.apertures_kpc));
    f.write_attribute("/objects", "apertures_units", "kpc (physical)");
  }
}

}  // namespace

void write_bound(File& f, const model::Bound& b, const mpi::Comm& comm) {
  f.create_group("/grid");
  write_grid_attributes(f, b.grid, "/grid");
  UnitNames units;
  units.length = b.grid.length_units;
  units.mass = b.grid.mass_units;
  units.velocity = b.meta.velocity_units;
  units.energy = b.meta.energy_units;
  units.angular_momentum =
      "(" + b.grid.mass_units + ") (" + b.grid.length_units + ", physical) (" + b.meta.velocity_units + ")";
  write_bound_objects(f, b, units, comm);
  bound_particle_table().write(f, "/particles", b.particles, units, comm);
  most_bound_table().write(f, "/most_bound", b.most_bound, units, comm);
  f.write_attribute("/", "time", b.meta.time);
  f.write_attribute("/", "redshift", b.meta.redshift);
  f.write_attribute("/", "scale_factor", b.meta.scale_factor);
  f.write_attribute("/", "hubble", b.meta.hubble);
  f.write_attribute("/", "gravitational_constant", b.meta.gravitational_constant);
  f.write_attribute("/", "softening", b.meta.softening);
  f.write_attribute("/", "potential", b.meta.potential);
  f.write_attribute("/", "centre", b.meta.centre);
  f.write_attribute<std::int64_t>("/", "n_most_bound", b.meta.n_most_bound);
}

BoundHeader read_bound_header(const File& f) {
  BoundHeader h;
  h.grid = read_grid_attributes(f, "/grid", false);
  h.meta.time = f.read_attribute_scalar<double>("/", "time");
  h.meta.redshift = f.read_attribute_scalar<double>("/", "redshift");
  h.meta.scale_factor = f.read_attribute_scalar<double>("/", "scale_factor");
  h.meta.hubble = f.read_attribute_scalar<double>("/", "hubble");
  h.meta.gravitational_constant = f.read_attribute_scalar<double>("/", "gravitational_constant");
  h.meta.softening = f.read_attribute_scalar<double>("/", "softening");
  h.meta.potential = f.read_attribute_string("/", "potential");
  h.meta.centre = f.read_attribute_string("/", "centre");
  h.meta.n_most_bound = f.read_attribute_scalar<std::int64_t>("/", "n_most_bound");
  h.meta.velocity_units = f.read_attribute_string("/objects/bulk_velocity", "units");
  h.meta.energy_units = f.read_attribute_string("/particles/energy", "units");
  if (f.has_attribute("/objects", "types")) h.meta.type_names = f.read_attribute_strings("/objects", "types");
  if (f.has_attribute("/objects", "type_codes"))
    for (const std::int64_t t : f.read_attribute<std::int64_t>("/objects", "type_codes"))
      h.meta.types.push_back(static_cast<int>(t));
  h.meta.gas_temperature = f.has("/objects/gas_temperature");
  h.meta.star_forming_gas = f.has("/objects/star_forming_gas_mass");
  if (f.has_attribute("/objects", "apertures_kpc"))
    h.meta.apertures_kpc = f.read_attribute<double>("/objects", "apertures_kpc");
  h.n_objects = bound_object_table().size(f, "/objects");
  h.n_particles = bound_particle_table().size(f, "/particles");
  return h;
}

std::vector<BoundObject> read_bound_objects(const File& f) { return bound_object_table().read(f, "/objects"); }

std::vector<ObjectTypes> read_bound_types(const File& f) {
  if (!f.has("/objects/n_bound_type")) return {};
  const BoundHeader h = read_bound_header(f);
  std::vector<ObjectTypes> out = bound_type_table().read(f, "/objects");
  const std::size_t n_types = h.meta.types.size(), n_apertures = h.meta.apertures_kpc.size();
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i].n_bound.size() != n_types || out[i].mass.size() != n_types ||
        (!out[i].aperture_mass.empty() && out[i].aperture_mass.size() != n_apertures * n_types))
      throw core::Error::input(
          "{}: the per-type columns of /objects do not have the {} types of type_codes and the "
          "{} apertures of apertures_kpc",
          f.path(), n_types, n_apertures);
  return out;
}

std::vector<model::VoterRow> read_bound_voters(const File& f, const std::vector<model::PeakRow>& peaks,
                                               const std::string& peaks_path) {
  std::vector<std::int64_t> ids;
  for (const model::PeakRow& p : peaks) ids.push_back(p.id);
  std::sort(ids.begin(), ids.end());
  const std::vector<MostBoundRow> most = most_bound_table().read(f, "/most_bound");
  const auto pid = f.read<std::uint64_t>("/particles/id");
  const auto energy = f.read<double>("/particles/energy");
  if (pid.size() != energy.size())
    throw core::Error::input("{}: /particles/id and /particles/energy differ in length", f.path());
  std::vector<model::VoterRow> out;
  out.reserve(most.size());
  for (std::size_t i = 0; i < most.size(); ++i) {
    const MostBoundRow& m = most[i];
    if (!std::binary_search(ids.begin(), ids.end(), m.object))
      throw core::Error::input("{}: /most_bound/object row {} is {}, not a peak of {} (unbound from another file?)",
                               f.path(), i, m.object, peaks_path);
    if (i > 0 && (m.object < most[i - 1].object || (m.object == most[i - 1].object && m.rank <= most[i - 1].rank)))
      throw core::Error::input("{}: /most_bound row {} is out of order (expected rows by object, then rank)", f.path(),
                               i);
    const auto at = std::lower_bound(pid.begin(), pid.end(), m.id);
    if (at == pid.end() || *at != m.id)
      throw core::Error::input("{}: /most_bound/particle_id row {} is {}, not in /particles", f.path(), i, m.id);
    out.push_back({m.object, m.id, energy[static_cast<std::size_t>(at - pid.begin())], m.rank});
  }
  return out;
}

void write_yt_halo_catalogue(File& f, const model::Bound& bound, const mpi::Comm& comm) {
  const grid::GridMeta& grid = bound.grid;
  const BoundMeta& meta = bound.meta;
  // yt indexes haloes by position: only objects with bound particles (a finite centre) are haloes to it.
  std::vector<BoundObject> objects;
  std::vector<ObjectTypes> types;
  const std::vector<ObjectTypes> all_types = meta.types.empty() ? std::vector<ObjectTypes>() : object_types(bound);
  for (std::size_t i = 0; i < bound.objects.size(); ++i) {
    const BoundObject& o = bound.objects[i];
    if (!o.dissolved && o.n_bound > 0 && std::isfinite(o.centre[0]) && std::isfinite(o.centre[1]) &&
        std::isfinite(o.centre[2])) {
      objects.push_back(o);
      if (!all_types.empty()) types.push_back(all_types[i]);
    }
  }
  // cgs, as yt's halo_catalog fields are declared (yt/frontends/halo_catalog/fields.py): physical
  // lengths (a times comoving: yt parses the domain's units before it knows the cosmology, so its
  // comoving "cmcm" cannot be used), h taken out of h-scaled units.
  const double h = meta.h_scaled && meta.hubble_param > 0 ? meta.hubble_param : 1.0;
  const double cm = meta.length_in_cm / h * (meta.comoving ? meta.scale_factor : 1.0), g = meta.mass_in_g / h;
  const double cms = meta.velocity_in_cm_per_s;
  const std::string length = "cm";
  // A field: a value per row of `rows` (the objects, or their per-type columns).
  const auto field = [&](const std::string& name, const std::string& units, const auto& rows, const auto& value) {
    std::vector<double> v;
    v.reserve(rows.size());
    for (const auto& row : rows) v.push_back(value(row));
    f.write_distributed<double>("/" + name, v, comm);
    f.write_attribute("/" + name, "units", units);
  };
  const auto column = [&](const std::string& name, const std::string& units,
                          const std::function<double(const BoundObject&)>& value) {
    field(name, units, objects, value);
  };
  std::vector<std::int64_t> ids, parents, n_bound;
  for (const BoundObject& o : objects) {
    ids.push_back(o.id);
    parents.push_back(o.parent > 0 ? o.parent : -1);
    n_bound.push_back(o.n_bound);
  }
  f.write_distributed<std::int64_t>("/particle_identifier", ids, comm);
  f.write_attribute("/particle_identifier", "units", "");
  f.write_distributed<std::int64_t>("/parent_id", parents, comm);
  f.write_attribute("/parent_id", "units", "");
  f.write_distributed<std::int64_t>("/n_bound", n_bound, comm);
  f.write_attribute("/n_bound", "units", "");
  for (std::size_t d = 0; d < 3; ++d) {
    const std::string axis(1, "xyz"[d]);
    column("particle_position_" + axis, length, [&](const BoundObject& o) { return o.centre[d] * cm; });
    column("particle_velocity_" + axis, "cm/s", [&](const BoundObject& o) { return o.bulk_velocity[d] * cms; });
  }
  column("particle_mass", "g", [&](const BoundObject& o) { return o.mass * g; });
  column("virial_radius", length, [&](const BoundObject& o) { return o.rvir * cm; });
  column("mvir", "g", [&](const BoundObject& o) { return o.mvir * g; });
  column("m200c", "g", [&](const BoundObject& o) { return o.m200c * g; });
  column("r200c", length, [&](const BoundObject& o) { return o.r200c * cm; });
  column("m200m", "g", [&](const BoundObject& o) { return o.m200m * g; });
  column("m500c", "g", [&](const BoundObject& o) { return o.m500c * g; });
  column("vmax", "cm/s", [&](const BoundObject& o) { return o.vmax * cms; });
  column("rmax", length, [&](const BoundObject& o) { return o.rmax * cm; });
  column("vrms", "cm/s", [&](const BoundObject& o) { return o.vrms * cms; });
  column("spin_peebles", "", [](const BoundObject& o) { return o.spin_peebles; });
  column("spin_bullock", "", [](const BoundObject& o) { return o.spin_bullock; });
  column("concentration", "", [](const BoundObject& o) { return o.concentration_klypin; });
  column("b_to_a", "", [](const BoundObject& o) { return o.b_to_a; });
  column("c_to_a", "", [](const BoundObject& o) { return o.c_to_a; });
  if (meta.gas_temperature) column("gas_temperature", "K", [](const BoundObject& o) { return o.gas_temperature; });
  if (meta.star_forming_gas)
    column("star_forming_gas_mass", "g", [&](const BoundObject& o) { return o.star_forming_gas_mass * g; });
  // Per type, of the own bound particles: a field per type and property (yt's fields are scalars).
  const auto type_column = [&](const std::string& name, const std::string& units,
                               const std::function<double(const ObjectTypes&)>& value) {
    field(name, units, types, value);
  };
  const std::size_t n_types = meta.types.size();
  for (std::size_t t = 0; t < n_types; ++t) {
    const std::string& type = meta.type_names[t];
    type_column("mass_" + type, "g", [&](const ObjectTypes& x) { return x.mass[t] * g; });
    type_column("half_mass_radius_" + type, length, [&](const ObjectTypes& x) { return x.half_mass_radius[t] * cm; });
    type_column("velocity_dispersion_" + type, "cm/s",
                [&](const ObjectTypes& x) { return x.velocity_dispersion[t] * cms; });
    for (std::size_t k = 0; k < meta.apertures_kpc.size(); ++k)
      type_column(fmt::format("mass_{}_{:g}kpc", type, meta.apertures_kpc[k]), "g",
                  [&](const ObjectTypes& x) { return x.aperture_mass[k * n_types + t] * g; });
  }

  const std::int64_t n = comm.sum<std::int64_t>(static_cast<std::int64_t>(objects.size()));
  f.write_attribute("/", "data_type", "halo_catalog");
  f.write_attribute<std::int64_t>("/", "num_halos", n);
  // yt's frontend reads the dataset's cosmology whatever cosmological_simulation says (yt 4.1,
  // YTHaloDataset._parse_parameter_file), so a snapshot without one gets placeholders (h = 1,
  // Omega_m = 1, Omega_Lambda = 0), marked by phew_cosmology_placeholder.
  const bool cosmology = meta.hubble_param > 0;
  f.write_attribute<std::int64_t>("/", "cosmological_simulation", 1);
  f.write_attribute<std::int64_t>("/", "phew_cosmology_placeholder", cosmology ? 0 : 1);
  f.write_attribute("/", "current_redshift", meta.redshift);
  f.write_attribute("/", "current_time", 0.0);  // not known in seconds without integrating the cosmology
  f.write_attribute("/", "current_time_units", "s");
  f.write_attribute("/", "hubble_constant", cosmology ? meta.hubble_param : 1.0);
  f.write_attribute("/", "omega_matter", cosmology ? meta.omega_m : 1.0);
  f.write_attribute("/", "omega_lambda", cosmology ? meta.omega_lambda : 0.0);
  std::array<double, 3> left{}, right{};
  for (std::size_t d = 0; d < 3; ++d) {
    left[d] = grid.geometry.origin[d] * cm;
    right[d] = (grid.geometry.origin[d] + grid.geometry.extent[d]) * cm;
  }
  f.write_attribute<double>("/", "domain_left_edge", std::span<const double>(left));
  f.write_attribute("/", "domain_left_edge_units", length);
  f.write_attribute<double>("/", "domain_right_edge", std::span<const double>(right));
  f.write_attribute("/", "domain_right_edge_units", length);
}

}  // namespace phew::io
