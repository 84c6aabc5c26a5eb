#include <phew/tool/snapshot_input.hpp>

#include <phew/mpi/agree.hpp>
#include <phew/particles/snapshot_units.hpp>
#include <phew/snapshot/open.hpp>

#include <CLI/CLI.hpp>

#include <optional>

namespace phew::tool {

void declare_units_option(CLI::App& app, std::string& units) {
  app.add_option("--units", units,
                 "The snapshot's units LENGTH[,MASS[,VELOCITY]], e.g. Mpc/h,1e10Msun/h,km/s (default: the file's; "
                 "without them, kpc/h or Mpc/h inferred from the mean density of a cosmological box)");
}

void declare_types_option(CLI::App& app, std::string& types, AutoTypes auto_means) {
  const char* means = auto_means == AutoTypes::dark_matter ? "dark matter (type 1; RAMSES' family 1)"
                      : auto_means == AutoTypes::grid      ? "the types the grid was made of (its provenance chain)"
                                                           : "the types the grid of a clumps.h5 --centers was made "
                                                             "of, else dark matter";
  app.add_option("-t,--types", types,
                 fmt::format("Particle types: 1, 0,1 or all; auto: {} (docs/cli.md, \"Particle types\")", means))
      ->capture_default_str();
}

std::unique_ptr<particles::SnapshotReader> open_snapshot_with_units(const std::vector<std::string>& paths,
                                                                    const std::string& units, const mpi::Comm& comm,
                                                                    manifest::Builder* manifest) {
  std::unique_ptr<particles::SnapshotReader> reader;
  std::optional<particles::Units> given;
  mpi::agree(comm, [&] {
    if (!units.empty()) given = particles::parse_units(units);
    reader = snapshot::open_snapshot(paths);
  });
  reader = settle_units(std::move(reader), given, comm);
  if (manifest) manifest->parameter("units_used", units_record(reader->info().units));
  return reader;
}

std::string gravitational_constant_units(const particles::Units& u) {
  return "(" + u.velocity_name() + ")^2 " + u.length_name() + "/(" + u.mass_name() + ")";
}

manifest::Json units_record(const particles::Units& u) {
  manifest::Json j = {
      {"length", u.length_name()},   {"mass", u.mass_name()},    {"velocity", u.peculiar_velocity_name()},
      {"length_in_cm", u.length_cm}, {"mass_in_g", u.mass_g},    {"velocity_in_cm_per_s", u.velocity_cm_per_s},
      {"h_scaled", u.h_scaled},      {"source", u.source_name()}};
  if (u.density_ratio > 0) j["density_ratio"] = u.density_ratio;
  return j;
}

}  // namespace phew::tool
