// cic-project: particles -> density on a uniform grid (docs/tools/cic-project.md).
#pragma once

#include <phew/grid/assignment.hpp>
#include <phew/grid/geometry.hpp>
#include <phew/io/grid_file.hpp>
#include <phew/particles/projection.hpp>
#include <phew/tool/tool.hpp>

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace phew::tools {

struct CicOptions {
  std::vector<std::string> snapshot;
  std::string units;  // --units (tool/snapshot_input.hpp)
  std::string grid;
  std::string types = "auto";
  std::string region;
  std::string assignment = "cic";
  std::string precision = "float32";
  bool compress = false;
  std::string for_threshold = "80mean";  // what `--grid auto` plans for
  double refine = 0;                     // --refine M: an adaptive mesh (0: the uniform grid)
  int levels = 4;                        // --levels K
  int buffer = 1;                        // --buffer B
  std::string threads = "auto";
};

// The options in checked form.
struct CicParams {
  std::array<std::int64_t, 3> shape{};  // {0, 0, 0}: --grid auto or absent
  bool auto_grid = false;
  double for_threshold = 80;  // times the mean
  std::optional<grid::Box> region;
  grid::Assignment assignment = grid::Assignment::cic;
  io::Precision precision = io::Precision::f32;
  bool compress = false;
  std::optional<particles::OctreeParams> octree;  // --refine: an adaptive mesh over the grid
  int threads = 0;                                // 0: auto
};

void declare_cic_options(CLI::App& app, CicOptions& opt);
CicParams check_cic_options(const CicOptions& opt);  // throws Error(usage); pure
void run_cic_project(const CicOptions& opt, tool::Context& ctx);

}  // namespace phew::tools
