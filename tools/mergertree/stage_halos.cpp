#include "stage_halos.hpp"

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/core/threads.hpp>
#include <phew/grid/particle_index.hpp>
#include <phew/grid/shrinking_sphere.hpp>
#include <phew/grid/spherical_overdensity.hpp>
#include <phew/io/bound_file.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/manifest/manifest.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/tool/snapshot_input.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numbers>

namespace phew::tools {
namespace {

// The inputs of one kind the manifest of `path` records, as (path, fingerprint).
std::vector<std::pair<std::string, std::string>> recorded_inputs(const std::string& path, const std::string& kind) {
  std::vector<std::pair<std::string, std::string>> out;
  const manifest::Json m = manifest::read_manifest(path);
  if (!m.contains("inputs") || !m["inputs"].is_array()) return out;
  for (std::size_t i = 0; i < m["inputs"].size(); ++i) {
    const manifest::RecordedInput in = manifest::recorded_input(path, i);
    if (in.kind == kind) out.emplace_back(in.path, in.fingerprint);
  }
  return out;
}

// Peak -> the central peak of its halo: its parent clump's halo (the halo's ID is its central peak's),
// 0 when the peak is that central or its clump is not in the catalogue.
void set_hosts(mergertree::Stage& stage, const std::string& peaks_path, const std::vector<model::PeakRow>& rows) {
  const auto clumps = recorded_inputs(peaks_path, "clumps");
  std::error_code ec;
  if (clumps.empty() || !std::filesystem::is_regular_file(clumps.front().first, ec)) {
    core::log::warn("{}: the clumps.h5 it was made from is not at hand: its peaks get no host (pid = upid = -1)",
                    peaks_path);
    return;
  }
  const auto in = manifest::check_phew_input(clumps.front().first, {"clumps"});
  if (in.fingerprint != clumps.front().second)
    throw core::Error::input("{}: {} changed since the peaks were made from it", peaks_path, clumps.front().first);
  const io::File f = io::File::open_read(clumps.front().first);
  stage.density_threshold = io::read_clumps_header(f).density_threshold;
  std::map<std::int64_t, std::int64_t> halo_of;
  for (const model::Clump& c : io::read_clumps(f)) halo_of[c.id] = c.halo;
  // make_stage kept only what linking needs; the parent clumps come from peaks.h5's rows.
  std::map<std::int64_t, std::int64_t> parent;
  for (const model::PeakRow& p : rows) parent[p.id] = p.parent_clump;
  for (mergertree::StagePeak& p : stage.peaks) {
    const auto h = halo_of.find(parent[p.id]);
    p.halo.host = h == halo_of.end() || h->second == p.id ? 0 : h->second;
  }
}

// Where each peak of the stage (in its order) is: the shrinking-sphere centre of its member particles
// (lib/grid/shrinking_sphere.hpp), taken through the periodic images nearest to the peak's position in
// peaks.h5 (that position itself for a peak without members), and the distance from it to its farthest
// member. Error(input) when a member is not among the snapshot's particles (the membership is not this
// snapshot's).
struct PeakCentre {
  std::array<double, 3> centre{};
  double extent = 0;
};
std::vector<PeakCentre> peak_centres(const mergertree::Stage& stage, const particles::ParticleSet& ps,
                                     const grid::Box& box, const std::string& peaks_path, int threads) {
  // Snapshot particles by ID, to find the members (stage.member_id is sorted by ID).
  std::vector<std::size_t> by_id(ps.size());
  for (std::size_t i = 0; i < by_id.size(); ++i) by_id[i] = i;
  std::sort(by_id.begin(), by_id.end(), [&](std::size_t x, std::size_t y) { return ps.id[x] < ps.id[y]; });
  std::map<std::int64_t, std::vector<std::size_t>> members;  // peak -> snapshot indices, by particle ID
  std::size_t j = 0;
  for (std::size_t k = 0; k < stage.member_id.size(); ++k) {
    while (j < by_id.size() && ps.id[by_id[j]] < stage.member_id[k]) ++j;
    if (j == by_id.size() || ps.id[by_id[j]] != stage.member_id[k])
      throw core::Error::input("{}: particle {} of peak {} is not in the snapshot it was made from", peaks_path,
                               stage.member_id[k], stage.member_peak[k]);
    members[stage.member_peak[k]].push_back(by_id[j]);
  }
  // Each peak's centre in its own slot, on threads.
  std::vector<PeakCentre> out(stage.peaks.size());
  core::parallel_for(threads, stage.peaks.size(), 1, [&](std::size_t b, std::size_t e, int) {
    std::vector<double> position, mass;
    for (std::size_t k = b; k < e; ++k) {
      const mergertree::StagePeak& p = stage.peaks[k];
      position.clear();
      mass.clear();
      if (const auto it = members.find(p.id); it != members.end())
        for (std::size_t i : it->second) {
          position.insert(position.end(), ps.position.begin() + static_cast<std::ptrdiff_t>(3 * i),
                          ps.position.begin() + static_cast<std::ptrdiff_t>(3 * i + 3));
          mass.push_back(ps.mass[i]);
        }
      PeakCentre pc{shrinking_sphere_centre(position, mass, box, p.position), 0.0};
      for (std::size_t i = 0; i < mass.size(); ++i) {
        double r2 = 0;
        for (std::size_t d = 0; d < 3; ++d) {
          const double dx = grid::minimum_image(position[3 * i + d] - pc.centre[d], box.extent[d], box.periodic);
          r2 += dx * dx;
        }
        pc.extent = std::max(pc.extent, std::sqrt(r2));
      }
      out[k] = pc;
    }
  });
  return out;
}

}  // namespace

mergertree::SimulationUnits add_stage_halos(mergertree::Stage& stage, const std::string& peaks_path,
                                            const io::PeaksHeader& header, const std::vector<model::PeakRow>& rows,
                                            bool so_masses, const std::string& units_text, int threads,
                                            manifest::Builder& man) {
  set_hosts(stage, peaks_path, rows);
  mergertree::SimulationUnits units;
  std::vector<std::string> files;
  for (const auto& [path, fingerprint] : recorded_inputs(peaks_path, "snapshot")) files.push_back(path);
  std::error_code ec;
  if (files.empty() || !std::filesystem::exists(files.front(), ec)) {
    if (so_masses)
      throw core::Error::input("{}: the snapshot it was made from is not at hand (needed by --particles)", peaks_path);
    core::log::warn("{}: the snapshot it was made from is not at hand: the tree does not know its units", peaks_path);
    return units;
  }
  const auto reader = tool::open_snapshot_with_units({files.front()}, units_text, mpi::Comm::self(), &man);
  const particles::SnapshotInfo& info = reader->info();
  check_snapshot_matches_grid(info, header.grid, files.front(), peaks_path);
  units = {true,
           info.units.length_cm,
           info.units.mass_g,
           info.units.velocity_cm_per_s,
           info.units.h_scaled,
           info.comoving,
           info.cosmology ? info.cosmology->omega_m : 0.0,
           info.cosmology ? info.cosmology->omega_lambda : 0.0,
           info.cosmology ? info.cosmology->hubble_param : 0.0};
  if (!so_masses) return units;

  if (!info.cosmology || !(info.cosmology->hubble_param > 0))
    throw core::Error::input("{}: the snapshot has no cosmology, so no critical density for --particles",
                             files.front());
  // The particles the peaks were made of (deblend's types), on this rank alone.
  std::vector<int> types;
  const manifest::Json m = manifest::read_manifest(peaks_path);
  if (m.contains("parameters") && m["parameters"].contains("types_used"))
    for (const auto& t : m["parameters"]["types_used"]) types.push_back(t.get<int>());
  if (types.empty()) types = selected_types(info, "auto");
  particles::FieldSelection fields;
  fields.ids = true;
  const particles::ParticleSet ps = read_share(*reader, types, fields, mpi::Comm::self());
  const grid::Box box = header.grid.geometry.box();
  const double a = info.comoving ? info.time : 1.0;
  const double rho_c = info.cosmology->critical_density(a, info.units);
  const double delta = grid::bryan_norman_delta(info.cosmology->omega_m, info.cosmology->omega_lambda, a);
  const std::vector<PeakCentre> where = peak_centres(stage, ps, box, peaks_path, threads);
  double max_radius = 0;
  for (std::size_t d = 0; d < 3; ++d) max_radius = std::max(max_radius, box.extent[d]);
  if (box.periodic) max_radius = 0.5 * *std::min_element(box.extent.begin(), box.extent.end());
  const double spacing =
      std::cbrt(box.extent[0] * box.extent[1] * box.extent[2] / std::max(1.0, static_cast<double>(ps.size())));
  const grid::ParticleIndex index(ps.position, ps.mass, box, 2 * spacing);
  // The search starts around the whole peak (its farthest member), so that a gap inside it cannot end
  // the search (spherical_overdensity grows it while the density inside is above Delta).
  std::vector<std::array<double, 3>> centres;
  std::vector<double> start;
  for (std::size_t i = 0; i < stage.peaks.size(); ++i) {
    const double peak_mass = std::max(stage.peaks[i].mass, 0.0);
    centres.push_back(where[i].centre);
    start.push_back(std::max(where[i].extent, 2 * std::cbrt(3 * peak_mass / (4 * std::numbers::pi * delta * rho_c))));
  }
  const auto so = spherical_overdensity(index, centres, start, max_radius, rho_c, delta);
  for (std::size_t i = 0; i < stage.peaks.size(); ++i) {
    stage.peaks[i].halo.mvir = so[i].vir.mass;
    stage.peaks[i].halo.rvir = so[i].vir.radius;
    stage.peaks[i].halo.m200c = so[i].c200.mass;
  }
  core::log::verbose("{}: spherical overdensity of {} peaks (Delta_vir = {:.1f}, {} particles)", peaks_path,
                     stage.peaks.size(), delta, ps.size());
  return units;
}

void add_bound_properties(mergertree::Stage& stage, const std::string& bound_path,
                          const mergertree::SimulationUnits& units) {
  // bound.h5 is in the units unbind read the snapshot in (its manifest's units_used): the stage's too?
  const manifest::Json m = manifest::read_manifest(bound_path);
  if (units.known && m.contains("parameters") && m["parameters"].contains("units_used")) {
    const manifest::Json& used = m["parameters"]["units_used"];
    const auto differs = [&](const char* key, double b) {
      if (!used.contains(key) || !used[key].is_number()) return false;
      const double a = used[key].get<double>();
      return std::abs(a - b) > 1e-9 * std::max(std::abs(a), std::abs(b));
    };
    if (differs("length_in_cm", units.length_cm) || differs("mass_in_g", units.mass_g) ||
        differs("velocity_in_cm_per_s", units.velocity_cm_per_s))
      throw core::Error::input(
          "{}: made in other units than the stage's snapshot was read in (give unbind and mergertree "
          "the same --units)",
          bound_path);
  }
  const io::File f = io::File::open_read(bound_path);
  std::map<std::int64_t, model::BoundObject> by_id;
  const std::vector<model::BoundObject> objects = io::read_bound_objects(f);
  for (const model::BoundObject& o : objects) by_id.emplace(o.id, o);
  // The per-type columns (inclusive, as the bound mass), by object ID; none in a bound.h5 without them.
  const std::vector<io::ObjectTypes> types = io::read_bound_types(f);
  std::map<std::int64_t, const io::ObjectTypes*> types_of;
  for (std::size_t i = 0; i < types.size(); ++i) types_of[objects[i].id] = &types[i];
  if (!types.empty()) {
    const io::BoundHeader header = io::read_bound_header(f);
    stage.bound_types = header.meta.type_names;
    stage.bound_apertures_kpc = header.meta.apertures_kpc;
  }
  for (mergertree::StagePeak& p : stage.peaks) {
    const auto it = by_id.find(p.id);
    if (it == by_id.end()) throw core::Error::input("{}: has no object for peak {}", bound_path, p.id);
    const model::BoundObject& o = it->second;
    // NaN where unbind could not measure; a bound.h5 from before 2026-11-28 wrote 0 there (every measured
    // property is positive, a vector of one measured is not all zero).
    const auto measured = [](double v) { return v == 0 ? model::BoundObject::kNaN : v; };
    const auto& j = o.angular_momentum;
    p.halo.mvir = measured(o.mvir);
    p.halo.rvir = measured(o.rvir);
    p.halo.m200c = measured(o.m200c);
    p.halo.bound = {true,
                    o.mass_inclusive,
                    measured(o.vmax),
                    measured(o.vrms),
                    measured(o.rs_fit),
                    measured(o.spin_peebles),
                    measured(o.spin_bullock),
                    measured(o.xoff),
                    measured(o.b_to_a),
                    measured(o.c_to_a),
                    measured(o.virial_ratio),
                    j[0] == 0 && j[1] == 0 && j[2] == 0 ? model::BoundObject::kNaN3 : j};
    if (const auto t = types_of.find(p.id); t != types_of.end()) {
      mergertree::BoundProperties& b = p.halo.bound;
      b.mass_type = t->second->mass_inclusive;
      b.aperture_mass_type = t->second->aperture_mass_inclusive;
      for (const double r : t->second->half_mass_radius_inclusive) b.half_mass_radius_type.push_back(measured(r));
      for (const double v : t->second->velocity_dispersion_inclusive) b.velocity_dispersion_type.push_back(measured(v));
    }
  }
  core::log::verbose("{}: bound properties of {} peaks", bound_path, stage.peaks.size());
}

}  // namespace phew::tools
