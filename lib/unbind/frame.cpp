#include <phew/unbind/frame.hpp>

#include <phew/core/units.hpp>
#include <phew/gravity/setup.hpp>

namespace phew::unbind {

Frame frame_of(const particles::SnapshotInfo& info, const grid::GridMeta& grid, std::optional<double> softening,
               std::uint64_t n_particles) {
  Frame frame;
  frame.box = grid.geometry.box();
  frame.G = info.units.gravitational_constant();
  frame.scale_factor = info.comoving ? info.time : 1.0;
  frame.critical_density = grid.critical_density.value_or(0.0);
  frame.omega_m = grid.omega_m.value_or(0.0);
  frame.omega_lambda = grid.omega_lambda.value_or(0.0);
  if (info.comoving && frame.critical_density > 0)
    frame.hubble = particles::hubble_rate(frame.critical_density, frame.scale_factor, frame.G);
  frame.softening = softening ? *softening : gravity::default_softening(grid.geometry, n_particles);
  return frame;
}

std::vector<double> aperture_radii(const particles::SnapshotInfo& info, const std::vector<double>& kpc) {
  const double h =
      info.units.h_scaled && info.cosmology && info.cosmology->hubble_param > 0 ? info.cosmology->hubble_param : 1.0;
  std::vector<double> out;
  for (const double r : kpc) out.push_back(r * core::units::kKpcInCm / info.units.length_cm * h);
  return out;
}

model::BoundMeta bound_meta(const Frame& frame, const Params& params, const particles::SnapshotInfo& info,
                            const std::vector<double>& apertures_kpc) {
  model::BoundMeta meta;
  meta.time = info.time;
  meta.redshift = info.redshift;
  meta.scale_factor = frame.scale_factor;
  meta.hubble = frame.hubble;
  meta.gravitational_constant = frame.G;
  meta.softening = frame.softening;
  meta.potential = to_string(params.potential);
  meta.centre = to_string(params.centre);
  meta.n_most_bound = static_cast<std::int64_t>(params.n_most_bound);
  meta.velocity_units = info.units.peculiar_velocity_name();
  meta.energy_units = "(" + info.units.velocity_name() + ")^2";
  meta.length_in_cm = info.units.length_cm;
  meta.mass_in_g = info.units.mass_g;
  meta.velocity_in_cm_per_s = info.units.velocity_cm_per_s;
  meta.h_scaled = info.units.h_scaled;
  meta.comoving = info.comoving;
  if (info.cosmology) {
    meta.hubble_param = info.cosmology->hubble_param;
    meta.omega_m = info.cosmology->omega_m;
    meta.omega_lambda = info.cosmology->omega_lambda;
  }
  meta.types = params.types;
  for (const int t : params.types) meta.type_names.push_back(info.type_name(t));
  meta.apertures_kpc = apertures_kpc;
  return meta;
}

}  // namespace phew::unbind
