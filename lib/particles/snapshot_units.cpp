#include <phew/particles/snapshot_units.hpp>

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/core/units.hpp>
#include <phew/mpi/agree.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <span>
#include <string_view>
#include <vector>

namespace phew::particles {
namespace {

// Gadget's constants, those of the assumed Units{}.
using core::units::kKmPerSInCmPerS;
using core::units::kKpcInCm;
using core::units::kMsunInG;
constexpr double kFitFactor = 2;  // the inferred unit's mean density is within this factor of Omega_m rho_crit

struct ParsedUnit {
  double value = 0;  // cgs
  bool per_h = false;
};

// "1e10Msun/h" -> factor 1e10, name "Msun", per_h; the name looked up in `names`.
ParsedUnit parse_unit(std::string_view text, std::initializer_list<std::pair<std::string_view, double>> names,
                      const std::string& whole, const char* what) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  ParsedUnit u;
  if (text.ends_with("/h")) {
    u.per_h = true;
    text.remove_suffix(2);
  }
  double factor = 1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), factor);
  if (ec == std::errc())
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  else
    factor = 1;
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  std::string known;
  for (const auto& [name, cgs] : names) {
    known += (known.empty() ? "" : ", ") + std::string(name);
    if (text == name && factor > 0 && std::isfinite(factor)) {
      u.value = factor * cgs;
      return u;
    }
  }
  throw core::Error::usage(
      "--units '{}': '{}' is not a {} unit (expected a name among {}, after an optional factor: "
      "e.g. Mpc/h,1e10Msun/h,km/s)",
      whole, text, what, known);
}

std::string describe(const Units& u) {
  return fmt::format("{}, {}, {}", u.length_name(), u.mass_name(), u.velocity_name());
}

// The same snapshot, with other units: the readers never use the units, only info() reports them.
class WithUnits final : public SnapshotReader {
 public:
  WithUnits(std::unique_ptr<SnapshotReader> inner, const Units& units)
      : inner_(std::move(inner)), info_(inner_->info()) {
    info_.units = units;
  }
  const SnapshotInfo& info() const override { return info_; }
  void read(int file, int type, std::uint64_t offset, std::uint64_t count, const FieldSelection& fields,
            ParticleSet& out) const override {
    inner_->read(file, type, offset, count, fields, out);
  }
  FileCounts count_files(std::size_t first, std::size_t last) const override {
    return inner_->count_files(first, last);
  }

 private:
  std::unique_ptr<SnapshotReader> inner_;
  SnapshotInfo info_;
};

}  // namespace

Units parse_units(const std::string& text) {
  std::vector<std::string_view> parts;
  std::string_view rest = text;
  for (;;) {
    const auto comma = rest.find(',');
    parts.push_back(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (parts.size() > 3)
    throw core::Error::usage("--units '{}': expected LENGTH[,MASS[,VELOCITY]], e.g. Mpc/h,1e10Msun/h,km/s", text);
  const ParsedUnit length = parse_unit(
      parts[0], {{"pc", 1e-3 * kKpcInCm}, {"kpc", kKpcInCm}, {"Mpc", 1e3 * kKpcInCm}, {"cm", 1}}, text, "length");
  const ParsedUnit mass = parts.size() > 1 ? parse_unit(parts[1], {{"Msun", kMsunInG}, {"g", 1}}, text, "mass")
                                           : ParsedUnit{1e10 * kMsunInG, length.per_h};
  const ParsedUnit velocity =
      parts.size() > 2
          ? parse_unit(parts[2], {{core::units::kKmPerS, kKmPerSInCmPerS}, {"m/s", 1e2}, {"cm/s", 1}}, text, "velocity")
          : ParsedUnit{kKmPerSInCmPerS, false};
  if (velocity.per_h) throw core::Error::usage("--units '{}': velocities have no /h", text);
  if (length.per_h != mass.per_h)
    throw core::Error::usage("--units '{}': lengths and masses are both in units of 1/h (Mpc/h,1e10Msun/h) or neither",
                             text);
  Units u;
  u.length_cm = length.value;
  u.mass_g = mass.value;
  u.velocity_cm_per_s = velocity.value;
  u.h_scaled = length.per_h;
  u.source = UnitsSource::given;
  return u;
}

UnitsInference infer_units(double mean_density, const Cosmology& cosmology, const Units& assumed) {
  UnitsInference out;
  Units kpc = assumed;
  kpc.length_cm = kKpcInCm;
  Units mpc = kpc;
  mpc.length_cm = 1e3 * kpc.length_cm;
  // critical_density(1, u) * Omega_m is the comoving mean matter density at any a.
  out.kpc_ratio = mean_density / (cosmology.omega_m * cosmology.critical_density(1.0, kpc));
  const double mpc_ratio = mean_density / (cosmology.omega_m * cosmology.critical_density(1.0, mpc));
  const bool pick_mpc = std::abs(std::log(mpc_ratio)) < std::abs(std::log(out.kpc_ratio));
  out.ratio = pick_mpc ? mpc_ratio : out.kpc_ratio;
  out.fits = out.ratio >= 1 / kFitFactor && out.ratio <= kFitFactor;
  out.units = out.fits ? (pick_mpc ? mpc : kpc) : assumed;
  out.units.source = out.fits ? UnitsSource::inferred : UnitsSource::assumed;
  out.units.density_ratio = out.fits ? out.ratio : out.kpc_ratio;
  return out;
}

double total_mass(const SnapshotReader& reader, const mpi::Comm& comm) {
  const SnapshotInfo& info = reader.info();
  double table = 0;
  std::vector<int> per_particle;
  for (int t = 0; t < info.num_types(); ++t) {
    const std::uint64_t n = info.total(t);
    if (n == 0) continue;
    const double m = info.mass_table[static_cast<std::size_t>(t)];
    if (m > 0)
      table += m * static_cast<double>(n);
    else
      per_particle.push_back(t);
  }
  if (per_particle.empty()) return table;

  // Chunks of the numbering of the per-particle types, each summed by one rank; a rank's chunks follow
  // the lower ranks', so gathering in rank order is gathering in chunk order.
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
  const FileCounts counts = file_counts(reader, comm);
  const std::uint64_t n = info.total(per_particle);
  const std::uint64_t chunks = (n + kChunk - 1) / kChunk;
  const auto r = static_cast<std::uint64_t>(comm.rank()), size = static_cast<std::uint64_t>(comm.size());
  std::vector<double> sums;
  mpi::agree(comm, [&] {
    FieldSelection masses_only;
    masses_only.positions = false;
    for (std::uint64_t c = chunks * r / size; c < chunks * (r + 1) / size; ++c) {
      const std::uint64_t begin = c * kChunk, count = std::min(n, begin + kChunk) - begin;
      double s = 0;
      for (double m : read_particles(reader, counts, per_particle, begin, count, masses_only).mass) s += m;
      sums.push_back(s);
    }
  });
  double total = table;
  for (double s : comm.all_gatherv(std::span<const double>(sums))) total += s;
  return total;
}

std::unique_ptr<SnapshotReader> settle_units(std::unique_ptr<SnapshotReader> reader, const std::optional<Units>& given,
                                             const mpi::Comm& comm) {
  const SnapshotInfo& info = reader->info();
  const std::string& file = info.files.front();
  if (given) {
    if (info.units.known())
      core::log::info("{}: units {} given (--units), instead of the file's {}", file, describe(*given),
                      describe(info.units));
    else
      core::log::info("{}: units {} given (--units)", file, describe(*given));
    return std::make_unique<WithUnits>(std::move(reader), *given);
  }
  if (info.units.known()) return reader;

  const double volume = info.box_size[0] * info.box_size[1] * info.box_size[2];
  if (!info.cosmology || !info.periodic || !(volume > 0)) {
    core::log::info(
        "{}: no units in the file and no cosmological box to infer them from: {} assumed (Gadget's; give "
        "--units if they are not)",
        file, describe(info.units));
    return reader;
  }
  const UnitsInference guess = infer_units(total_mass(*reader, comm) / volume, *info.cosmology, info.units);
  const bool mpc = guess.units.length_cm != kKpcInCm;
  if (guess.fits)
    core::log::info(
        "{}: no units in the file: {} inferred, where the particles' mean density is {:.3f} Omega_m rho_crit "
        "({:.3g} with {} as the length unit); give --units to say otherwise",
        file, describe(guess.units), guess.ratio, mpc ? guess.kpc_ratio : guess.kpc_ratio * 1e-9, mpc ? "kpc" : "Mpc");
  else
    core::log::warn(
        "{}: no units in the file, and neither kpc nor Mpc as the length unit makes the particles' mean density "
        "Omega_m rho_crit ({:.3g} and {:.3g} times it): {} assumed; give --units",
        file, guess.kpc_ratio, guess.kpc_ratio * 1e-9, describe(guess.units));
  return std::make_unique<WithUnits>(std::move(reader), guess.units);
}

}  // namespace phew::particles
