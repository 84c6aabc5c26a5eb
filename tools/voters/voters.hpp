// voters: the most-bound particles of each peak with the boosted potential (docs/tools/voters.md).
#pragma once

#include <phew/phasespace/select_voters.hpp>
#include <phew/tool/tool.hpp>

#include <optional>
#include <string>

namespace phew::tools {

struct VotersOptions {
  std::string peaks;
  std::string snapshot;
  std::string units;  // --units (tool/snapshot_input.hpp)
  std::int64_t n_voters = phasespace::kDefaultVoters;
  std::optional<double> search_radius;  // unset: automatic
  double min_radius = 0;
  std::string potential = "auto";               // auto | snapshot | compute
  std::optional<std::int64_t> pm_mesh;          // unset: automatic
  double theta = gravity::SetupParams{}.theta;  // docs/tools/voters.md, "The opening angle"
  std::optional<double> softening;              // unset: gravity::default_softening
  std::string types = "auto";
  bool allow_other_types = false;
  std::string mean_from;  // GRID: the default search radius uses its mean density
  bool no_boost = false;
  std::string threads = "auto";
};

enum class PotentialChoice { automatic, snapshot, compute, profile };

// The options in checked form: the stage's parameters but those that come from the snapshot.
struct VotersParams {
  phasespace::VoterParams params;
  PotentialChoice potential = PotentialChoice::automatic;
  bool default_softening = true;
  int threads = 0;  // 0: auto
};

void declare_voters_options(CLI::App& app, VotersOptions& opt);
VotersParams check_voters_options(const VotersOptions& opt);  // throws Error(usage); pure
void run_voters(const VotersOptions& opt, tool::Context& ctx);

}  // namespace phew::tools
