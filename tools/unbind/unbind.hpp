// unbind: the bound particles of every clump and halo of phew-merge, and their halo properties
// (docs/tools/unbind.md, docs/unbind-method.md).
#pragma once

#include <phew/tool/tool.hpp>
#include <phew/unbind/unbind.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace phew::tools {

struct UnbindOptions {
  std::string clumps;
  std::string snapshot;
  std::string units;  // --units (tool/snapshot_input.hpp)
  std::string types = "auto";
  bool allow_other_types = false;
  std::string potential = "profile";
  std::string centre = "shrinking-sphere";  // phew's peak is a cell centre: up to half a cell off
  std::optional<double> softening;
  bool potential_of_all = false;
  bool saddle = false;
  std::int64_t min_bound = 10;
  std::int64_t most_bound = 20;
  int max_iterations = 100;
  std::string export_yt;
  std::string threads = "auto";
  std::int64_t batch_particles = 4'000'000;
  std::vector<double> apertures_kpc{30, 50};  // --apertures: physical kpc (SOAP's 30 and 50 kpc)
};

struct UnbindParams {
  unbind::Params params;            // the library's (the frame comes from the snapshot)
  std::optional<double> softening;  // comoving length; none: the default of the grid
  int threads = 0;                  // 0: auto (the node's cores shared among its ranks)
};

void declare_unbind_options(CLI::App& app, UnbindOptions& opt);
// The options as checked values. Throws Error(usage); pure.
UnbindParams check_unbind_options(const UnbindOptions& opt);
void run_unbind(const UnbindOptions& opt, tool::Context& ctx);

}  // namespace phew::tools
