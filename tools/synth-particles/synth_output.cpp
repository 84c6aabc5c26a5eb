#include "synth_output.hpp"

#include "core/error.hpp"
#include "particles/particle_set.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>

namespace phew {
namespace {

using synth::ComponentTruth;
using synth::Particles;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string stem_of(const std::string& output) {
  for (const char* suffix : {".hdf5", ".h5"})
    if (ends_with(output, suffix)) return output.substr(0, output.size() - std::string(suffix).size());
  return output;
}

struct UnitNames {
  std::string length, mass, velocity;
};

UnitNames unit_names(const synth::Scene& s) {
  if (s.cosmological) return {"kpc/h", "1e10 Msun/h", "km/s"};
  return {"kpc", "1e10 Msun", "km/s"};
}

// Rank 0 writes all rows, the others none, stored as file type F (float32 or float64).
template <typename F>
void write_table(io::File& f, const std::string& name, std::uint64_t rows, std::uint64_t cols, const std::vector<double>& data) {
  std::vector<std::uint64_t> shape{rows};
  if (cols > 1) shape.push_back(cols);
  const std::span<const double> mine = f.rank() == 0 ? std::span<const double>(data) : std::span<const double>();
  f.write_rows<F, double>(name, shape, 0, mine);
}

void write_real(io::File& f, bool f64, const std::string& name, std::uint64_t rows, std::uint64_t cols,
                const std::vector<double>& data, const std::string& units) {
  if (f64) write_table<double>(f, name, rows, cols, data);
  else write_table<float>(f, name, rows, cols, data);
  f.write_attribute(name, "units", units);
}

}  // namespace

OutputNames output_names(const std::string& output, int snapshots) {
  OutputNames names;
  const std::string stem = stem_of(output);
  if (snapshots == 1) {
    names.snapshots.push_back(output);
    names.truths.push_back(stem + ".truth.h5");
    return names;
  }
  const int width = std::max(3, static_cast<int>(std::to_string(snapshots - 1).size()));
  for (int s = 0; s < snapshots; ++s) {
    const std::string base = fmt::format("{}_{:0{}}", stem, s, width);
    names.snapshots.push_back(base + ".hdf5");
    names.truths.push_back(base + ".truth.h5");
  }
  return names;
}

void write_gadget_snapshot(io::File& f, const SnapshotMeta& meta, const Particles& p, const std::vector<double>& potential,
                           const std::vector<double>& acceleration) {
  const synth::Scene& s = *meta.scene;
  const std::vector<ComponentTruth>& truth = *meta.truth;
  const std::uint64_t n = meta.n;
  const UnitNames u = unit_names(s);
  const bool f64 = s.double_precision;

  // One particle mass for all: in the MassTable, as Gadget does, and no Masses dataset.
  bool equal = true;
  for (const auto& t : truth) equal = equal && t.particle_mass == truth.front().particle_mass;
  const double table_mass = equal ? truth.front().particle_mass : 0.0;

  f.create_group("/Header");
  const std::array<std::uint32_t, 6> count{0, static_cast<std::uint32_t>(n), 0, 0, 0, 0}, high{0, 0, 0, 0, 0, 0};
  const std::array<double, 6> mass_table{0, table_mass, 0, 0, 0, 0};
  f.write_attribute<std::uint32_t>("/Header", "NumPart_ThisFile", count);
  f.write_attribute<std::uint32_t>("/Header", "NumPart_Total", count);
  f.write_attribute<std::uint32_t>("/Header", "NumPart_Total_HighWord", high);
  f.write_attribute<double>("/Header", "MassTable", mass_table);
  f.write_attribute("/Header", "BoxSize", s.box);
  f.write_attribute("/Header", "Time", meta.time);
  f.write_attribute("/Header", "Redshift", s.cosmological ? s.redshift : 0.0);
  f.write_attribute("/Header", "NumFilesPerSnapshot", std::int32_t{1});
  // A non-cosmological run: Omega0 = 0 (no comoving coordinates) and HubbleParam = 1, so that Gadget's
  // implicit 1/h in the units is 1.
  f.write_attribute("/Header", "Omega0", s.cosmological ? s.omega_m : 0.0);
  f.write_attribute("/Header", "OmegaLambda", s.cosmological ? s.omega_lambda : 0.0);
  f.write_attribute("/Header", "HubbleParam", s.cosmological ? s.hubble : 1.0);
  const Units units;
  f.write_attribute("/Header", "UnitLength_in_cm", units.length_cm);
  f.write_attribute("/Header", "UnitMass_in_g", units.mass_g);
  f.write_attribute("/Header", "UnitVelocity_in_cm_per_s", units.velocity_cm_per_s);
  f.write_attribute("/Header", "Flag_DoublePrecision", std::int32_t{f64 ? 1 : 0});

  f.create_group("/PartType1");
  if (f64) {
    write_table<double>(f, "/PartType1/Coordinates", n, 3, p.position);
  } else {
    // Rounded to float32 here rather than by HDF5, so that a coordinate just below BoxSize does not
    // round up to BoxSize (periodically, that is 0).
    std::vector<float> x(f.rank() == 0 ? p.position.size() : 0);
    const auto box = static_cast<float>(s.box);
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(p.position[i]);
      if (s.box > 0 && x[i] >= box) x[i] = 0;
    }
    f.write_rows<float, float>("/PartType1/Coordinates", {n, 3}, 0, x);
  }
  f.write_attribute("/PartType1/Coordinates", "units", u.length);
  write_real(f, f64, "/PartType1/Velocities", n, 3, p.velocity, s.cosmological ? "km/s (u = v/sqrt(a))" : u.velocity);
  std::vector<std::uint64_t> ids(f.rank() == 0 ? n : 0);
  for (std::uint64_t i = 0; i < ids.size(); ++i) ids[i] = i + 1;
  f.write_rows<std::uint64_t, std::uint64_t>("/PartType1/ParticleIDs", {n}, 0, ids);
  if (!equal) write_real(f, f64, "/PartType1/Masses", n, 1, p.mass, u.mass);
  if (s.potential) write_real(f, f64, "/PartType1/Potential", n, 1, potential, "(km/s)^2");
  if (s.acceleration) write_real(f, f64, "/PartType1/Acceleration", n, 3, acceleration, "(km/s)^2/" + u.length);
}

void write_truth(io::File& f, const SnapshotMeta& meta, const Particles& p, const std::vector<std::int8_t>& bound) {
  const synth::Scene& s = *meta.scene;
  const std::vector<ComponentTruth>& truth = *meta.truth;
  const synth::CentreTrack& track = *meta.track;
  const std::uint64_t n = meta.n, k = truth.size(), ns = track.time.size();
  const UnitNames u = unit_names(s);
  const bool root = f.rank() == 0;

  f.write_attribute("/", "snapshot", meta.snapshot_name);
  f.write_attribute("/", "snapshot_index", static_cast<std::int64_t>(meta.index));
  f.write_attribute("/", "time", meta.time);
  f.write_attribute("/", "time_myr", meta.time_myr);
  f.write_attribute("/", "redshift", s.cosmological ? s.redshift : 0.0);
  f.write_attribute("/", "seed", s.seed);
  f.write_attribute("/", "sequence", synth::to_string(s.sequence.mode));
  f.write_attribute("/", "scene", meta.scene_json);
  f.write_attribute("/", "length_units", u.length);
  f.write_attribute("/", "mass_units", u.mass);
  f.write_attribute("/", "velocity_units", u.velocity);
  f.write_attribute("/", "time_units", "kpc/(km/s)");

  f.create_group("/particles");
  std::vector<std::uint64_t> ids(root ? n : 0);
  for (std::uint64_t i = 0; i < ids.size(); ++i) ids[i] = i + 1;
  f.write("/particles/id", std::vector<std::uint64_t>{n}, std::span<const std::uint64_t>(ids));
  const std::span<const std::int32_t> comp = root ? std::span<const std::int32_t>(p.component) : std::span<const std::int32_t>();
  f.write("/particles/component", std::vector<std::uint64_t>{n}, comp);
  const std::span<const std::int8_t> b = root ? std::span<const std::int8_t>(bound) : std::span<const std::int8_t>();
  f.write("/particles/bound", std::vector<std::uint64_t>{n}, b);

  // Per component: parameters (0 where one does not apply) and the state at this snapshot.
  f.create_group("/components");
  nlohmann::json names = nlohmann::json::array(), models = nlohmann::json::array();
  std::vector<std::int64_t> n_particles;
  std::vector<std::uint64_t> first_id;
  std::vector<std::int8_t> is_halo;
  std::vector<std::int32_t> parent;
  std::vector<double> particle_mass, mass, m200, r200, conc, rs, rt, rd, rhalf, center, velocity;
  const auto index = static_cast<std::size_t>(meta.index);
  for (std::size_t c = 0; c < k; ++c) {
    const ComponentTruth& t = truth[c];
    names.push_back(t.name);
    models.push_back(t.model);
    n_particles.push_back(static_cast<std::int64_t>(t.n_particles));
    first_id.push_back(t.first_id);
    is_halo.push_back(t.halo ? 1 : 0);
    parent.push_back(t.parent);
    particle_mass.push_back(t.particle_mass);
    mass.push_back(t.mass);
    m200.push_back(t.m200);
    r200.push_back(t.r200);
    conc.push_back(t.concentration);
    rs.push_back(t.scale_radius);
    rt.push_back(t.truncation_radius);
    rd.push_back(t.decay_radius);
    rhalf.push_back(t.half_mass_radius);
    for (std::size_t d = 0; d < 3; ++d) {
      center.push_back(track.center[index][c][d]);
      velocity.push_back(track.velocity[index][c][d]);
    }
  }
  f.write_attribute("/components", "names", names.dump());
  f.write_attribute("/components", "models", models.dump());
  f.write<std::int64_t>("/components/n_particles", n_particles);
  f.write<std::uint64_t>("/components/first_id", first_id);
  f.write<std::int8_t>("/components/is_halo", is_halo);
  f.write<std::int32_t>("/components/parent", parent);
  auto real = [&](const std::string& name, const std::vector<double>& v, const std::string& units, bool vec = false) {
    f.write(name, vec ? std::vector<std::uint64_t>{k, 3} : std::vector<std::uint64_t>{k}, std::span<const double>(v));
    f.write_attribute(name, "units", units);
  };
  real("/components/particle_mass", particle_mass, u.mass);
  real("/components/mass", mass, u.mass);
  real("/components/m200", m200, u.mass);
  real("/components/r200", r200, u.length);
  real("/components/concentration", conc, "1");
  real("/components/scale_radius", rs, u.length);
  real("/components/truncation_radius", rt, u.length);
  real("/components/decay_radius", rd, u.length);
  real("/components/half_mass_radius", rhalf, u.length);
  real("/components/center", center, u.length, true);
  real("/components/velocity", velocity, u.velocity, true);
  f.write_attribute("/components", "overdensity", s.overdensity);
  f.write_attribute("/components", "critical_density", s.critical_density());
  f.write_attribute("/components", "critical_density_units", "(" + u.mass + ")/(" + u.length + ")^3");

  // The whole sequence's centre track, so each truth file alone tells where every halo goes.
  f.create_group("/track");
  std::vector<double> time_myr, tc, tv;
  for (std::size_t i = 0; i < ns; ++i) {
    time_myr.push_back(track.time[i] * synth::time_unit_myr());
    for (std::size_t c = 0; c < k; ++c)
      for (std::size_t d = 0; d < 3; ++d) {
        tc.push_back(track.center[i][c][d]);
        tv.push_back(track.velocity[i][c][d]);
      }
  }
  f.write<double>("/track/time", track.time);
  f.write_attribute("/track/time", "units", "kpc/(km/s)");
  f.write<double>("/track/time_myr", time_myr);
  f.write_attribute("/track/time_myr", "units", "Myr");
  f.write("/track/center", {ns, k, 3}, std::span<const double>(tc));
  f.write_attribute("/track/center", "units", u.length);
  f.write("/track/velocity", {ns, k, 3}, std::span<const double>(tv));
  f.write_attribute("/track/velocity", "units", u.velocity);
}

}  // namespace phew
