// dtfe-surface: DTFE surface-density maps around listed centres (docs/tools/dtfe-surface.md).
#pragma once

#include <phew/dtfe/surface_maps.hpp>
#include <phew/tool/tool.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace phew::tools {

struct DtfeOptions {
  std::vector<std::string> snapshot;
  std::string units;  // --units (tool/snapshot_input.hpp)
  std::string centers;
  std::int64_t top = 0;
  double size = 0;
  int resolution = 0;
  std::string depth;   // length, "box", or empty: the size
  std::string margin;  // length, or empty: per field, grown from size / 10 (SurfaceMapsParams::auto_margin)
  std::string axis = "z";
  int samples = 1;
  std::string mode = "ray";
  std::string backend = "auto";
  std::string threads = "auto";
  std::string schedule = "dynamic";
  std::string types = "auto";
  std::string precision = "float32";
  bool png = false;
};

// The options in checked form ("box" for the depth is resolved by the stage, which knows the box).
struct DtfeParams {
  dtfe::SurfaceMapsParams maps;  // maps.map.threads: 0 until resolved (auto)
  int threads = 0;               // 0: one per core on this node, shared among its ranks
  bool float64 = false;
};

void declare_dtfe_options(CLI::App& app, DtfeOptions& opt);
DtfeParams check_dtfe_options(const DtfeOptions& opt);  // throws Error(usage); pure
void run_dtfe_surface(const DtfeOptions& opt, tool::Context& ctx);

}  // namespace phew::tools
