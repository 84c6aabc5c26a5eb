// Physical constants and unit names, in cgs, for the whole project. The values are Gadget's (its default
// units: kpc/h, 1e10 Msun/h, km/s), so that phew's assumed units and a Gadget file's agree to the bit.
// RAMSES' reader keeps RAMSES' own constants (lib/snapshot/ramses.cpp) so that its conversions are
// what RAMSES users compute.
#pragma once

namespace phew::core::units {

inline constexpr double kKpcInCm = 3.085678e21;
inline constexpr double kMpcInCm = 3.085678e24;
inline constexpr double kMsunInG = 1.989e33;
inline constexpr double kKmPerSInCmPerS = 1e5;
inline constexpr double kGravitationalConstantCgs = 6.6743e-8;
inline constexpr double kProtonMassG = 1.67262192e-24;
inline constexpr double kBoltzmannCgs = 1.380649e-16;  // erg/K

// Names as they appear in units attributes, manifests and exports (unyt parses them).
inline constexpr char kKmPerS[] = "km/s";
inline constexpr char kPeculiarKmPerS[] = "km/s (peculiar)";  // every velocity column phew writes
inline constexpr char kKmPerSSquared[] = "(km/s)^2";          // specific energies, potentials
inline constexpr char kGadgetTimeUnits[] = "kpc/(km/s)";      // Gadget's time unit (synth's truth files)

}  // namespace phew::core::units
