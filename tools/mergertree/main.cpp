#include "mergertree.hpp"

int main(int argc, char** argv) {
  const phew::ToolSpec spec{"mergertree", "Link density peaks across snapshots by voting, with a graveyard",
                            "mergertree out/000/peaks.h5 out/001/peaks.h5 out/002/peaks.h5 -o tree.h5", "tree",
                            {"--state"}};
  phew::TreeOptions opt;
  return phew::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::declare_tree_options(app, opt); },
      [&](phew::Context& ctx) { phew::run_mergertree(opt, ctx); });
}
