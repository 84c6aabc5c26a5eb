// What every tool that reads a snapshot shares: the --units and --types options, declared here once, and the opening
// of the snapshot with its units settled (particles/snapshot_units.hpp) and recorded in the manifest.
#pragma once

#include <phew/manifest/manifest.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/snapshot.hpp>

#include <memory>
#include <string>
#include <vector>

// CLI11 2.1 compiles its validators and helpers into every file that includes it (about 5 s a file at
// -O3): the headers name CLI::App only, and the files that declare options include <CLI/CLI.hpp>.
namespace CLI {
class App;
}  // namespace CLI

namespace phew::tool {

// --units LENGTH[,MASS[,VELOCITY]] (parse_units; docs/cli.md, "Snapshot units").
void declare_units_option(CLI::App& app, std::string& units);

// What --types auto means to a tool: the first stage has no grid before it; the stages after the grid take
// its types from the provenance chain (particles::chain_types); dtfe-surface takes those of a clumps.h5
// given as --centers, else dark matter. docs/cli.md, "Particle types", says the same.
enum class AutoTypes { dark_matter, grid, centres_grid };
// -t,--types 1 | 0,1 | all | auto, its help saying what auto means here.
void declare_types_option(CLI::App& app, std::string& types, AutoTypes auto_means);

// open_snapshot(paths) with its units settled: `units` (the --units text; "" for none), else the file's,
// else inferred from the mean density, else assumed, and logged. Records them in `manifest` (when given)
// as the parameter `units_used` (units_record). Collective over `comm` (errors agreed).
std::unique_ptr<particles::SnapshotReader> open_snapshot_with_units(const std::vector<std::string>& paths,
                                                                    const std::string& units, const mpi::Comm& comm,
                                                                    manifest::Builder* manifest);

// The units of G in the snapshot's units, "(km/s)^2 Mpc/h/(1e10 Msun/h)", as manifests record it.
std::string gravitational_constant_units(const particles::Units& units);

// {"length": "Mpc/h", "mass": "1e10 Msun/h", "velocity": "km/s (peculiar)", "length_in_cm": ..., "mass_in_g":
// ..., "velocity_in_cm_per_s": ..., "h_scaled": true, "source": "inferred", "density_ratio": 1.02}; the
// ratio (mean density over Omega_m rho_crit) only when it was measured.
manifest::Json units_record(const particles::Units& units);

}  // namespace phew::tool
