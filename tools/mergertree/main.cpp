#include "mergertree.hpp"

int main(int argc, char** argv) {
  const phew::tool::ToolSpec spec{"mergertree",
                                  "Link density peaks across snapshots by voting, with a graveyard",
                                  "mergertree out/000/peaks.h5 out/001/peaks.h5 out/002/peaks.h5 -o tree.h5",
                                  "tree",
                                  {"--state"},
                                  {"--stats", "--export-ctrees", "--export-arbor"}};
  phew::tools::TreeOptions opt;
  return phew::tool::run_tool(
      spec, argc, argv, [&](CLI::App& app) { phew::tools::declare_tree_options(app, opt); },
      [&](phew::tool::Context& ctx) { phew::tools::run_mergertree(opt, ctx); });
}
