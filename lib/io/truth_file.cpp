#include <phew/io/truth_file.hpp>

#include <phew/core/error.hpp>
#include <phew/core/units.hpp>

#include <nlohmann/json.hpp>

namespace phew::io {

// The rows this file maps (lib/model).
using model::Truth;
using model::TruthComponent;
using model::TruthMeta;
using model::TruthParticle;
using model::TruthTrack;
namespace {

using core::units::kGadgetTimeUnits;

std::vector<std::string> strings_of(const File& f, const std::string& object, const std::string& name) {
  try {
    return nlohmann::json::parse(f.read_attribute_string(object, name)).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw core::Error::input("{}: attribute {} of {} is not a JSON list of names ({})", f.path(), name, object,
                             e.what());
  }
}

}  // namespace

const Table<TruthParticle>& truth_particle_table() {
  // clang-format off: one column and its constraints per line
  static const Table<TruthParticle> t = Table<TruthParticle>()
                                            .column("id", &TruthParticle::id)
                                            .column("component", &TruthParticle::component)
                                            .column("bound", &TruthParticle::bound);
  // clang-format on
  return t;
}

const Table<TruthComponent>& truth_component_table() {
  using C = TruthComponent;
  // clang-format off: one column and its constraints per line
  static const Table<C> t = Table<C>()
                                .column("n_particles", &C::n_particles)
                                .column("first_id", &C::first_id)
                                .column("is_halo", &C::is_halo)
                                .column("parent", &C::parent)
                                .column("particle_mass", &C::particle_mass, Unit::mass)
                                .column("mass", &C::mass, Unit::mass)
                                .column("m200", &C::m200, Unit::mass)
                                .column("r200", &C::r200, Unit::length)
                                .column("concentration", &C::concentration)  // units "1", written below
                                .column("scale_radius", &C::scale_radius, Unit::length)
                                .column("truncation_radius", &C::truncation_radius, Unit::length)
                                .column("decay_radius", &C::decay_radius, Unit::length)
                                .column("half_mass_radius", &C::half_mass_radius, Unit::length)
                                .column("center", &C::center, Unit::length)
                                .column("velocity", &C::velocity, Unit::velocity);
  // clang-format on
  return t;
}

void write_truth(File& f, const Truth& t, const mpi::Comm& comm) {
  const TruthMeta& m = t.meta;
  f.write_attribute("/", "snapshot", m.snapshot);
  f.write_attribute("/", "snapshot_index", m.snapshot_index);
  f.write_attribute("/", "time", m.time);
  f.write_attribute("/", "time_myr", m.time_myr);
  f.write_attribute("/", "redshift", m.redshift);
  f.write_attribute("/", "seed", m.seed);
  f.write_attribute("/", "sequence", m.sequence);
  f.write_attribute("/", "scene", m.scene);
  f.write_attribute("/", "length_units", m.length_units);
  f.write_attribute("/", "mass_units", m.mass_units);
  f.write_attribute("/", "velocity_units", m.velocity_units);
  f.write_attribute("/", "time_units", kGadgetTimeUnits);

  UnitNames units;
  units.length = m.length_units;
  units.mass = m.mass_units;
  units.velocity = m.velocity_units;
  truth_particle_table().write(f, "/particles", t.particles, units, comm);
  truth_component_table().write(f, "/components", t.components, units, comm);
  f.write_attribute("/components/concentration", "units", "1");
  f.write_attribute("/components", "names", nlohmann::json(m.names).dump());
  f.write_attribute("/components", "models", nlohmann::json(m.models).dump());
  f.write_attribute("/components", "overdensity", m.overdensity);
  f.write_attribute("/components", "critical_density", m.critical_density);
  f.write_attribute("/components", "critical_density_units", "(" + m.mass_units + ")/(" + m.length_units + ")^3");

  const TruthTrack& tr = t.track;
  const std::uint64_t ns = tr.time.size(), k = m.names.size();
  if (tr.time_myr.size() != ns || tr.center.size() != 3 * ns * k || tr.velocity.size() != 3 * ns * k)
    throw core::Error::internal("truth track of {} times and {} components has arrays of other sizes", ns, k);
  f.create_group("/track");
  f.write<double>("/track/time", tr.time);
  f.write_attribute("/track/time", "units", kGadgetTimeUnits);
  f.write<double>("/track/time_myr", tr.time_myr);
  f.write_attribute("/track/time_myr", "units", "Myr");
  f.write<double>("/track/center", {ns, k, 3}, tr.center);
  f.write_attribute("/track/center", "units", m.length_units);
  f.write<double>("/track/velocity", {ns, k, 3}, tr.velocity);
  f.write_attribute("/track/velocity", "units", m.velocity_units);
}

Truth read_truth(const File& f) {
  Truth t;
  TruthMeta& m = t.meta;
  m.snapshot = f.read_attribute_string("/", "snapshot");
  m.snapshot_index = f.read_attribute_scalar<std::int64_t>("/", "snapshot_index");
  m.time = f.read_attribute_scalar<double>("/", "time");
  m.time_myr = f.read_attribute_scalar<double>("/", "time_myr");
  m.redshift = f.read_attribute_scalar<double>("/", "redshift");
  m.seed = f.read_attribute_scalar<std::uint64_t>("/", "seed");
  m.sequence = f.read_attribute_string("/", "sequence");
  m.scene = f.read_attribute_string("/", "scene");
  m.length_units = f.read_attribute_string("/", "length_units");
  m.mass_units = f.read_attribute_string("/", "mass_units");
  m.velocity_units = f.read_attribute_string("/", "velocity_units");
  m.names = strings_of(f, "/components", "names");
  m.models = strings_of(f, "/components", "models");
  m.overdensity = f.read_attribute_scalar<double>("/components", "overdensity");
  m.critical_density = f.read_attribute_scalar<double>("/components", "critical_density");
  t.particles = truth_particle_table().read(f, "/particles");
  t.components = truth_component_table().read(f, "/components");
  if (m.names.size() != t.components.size() || m.models.size() != t.components.size())
    throw core::Error::input("{}: {} components but {} names and {} models", f.path(), t.components.size(),
                             m.names.size(), m.models.size());
  t.track.time = f.read<double>("/track/time");
  t.track.time_myr = f.read<double>("/track/time_myr");
  t.track.center = f.read<double>("/track/center");
  t.track.velocity = f.read<double>("/track/velocity");
  const std::size_t expect = 3 * t.track.time.size() * t.components.size();
  if (t.track.time_myr.size() != t.track.time.size() || t.track.center.size() != expect ||
      t.track.velocity.size() != expect)
    throw core::Error::input("{}: /track arrays do not match {} times of {} components", f.path(), t.track.time.size(),
                             t.components.size());
  return t;
}

}  // namespace phew::io
