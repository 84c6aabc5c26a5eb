// Particles in memory and what a snapshot says about them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace phew::particles {

// Which per-particle fields to read. Masses are always read, positions unless `positions` is false
// (a total mass needs the masses only).
struct FieldSelection {
  bool ids = false;
  bool velocities = false;
  bool potential = false;
  bool acceleration = false;
  bool positions = true;
  bool types = false;  // each particle's type (ParticleSet::type)
  // Gas (type 0) only: its specific internal energy, star formation rate and electron abundance, those
  // the snapshot has (SnapshotInfo::has_*); the others stay empty.
  bool gas = false;
};

// Structure of arrays; vectors of 3 are interleaved (x0 y0 z0 x1 ...). Unrequested fields stay empty.
struct ParticleSet {
  std::vector<double> position;  // [n][3], snapshot length units, wrapped into a periodic box
  std::vector<double> mass;      // [n]
  std::vector<std::uint64_t> id;
  // [n][3], peculiar velocities v_pec = a dx/dt (physical) in the velocity units, whatever the file stores:
  // the readers convert Gadget's u = v_pec / sqrt(a) (docs/formats.md, "Velocities").
  std::vector<double> velocity;
  std::vector<double> potential;     // [n]
  std::vector<double> acceleration;  // [n][3]
  // [n]: the particle's type (Gadget's 0-5, the phew type of a RAMSES family), filled by read_particles
  // from the type each piece was read as (the format readers never fill it).
  std::vector<std::uint8_t> type;
  // [n] of gas particles (FieldSelection::gas): specific internal energy u (velocity units squared), star
  // formation rate (the file's units: only > 0 matters here), electrons per hydrogen atom.
  std::vector<double> internal_energy, star_formation_rate, electron_abundance;

  std::size_t size() const { return mass.size(); }
  void append(const ParticleSet& other);
};

// How a snapshot's units were found (particles/snapshot_units.hpp): read from the file, given by the user
// (--units), inferred from the particles' mean density, or assumed (Gadget's defaults, nothing to tell).
enum class UnitsSource { file, given, inferred, assumed };

// Code units of a snapshot, in cgs. `h_scaled`: lengths and masses are in units of 1/h (Gadget's kpc/h).
struct Units {
  double length_cm = 3.085678e21;  // kpc
  double mass_g = 1.989e43;        // 1e10 Msun
  double velocity_cm_per_s = 1e5;  // km/s
  bool h_scaled = true;
  UnitsSource source = UnitsSource::assumed;
  // Inferred units, or assumed ones when no length unit fitted: the particles' mean density over
  // Omega_m rho_crit in these units (1 for a whole cosmological box); 0 when not measured.
  double density_ratio = 0;

  bool known() const { return source != UnitsSource::assumed; }
  std::string source_name() const;             // "file", "given", "inferred", "assumed"
  std::string length_name() const;             // "kpc/h"
  std::string mass_name() const;               // "1e10 Msun/h"
  std::string velocity_name() const;           // "km/s"
  std::string peculiar_velocity_name() const;  // "km/s (peculiar)": the units attribute of every velocity column
  std::string density_name() const;            // "(1e10 Msun/h)/(kpc/h)^3"
  double gravitational_constant() const;       // G in these units (h cancels)
};

struct Cosmology {
  double omega_m = 0;
  double omega_lambda = 0;
  double hubble_param = 0;  // h
  // Critical density 3 H(a)^2 / (8 pi G) at scale factor a, as a comoving density in `units`
  // (i.e. rho_crit(a) * a^3), so that thresholds compare with comoving grid densities.
  double critical_density(double a, const Units& units) const;
};

// H(a) from that comoving critical density at a: H^2 = 8 pi G rho_crit(a) / 3, in velocity units per
// physical length unit (G in the snapshot's units). The one H(a) of unbind's frame, from the critical
// density grid.h5 records.
double hubble_rate(double comoving_critical_density, double a, double G);

// What a snapshot holds, read from its header(s) without touching particle data.
struct SnapshotInfo {
  // "gadget-hdf5", "swift-hdf5", "gadget-binary-1", "gadget-binary-2", "phew-particles", "ramses"
  std::string format;
  std::vector<std::string> files;  // every file the snapshot is read from, in order
  // [file][type] particles in that file. Empty when only the files themselves say (RAMSES keeps the
  // families in a per-particle record): then `type_totals` holds the totals, and file_counts() counts.
  std::vector<std::vector<std::uint64_t>> file_counts;
  std::vector<std::uint64_t> type_totals;  // [type], used only when file_counts is empty
  // Particles are numbered type-major (type, then file, then place in the file), or file-major (file,
  // then type, then place) when the files mix types, so that each rank reads only its share of the files.
  bool file_major = false;
  std::vector<double> mass_table;           // [type]; 0 = per-particle masses
  std::array<double, 3> box_size{0, 0, 0};  // 0 = no box
  bool periodic = false;
  double time = 0;  // scale factor a for cosmological runs
  double redshift = 0;
  bool comoving = false;
  std::optional<Cosmology> cosmology;
  Units units;
  bool has_ids = true, has_velocities = true, has_potential = false, has_acceleration = false;
  // The gas's fields (type 0; Gadget's and AREPO's InternalEnergy, StarFormationRate, ElectronAbundance,
  // SWIFT's InternalEnergies, StarFormationRates): read with FieldSelection::gas.
  bool has_internal_energy = false, has_star_formation_rate = false, has_electron_abundance = false;

  int num_types() const { return static_cast<int>(mass_table.size()); }
  // The name of a type in this format (the per-type columns' names): Gadget's gas, dark_matter,
  // dark_matter_2, dark_matter_3, stars, black_holes; SWIFT's; RAMSES' families (dark_matter, stars,
  // cloud, debris, other, tracer_...); "particles" for phew's particle file; "type_N" otherwise.
  std::string type_name(int type) const;
  // Whether the format has such a type (RAMSES' phew types 6-10 are no family: they never hold particles).
  bool format_has_type(int type) const;
  std::uint64_t total(int type) const;  // over all files
  std::uint64_t total(const std::vector<int>& types) const;
};

}  // namespace phew::particles
