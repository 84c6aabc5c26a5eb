// Gadget-2/3/4, AREPO and SWIFT HDF5 snapshots. They share the Gadget layout (Header attributes,
// PartTypeN groups) and differ in where cosmology and units live and in a few names.
#include <phew/core/error.hpp>
#include <phew/io/h5.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/snapshot/snapshot_checks.hpp>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <optional>

namespace phew::snapshot {
using particles::Cosmology;
using particles::FieldSelection;
using particles::ParticleSet;
using particles::read_particles;
using particles::SnapshotInfo;
using particles::SnapshotReader;
using particles::Units;
using particles::UnitsSource;

namespace {

constexpr const char* kSwiftLength = "Unit length in cgs (U_L)";
constexpr const char* kSwiftMass = "Unit mass in cgs (U_M)";
constexpr const char* kSwiftTime = "Unit time in cgs (U_t)";

// The first attribute of `names` found on `object`, as a double.
std::optional<double> find_double(const io::File& f, const std::string& object,
                                  std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (f.has_attribute(object, n)) return f.read_attribute<double>(object, n).at(0);
  return std::nullopt;
}

std::vector<std::uint64_t> read_counts(const io::File& f, const char* name, std::size_t ntypes) {
  std::vector<std::uint64_t> c = f.read_attribute<std::uint64_t>("/Header", name);
  if (c.size() != ntypes)
    throw core::Error::input("{}: Header/{} has {} entries but MassTable has {}", f.path(), name, c.size(), ntypes);
  return c;
}

// The header fields every piece repeats (snapshot_checks.hpp), as this piece has them.
PieceHeader piece_header(const io::File& f, std::size_t ntypes) {
  PieceHeader h;
  h.path = f.path();
  if (f.has_attribute("/Header", "Time")) h.time = f.read_attribute_scalar<double>("/Header", "Time");
  h.box_size = f.read_attribute<double>("/Header", "BoxSize");
  if (auto n = find_double(f, "/Header", {"NumFilesPerSnapshot", "NumFiles"}))
    h.num_files = static_cast<std::int64_t>(*n);
  h.mass_table = f.read_attribute<double>("/Header", "MassTable");
  h.total = read_counts(f, "NumPart_Total", ntypes);
  if (f.has_attribute("/Header", "NumPart_Total_HighWord")) {
    const auto high = read_counts(f, "NumPart_Total_HighWord", ntypes);
    for (std::size_t t = 0; t < ntypes; ++t) h.total[t] += high[t] << 32;
  }
  for (const char* object : {"/Header", "/Parameters", "/Cosmology"}) {
    if (!h.omega0) h.omega0 = find_double(f, object, {"Omega0", "Omega_m"});
    if (!h.omega_lambda) h.omega_lambda = find_double(f, object, {"OmegaLambda", "Omega_lambda"});
    if (!h.hubble_param) h.hubble_param = find_double(f, object, {"HubbleParam", "h"});
  }
  return h;
}

// A unit declared twice must be declared the same: /Header and /Parameters (Gadget-4 copies), and the
// to_cgs attribute Gadget-4 gives each dataset, which is L^length_scaling M^mass_scaling V^velocity_scaling
// of the run's units (h and a are separate attributes). A file edited in one place and not the other
// would have phew silently pick one of two different answers.
void check_unit_declarations(const io::File& f, const Units& units) {
  const auto close = [](double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b)); };
  const std::pair<const char*, double> declared[] = {{"UnitLength_in_cm", units.length_cm},
                                                     {"UnitMass_in_g", units.mass_g},
                                                     {"UnitVelocity_in_cm_per_s", units.velocity_cm_per_s}};
  for (const auto& [name, value] : declared) {
    const auto header = find_double(f, "/Header", {name}), parameters = find_double(f, "/Parameters", {name});
    if (header && parameters && !close(*header, *parameters))
      throw core::Error::input("{}: Header/{} is {} but Parameters/{} is {}: the units contradict each other", f.path(),
                               name, *header, name, *parameters);
  }
  for (std::size_t t = 0; t < 6; ++t)
    for (const char* field : {"Coordinates", "Velocities", "Masses"}) {
      const std::string d = "/PartType" + std::to_string(t) + "/" + field;
      if (!f.has(d) || !f.has_attribute(d, "to_cgs") || !f.has_attribute(d, "length_scaling") ||
          !f.has_attribute(d, "mass_scaling") || !f.has_attribute(d, "velocity_scaling"))
        continue;
      const double to_cgs = f.read_attribute<double>(d, "to_cgs").at(0);
      double want = 1;
      bool known = true;  // a unit the file does not declare (phew's default) is not contradicted
      for (const auto& [exponent, unit] :
           {std::pair{"length_scaling", &declared[0]}, std::pair{"mass_scaling", &declared[1]},
            std::pair{"velocity_scaling", &declared[2]}}) {
        const double e = f.read_attribute<double>(d, exponent).at(0);
        if (e == 0) continue;
        known = known && (find_double(f, "/Header", {unit->first}) || find_double(f, "/Parameters", {unit->first}));
        want *= std::pow(unit->second, e);
      }
      if (known && to_cgs != 0 && !close(to_cgs, want))  // Gadget-4 writes 0 where it has no conversion
        throw core::Error::input(
            "{}: {}'s to_cgs is {}, but the units the file declares (UnitLength_in_cm {}, "
            "UnitMass_in_g {}, UnitVelocity_in_cm_per_s {}) give {}: the units contradict each other",
            f.path(), d, to_cgs, units.length_cm, units.mass_g, units.velocity_cm_per_s, want);
    }
}

// Coordinates, velocities, masses, potentials and accelerations are floating-point numbers in every
// format phew reads; integers there are a broken conversion (docs/cli.md: wrong types are bad input).
void check_float(const io::File& f, const std::string& dataset, const io::TypeInfo& t) {
  if (t.cls != io::TypeInfo::Class::floating)
    throw core::Error::input("{}: {} is {}, expected floating-point numbers", f.path(), dataset, t.describe());
}

class Hdf5Snapshot final : public SnapshotReader {
 public:
  explicit Hdf5Snapshot(const std::vector<std::string>& files) {
    io::File first = io::File::open_read(files.front());
    if (!first.has("/Header"))
      throw core::Error::input("{}: no /Header group: not a Gadget-style HDF5 snapshot", first.path());
    read_header(first);
    expand_files(first, files);
    count_particles();
    detect_fields();
  }

  const SnapshotInfo& info() const override { return info_; }

  void read(int file, int type, std::uint64_t offset, std::uint64_t count, const FieldSelection& fields,
            ParticleSet& out) const override {
    const io::File f = io::File::open_read(info_.files[static_cast<std::size_t>(file)]);
    const std::string g = "/PartType" + std::to_string(type) + "/";
    const std::uint64_t n = info_.file_counts[static_cast<std::size_t>(file)][static_cast<std::size_t>(type)];
    // Every dataset must hold one row per particle of the header, with 3 columns for vectors.
    auto check_shape = [&](const std::string& name) {
      const io::TypeInfo t = f.dataset_info(g + name);
      const bool vector = name == "Coordinates" || name == "Velocities" || name == "Acceleration";
      const bool ok =
          !t.shape.empty() && t.shape[0] == n && t.shape.size() == (vector ? 2u : 1u) && (!vector || t.shape[1] == 3);
      if (!ok)
        throw core::Error::input("{}: {}{} is {}, expected [{}]{}", f.path(), g, name, t.describe(), n,
                                 vector ? "[3]" : "");
      if (name != "ParticleIDs") check_float(f, g + name, t);
      f.check_virtual_sources(g + name);  // SWIFT's virtual files: a missing piece would read as zeros
    };
    // Straight into the destination: snapshots are large and a temporary copy doubles the memory.
    auto append = [&](std::vector<double>& dst, const std::string& name) {
      check_shape(name);
      const std::size_t old = dst.size();
      const std::size_t cols = name == "Coordinates" || name == "Velocities" || name == "Acceleration" ? 3 : 1;
      dst.resize(old + cols * count);
      f.read_rows_into<double>(g + name, offset, count, std::span<double>(dst).subspan(old));
    };
    if (fields.positions) append(out.position, "Coordinates");
    const double table_mass = info_.mass_table[static_cast<std::size_t>(type)];
    if (table_mass > 0 || !f.has(g + "Masses"))
      out.mass.insert(out.mass.end(), count, table_mass);  // 0 when missing: read_particles reports it
    else
      append(out.mass, "Masses");
    if (fields.ids) {
      check_shape("ParticleIDs");
      const std::size_t old = out.id.size();
      out.id.resize(old + count);
      f.read_rows_into<std::uint64_t>(g + "ParticleIDs", offset, count, std::span<std::uint64_t>(out.id).subspan(old));
    }
    if (fields.velocities) {
      const std::size_t old = out.velocity.size();
      append(out.velocity, "Velocities");
      const double to_peculiar = peculiar_factor(f, g + "Velocities");
      if (to_peculiar != 1.0)
        for (std::size_t i = old; i < out.velocity.size(); ++i) out.velocity[i] *= to_peculiar;
    }
    if (fields.potential) append(out.potential, f.has(g + "Potential") ? "Potential" : "Potentials");
    if (fields.acceleration) append(out.acceleration, "Acceleration");
    if (fields.gas && type == 0) {
      const auto gas_field = [&](std::vector<double>& dst, bool has, const char* gadget, const char* swift) {
        if (has) append(dst, f.has(g + gadget) ? gadget : swift);
      };
      gas_field(out.internal_energy, info_.has_internal_energy, "InternalEnergy", "InternalEnergies");
      gas_field(out.star_formation_rate, info_.has_star_formation_rate, "StarFormationRate", "StarFormationRates");
      gas_field(out.electron_abundance, info_.has_electron_abundance, "ElectronAbundance", "ElectronAbundance");
    }
  }

 private:
  // Stored velocities times this are peculiar velocities (phew's convention). Gadget-4 and AREPO say so
  // in the dataset's `a_scaling` (v_pec = stored a^a_scaling: 0.5 for Gadget's u = v_pec / sqrt(a)), SWIFT
  // in its "a-scale exponent" (0: peculiar already); Gadget-2/3 files do not say and store u. Only
  // comoving runs scale: otherwise Time is not a scale factor.
  double peculiar_factor(const io::File& f, const std::string& dataset) const {
    if (!info_.comoving || !(info_.time > 0)) return 1.0;
    double exponent = info_.format == "swift-hdf5" ? 0.0 : 0.5;
    for (const char* name : {"a_scaling", "a-scale exponent"})
      if (f.has_attribute(dataset, name)) {
        exponent = f.read_attribute<double>(dataset, name).at(0);
        break;
      }
    // sqrt, not pow: the same bits as the conversion written out by hand.
    return exponent == 0.5 ? std::sqrt(info_.time) : std::pow(info_.time, exponent);
  }

  void read_header(const io::File& f) {
    const bool swift = f.has_attribute("/Units", kSwiftLength);
    info_.format = swift ? "swift-hdf5" : "gadget-hdf5";
    info_.mass_table = f.read_attribute<double>("/Header", "MassTable");
    const auto box = f.read_attribute<double>("/Header", "BoxSize");
    if (box.size() == 1)
      info_.box_size = {box[0], box[0], box[0]};
    else if (box.size() == 3)
      info_.box_size = {box[0], box[1], box[2]};
    else
      throw core::Error::input("{}: Header/BoxSize has {} values", f.path(), box.size());
    info_.periodic = info_.box_size[0] > 0 && info_.box_size[1] > 0 && info_.box_size[2] > 0;
    // Gadget-4 lists compile-time options in /Config; a run without PERIODIC has open boundaries.
    if (f.has_attribute("/Config", "NTYPES") && !f.has_attribute("/Config", "PERIODIC")) info_.periodic = false;
    info_.time = f.read_attribute_scalar<double>("/Header", "Time");
    info_.redshift = find_double(f, "/Header", {"Redshift"}).value_or(0.0);
    if (auto n = find_double(f, "/Header", {"NumFilesPerSnapshot", "NumFiles"}))
      check_num_files(f.path(), f.has_attribute("/Header", "NumFilesPerSnapshot") ? "NumFilesPerSnapshot" : "NumFiles",
                      *n);

    if (swift) {
      info_.units.length_cm = f.read_attribute<double>("/Units", kSwiftLength).at(0);
      info_.units.mass_g = f.read_attribute<double>("/Units", kSwiftMass).at(0);
      info_.units.velocity_cm_per_s = info_.units.length_cm / f.read_attribute<double>("/Units", kSwiftTime).at(0);
      info_.units.h_scaled = false;
      info_.units.source = UnitsSource::file;
      const auto om = find_double(f, "/Cosmology", {"Omega_m"});
      const auto ol = find_double(f, "/Cosmology", {"Omega_lambda"});
      const auto h = find_double(f, "/Cosmology", {"h"});
      const bool cosmological = find_double(f, "/Cosmology", {"Cosmological run"}).value_or(om ? 1.0 : 0.0) != 0;
      if (cosmological) check_header_cosmology(f.path(), om, ol, h);
      if (cosmological && om && h) info_.cosmology = Cosmology{*om, ol.value_or(0.0), *h};
      info_.comoving = cosmological;
      if (cosmological)
        if (auto a = find_double(f, "/Cosmology", {"Scale-factor"})) info_.time = *a;
      return;
    }
    // Gadget-2/3 and AREPO keep units and cosmology in the Header, Gadget-4 in /Parameters.
    for (const char* object : {"/Header", "/Parameters"}) {
      if (auto l = find_double(f, object, {"UnitLength_in_cm"})) {
        info_.units.length_cm = *l;
        info_.units.mass_g = find_double(f, object, {"UnitMass_in_g"}).value_or(info_.units.mass_g);
        info_.units.velocity_cm_per_s = find_double(f, object, {"UnitVelocity_in_cm_per_s"}).value_or(1e5);
        info_.units.source = UnitsSource::file;
        check_unit_declarations(f, info_.units);
        break;
      }
    }
    std::optional<double> om, ol, h;
    for (const char* object : {"/Header", "/Parameters"}) {
      if (!om) om = find_double(f, object, {"Omega0"});
      if (!ol) ol = find_double(f, object, {"OmegaLambda"});
      if (!h) h = find_double(f, object, {"HubbleParam"});
    }
    const auto comoving_flag = find_double(f, "/Parameters", {"ComovingIntegrationOn"});
    if (!comoving_flag || *comoving_flag != 0) check_header_cosmology(f.path(), om, ol, h);
    if (comoving_flag && *comoving_flag != 0 && !(om && *om > 0 && h && *h > 0))
      throw core::Error::input(
          "{}: Parameters/ComovingIntegrationOn is set, but Omega0 is {} and HubbleParam {}: the "
          "cosmology is incomplete",
          f.path(), om ? fmt::format("{:g}", *om) : "absent", h ? fmt::format("{:g}", *h) : "absent");
    info_.comoving = comoving_flag ? *comoving_flag != 0 : (om && *om > 0 && h && *h > 0);
    if (info_.comoving && om && *om > 0 && h && *h > 0) info_.cosmology = Cosmology{*om, ol.value_or(0.0), *h};
    // Gadget's "/h" units only mean something in cosmological runs.
    info_.units.h_scaled = info_.comoving;
  }

  // A multi-file snapshot names its pieces NAME.0.hdf5, NAME.1.hdf5, ...; find all from the first.
  void expand_files(const io::File& f, const std::vector<std::string>& given) {
    const int nfiles = static_cast<int>(find_double(f, "/Header", {"NumFilesPerSnapshot", "NumFiles"}).value_or(1));
    if (nfiles <= 1 || given.size() > 1) {
      info_.files = given;
      check_distinct_files(given);
      if (given.size() > 1 && static_cast<int>(given.size()) != nfiles)
        throw core::Error::input("{}: header says {} files, {} given", f.path(), nfiles, given.size());
      return;
    }
    // Any piece finds the others: NAME.<k>.hdf5 gives NAME.
    const std::string first = given.front();
    static const std::regex piece_name(R"(^(.*)\.([0-9]+)\.hdf5$)");
    std::smatch m;
    if (!std::regex_match(first, m, piece_name))
      throw core::Error::input("{}: header says the snapshot has {} files, but the name is not NAME.<piece>.hdf5",
                               first, nfiles);
    const std::string stem = m[1].str();
    for (int i = 0; i < nfiles; ++i) {
      const std::string piece = stem + "." + std::to_string(i) + ".hdf5";
      std::error_code ec;
      if (!std::filesystem::exists(piece, ec))
        throw core::Error::io("{}: piece {} of {} of the snapshot is missing", piece, i, nfiles);
      info_.files.push_back(piece);
    }
    check_distinct_files(info_.files);
  }

  // Every piece must be of this snapshot (snapshot_checks.hpp) and hold particles no other piece holds;
  // together they hold NumPart_Total.
  void count_particles() {
    const std::size_t ntypes = info_.mass_table.size();
    std::optional<PieceHeader> first;
    PieceSignatures signatures;
    for (const auto& path : info_.files) {
      const io::File f = io::File::open_read(path);
      info_.file_counts.push_back(read_counts(f, "NumPart_ThisFile", ntypes));
      const PieceHeader header = piece_header(f, ntypes);
      if (!first)
        first = header;
      else
        check_same_snapshot(*first, header);
      for (std::size_t t = 0; t < ntypes; ++t) {
        const std::string ids = "/PartType" + std::to_string(t) + "/ParticleIDs";
        const std::string xyz = "/PartType" + std::to_string(t) + "/Coordinates";
        if (info_.files.size() > 1 && info_.file_counts.back()[t] > 0 && f.has(ids) && f.has(xyz) &&
            f.dataset_info(ids).cls == io::TypeInfo::Class::integer && f.dataset_info(ids).elements() > 0 &&
            f.dataset_info(xyz).cls == io::TypeInfo::Class::floating && f.dataset_info(xyz).elements() >= 3) {
          const auto x = f.read_rows<double>(xyz, 0, 1);
          signatures.add(path, static_cast<int>(t), f.read_rows<std::uint64_t>(ids, 0, 1).at(0),
                         {x.at(0), x.at(1), x.at(2)});
        }
      }
    }
    const std::vector<std::uint64_t>& header_total = first->total;
    for (std::size_t t = 0; t < ntypes; ++t)
      if (info_.total(static_cast<int>(t)) != header_total[t])
        throw core::Error::input(
            "{}: type {} has {} particles in its files but NumPart_Total says {} (missing pieces?)",
            info_.files.front(), t, info_.total(static_cast<int>(t)), header_total[t]);
  }

  // Optional datasets, judged on the first file holding particles of each type.
  void detect_fields() {
    info_.has_potential = info_.has_acceleration = true;
    info_.has_ids = info_.has_velocities = true;
    for (std::size_t file = 0; file < info_.files.size(); ++file) {
      const io::File f = io::File::open_read(info_.files[file]);
      for (std::size_t t = 0; t < info_.mass_table.size(); ++t) {
        if (info_.file_counts[file][t] == 0) continue;
        const std::string g = "/PartType" + std::to_string(t) + "/";
        info_.has_potential &= f.has(g + "Potential") || f.has(g + "Potentials");
        info_.has_acceleration &= f.has(g + "Acceleration");
        info_.has_ids &= f.has(g + "ParticleIDs");
        info_.has_velocities &= f.has(g + "Velocities");
        if (t == 0) {
          info_.has_internal_energy = f.has(g + "InternalEnergy") || f.has(g + "InternalEnergies");
          info_.has_star_formation_rate = f.has(g + "StarFormationRate") || f.has(g + "StarFormationRates");
          info_.has_electron_abundance = f.has(g + "ElectronAbundance");
        }
      }
      break;
    }
  }

  SnapshotInfo info_;
};

}  // namespace

std::unique_ptr<SnapshotReader> open_hdf5_snapshot(const std::vector<std::string>& files) {
  return std::make_unique<Hdf5Snapshot>(files);
}

}  // namespace phew::snapshot
