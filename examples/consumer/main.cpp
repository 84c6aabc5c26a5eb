// Uses phew as a library, one call into every module: MPI as a scoped object (mpi::Environment), a CIC
// deposit, a radius query, a threshold, a fingerprint, a JSON config, a peak fit, voters, a Green's
// function, a particle count, a merger tree stage and a DTFE surface-density map (Qhull).
// Headers are installed under include/phew/<module>/ and included as <phew/grid/deposit.hpp>, with only
// include/ on the include path (the library includes its own headers the same way).
#include <phew/core/quantity.hpp>
#include <phew/dtfe/surface_density.hpp>
#include <phew/gravity/long_range.hpp>
#include <phew/grid/deposit.hpp>
#include <phew/grid/particle_index.hpp>
#include <phew/io/h5.hpp>
#include <phew/manifest/fingerprint.hpp>
#include <phew/mergertree/tree.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/phasespace/voters.hpp>
#include <phew/synth/scene.hpp>
#include <phew/tool/json_config.hpp>
#include <phew/watershed/peak_position.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

int main(int argc, char** argv) {
  const phew::mpi::Environment environment(argc, argv);
  const phew::mpi::Comm comm;
  int failures = 0;
  auto check = [&](bool ok, const char* what) {
    if (!ok) std::fprintf(stderr, "consumer: %s failed\n", what);
    failures += ok ? 0 : 1;
  };

  phew::grid::GridGeometry g;
  g.shape = {4, 4, 4};
  g.extent = {1.0, 1.0, 1.0};
  const std::vector<double> pos{0.125, 0.125, 0.125, 0.5, 0.5, 0.5};
  const std::vector<double> mass{1.0, 8.0};
  const auto r = phew::grid::deposit(g, phew::grid::Assignment::cic,
                                     phew::mpi::BlockDecomposition(g.shape, comm.size()), pos, mass, comm);
  check(r.mass_total == 9.0, "grid: deposit");
  const double threshold = phew::core::DensityThreshold::parse("80mean").resolve(r.mass_total, std::nullopt);
  check(threshold == 720.0, "core: threshold");
  const phew::grid::ParticleIndex index(pos, mass, g.box(), 0.25);
  check(index.within({0.9, 0.9, 0.9}, 0.5) == std::vector<std::size_t>{0}, "grid: within (periodic)");
  check(!phew::io::is_hdf5("no-such-file.h5"), "io: is_hdf5");
  check(phew::manifest::fingerprint_text("phew").rfind("xxh3-128:", 0) == 0, "manifest: fingerprint");
  check(phew::particles::parse_types("0,1", 6) == std::vector<int>{0, 1}, "particles: parse_types");
  std::istringstream json(R"({"grid": 64})");
  check(phew::tool::JsonConfig().from_config(json).size() == 1, "tool: JSON config");
  std::array<double, 27> f{};
  for (int i = 0; i < 27; ++i)
    f[static_cast<std::size_t>(i)] =
        -((i / 9 - 1) * (i / 9 - 1) + (i / 3 % 3 - 1) * (i / 3 % 3 - 1) + (i % 3 - 1) * (i % 3 - 1));
  const auto offset = phew::watershed::quadratic_peak_offset(f);
  check(std::abs(offset[0]) < 1e-12, "watershed: peak fit");
  const std::vector<phew::phasespace::Candidate> candidates{{1, {0, 0, 0}, {0, 0, 0}, -2.0, {0, 0, 0}},
                                                            {2, {1, 0, 0}, {0, 0, 0}, -1.0, {0, 0, 0}}};
  check(phew::phasespace::choose_voters(candidates, {0, 0, 0}, 1).id == std::vector<std::uint64_t>{1},
        "phasespace: voters");
  check(phew::gravity::long_range_green({0, 0, 0}, g, 1.0, 0.1) == 0.0, "gravity: Green's function");
  check(phew::synth::parse_particle_count("4^3", "particles") == 64, "synth: particle count");
  phew::mergertree::TreeState tree;
  phew::mergertree::Stage stage;
  stage.peaks.push_back({1, false, {0, 0, 0}, {0, 0, 0}, 1.0});
  phew::mergertree::add_stage(tree, stage, phew::mergertree::TreeParams{});
  check(tree.rows.size() == 1 && tree.rows[0].lineage == 1, "mergertree: a stage");

  // A unit cube's corners and its centre (mass 1 each): a DTFE map through all of it.
  phew::dtfe::FieldGeometry field;
  field.size = 2;
  field.depth = 4;
  field.resolution = 8;
  std::vector<double> rel, m;
  for (int c = 0; c < 9; ++c) {
    for (int d = 0; d < 3; ++d) rel.push_back(c == 8 ? 0.0 : ((c >> d) & 1) - 0.5);
    m.push_back(1.0);
  }
  const auto points = phew::dtfe::quantise_field(rel, m, phew::dtfe::quantum(field));
  phew::dtfe::MapSettings settings;
  settings.mode = phew::dtfe::MapMode::exact;
  settings.backend = phew::dtfe::Backend::qhull;
  const auto map = phew::dtfe::surface_density(points, field, settings);
  check(std::abs(map.map_mass - 9.0) < 1e-9, "dtfe: exact map holds the mass");

  if (comm.root())
    std::printf("deposited mass %g; 80mean of it is %g; DTFE map mass %g; %s\n", r.mass_total, threshold, map.map_mass,
                failures ? "FAILED" : "every module works");
  return failures == 0 ? 0 : 1;
}
