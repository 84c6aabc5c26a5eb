#include "stage_halos.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "grid/particle_index.hpp"
#include "grid/spherical_overdensity.hpp"
#include "io/clumps_file.hpp"
#include "manifest/manifest.hpp"
#include "mpi/comm.hpp"
#include "particles/snapshot.hpp"
#include "tool/snapshot_input.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numbers>

namespace phew {
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
void set_hosts(Stage& stage, const std::string& peaks_path, const std::vector<io::PeakRow>& rows) {
  const auto clumps = recorded_inputs(peaks_path, "clumps");
  std::error_code ec;
  if (clumps.empty() || !std::filesystem::is_regular_file(clumps.front().first, ec)) {
    log::warn("{}: the clumps.h5 it was made from is not at hand: its peaks get no host (pid = upid = -1)", peaks_path);
    return;
  }
  const auto in = manifest::check_phew_input(clumps.front().first, {"clumps"});
  if (in.fingerprint != clumps.front().second)
    throw Error::input("{}: {} changed since the peaks were made from it", peaks_path, clumps.front().first);
  const io::File f = io::File::open_read(clumps.front().first);
  stage.density_threshold = io::read_clumps_header(f).density_threshold;
  std::map<std::int64_t, std::int64_t> halo_of;
  for (const io::Clump& c : io::read_clumps(f)) halo_of[c.id] = c.halo;
  // make_stage kept only what linking needs; the parent clumps come from peaks.h5's rows.
  std::map<std::int64_t, std::int64_t> parent;
  for (const io::PeakRow& p : rows) parent[p.id] = p.parent_clump;
  for (StagePeak& p : stage.peaks) {
    const auto h = halo_of.find(parent[p.id]);
    p.halo.host = h == halo_of.end() || h->second == p.id ? 0 : h->second;
  }
}

}  // namespace

SimulationUnits add_stage_halos(Stage& stage, const std::string& peaks_path, const io::PeaksHeader& header,
                                const std::vector<io::PeakRow>& rows, bool so_masses, const std::string& units_text,
                                manifest::Builder& man) {
  set_hosts(stage, peaks_path, rows);
  SimulationUnits units;
  std::vector<std::string> files;
  for (const auto& [path, fingerprint] : recorded_inputs(peaks_path, "snapshot")) files.push_back(path);
  std::error_code ec;
  if (files.empty() || !std::filesystem::exists(files.front(), ec)) {
    if (so_masses) throw Error::input("{}: the snapshot it was made from is not at hand (needed by --particles)", peaks_path);
    log::warn("{}: the snapshot it was made from is not at hand: the tree does not know its units", peaks_path);
    return units;
  }
  const auto reader = open_snapshot_with_units({files.front()}, units_text, mpi::Comm(MPI_COMM_SELF), &man);
  const SnapshotInfo& info = reader->info();
  check_snapshot_matches_grid(info, header.grid, files.front(), peaks_path);
  units = {true, info.units.length_cm, info.units.mass_g, info.units.velocity_cm_per_s, info.units.h_scaled, info.comoving,
           info.cosmology ? info.cosmology->omega_m : 0.0, info.cosmology ? info.cosmology->omega_lambda : 0.0,
           info.cosmology ? info.cosmology->hubble_param : 0.0};
  if (!so_masses) return units;

  if (!info.cosmology || !(info.cosmology->hubble_param > 0))
    throw Error::input("{}: the snapshot has no cosmology, so no critical density for --particles", files.front());
  // The particles the peaks were made of (deblend's types), on this rank alone.
  std::vector<int> types;
  const manifest::Json m = manifest::read_manifest(peaks_path);
  if (m.contains("parameters") && m["parameters"].contains("types_used"))
    for (const auto& t : m["parameters"]["types_used"]) types.push_back(t.get<int>());
  if (types.empty()) types = selected_types(info, "auto");
  const ParticleSet ps = read_share(*reader, types, FieldSelection{}, mpi::Comm(MPI_COMM_SELF));
  const Box box = header.grid.geometry.box();
  const double a = info.comoving ? info.time : 1.0;
  const double rho_c = info.cosmology->critical_density(a, info.units);
  const double delta = bryan_norman_delta(info.cosmology->omega_m, info.cosmology->omega_lambda, a);
  double max_radius = 0;
  for (std::size_t d = 0; d < 3; ++d) max_radius = std::max(max_radius, box.extent[d]);
  if (box.periodic) max_radius = 0.5 * *std::min_element(box.extent.begin(), box.extent.end());
  const double spacing = std::cbrt(box.extent[0] * box.extent[1] * box.extent[2] / std::max(1.0, static_cast<double>(ps.size())));
  const ParticleIndex index(ps.position, ps.mass, box, 2 * spacing);
  std::vector<std::array<double, 3>> centres;
  std::vector<double> start;
  for (const StagePeak& p : stage.peaks) {
    centres.push_back(p.position);
    start.push_back(2 * std::cbrt(3 * std::max(p.mass, 0.0) / (4 * std::numbers::pi * delta * rho_c)));
  }
  const auto so = spherical_overdensity(index, centres, start, max_radius, rho_c, delta);
  for (std::size_t i = 0; i < stage.peaks.size(); ++i) {
    stage.peaks[i].halo.mvir = so[i].vir.mass;
    stage.peaks[i].halo.rvir = so[i].vir.radius;
    stage.peaks[i].halo.m200c = so[i].c200.mass;
  }
  log::verbose("{}: spherical overdensity of {} peaks (Delta_vir = {:.1f}, {} particles)", peaks_path,
               stage.peaks.size(), delta, ps.size());
  return units;
}

}  // namespace phew
