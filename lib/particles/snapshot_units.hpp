// A snapshot's units when its file does not give them (Gadget-2/3 HDF5 and binary files carry none, nor
// do many converted files): given by the user (--units), or inferred from the particles' mean density,
// which in a cosmological box is Omega_m rho_crit; else Gadget's defaults, assumed. Every choice is
// logged, and `Units::source` says which it was (docs/formats.md, "Units").
#pragma once

#include <phew/mpi/comm.hpp>
#include <phew/particles/snapshot.hpp>

#include <memory>
#include <optional>
#include <string>

namespace phew::particles {

// --units: "LENGTH[,MASS[,VELOCITY]]", e.g. "Mpc/h,1e10Msun/h,km/s" or "Mpc/h". Each unit is an optional
// factor and a name: lengths pc, kpc, Mpc, cm; masses Msun, g; velocities km/s, m/s, cm/s. A mass left out
// is 1e10 Msun and a velocity km/s (Gadget's); lengths and masses are both "/h" or neither. Msun and kpc
// are Gadget's (1.989e33 g, 3.085678e21 cm), so that "kpc/h,1e10Msun/h,km/s" are the assumed units to the
// bit. Source UnitsSource::given. Throws Error(usage).
Units parse_units(const std::string& text);

// Which length unit, kpc or Mpc, makes the particles' comoving mean density `mean_density` (in the file's
// numbers: total mass / box volume) closest to Omega_m rho_crit, the other units being the `assumed`
// ones (Gadget's 1e10 Msun and km/s, /h in cosmological runs). `fits` when that ratio is within a
// factor of 2 of 1. Pure.
struct UnitsInference {
  Units units;           // kpc or Mpc, source inferred; `assumed` when nothing fits
  double ratio = 0;      // mean density / (Omega_m rho_crit) in the nearer length unit
  double kpc_ratio = 0;  // the ratio with kpc (with Mpc it is 1e-9 of it); units.density_ratio when nothing fits
  bool fits = false;
};
UnitsInference infer_units(double mean_density, const Cosmology& cosmology, const Units& assumed);

// The total mass of every particle in the snapshot, all types, in its mass units: the mass table where it
// gives one, else the masses read in fixed chunks shared by the ranks and added in chunk order, so that
// the bits do not depend on the rank count. Collective (errors agreed).
double total_mass(const SnapshotReader& reader, const mpi::Comm& comm);

// The snapshot with its units settled: `given` (replacing the file's, if any), else the file's, else
// inferred from the mean density of all particles when the box is periodic and the cosmology known, else
// Gadget's defaults assumed. Logs the choice: info when given, read or inferred; a warning when neither
// kpc/h nor Mpc/h fits. Collective (reads the masses when the inference needs them).
std::unique_ptr<SnapshotReader> settle_units(std::unique_ptr<SnapshotReader> reader, const std::optional<Units>& given,
                                             const mpi::Comm& comm);

}  // namespace phew::particles
