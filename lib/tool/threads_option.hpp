// The -j,--threads option of the tools that run threads inside a rank (docs/cli.md, "Threads"): a
// positive number, or auto, the cores of the node shared among the ranks on it. The number of threads
// never changes an output byte; the manifest records the number used (threads_used).
#pragma once

#include <phew/mpi/comm.hpp>
#include <phew/tool/tool.hpp>

#include <string>

// CLI11 2.1 compiles its validators and helpers into every file that includes it (about 5 s a file at
// -O3): the headers name CLI::App only, and the files that declare options include <CLI/CLI.hpp>.
namespace CLI {
class App;
}  // namespace CLI

namespace phew::tool {

// `note`: what the threads do in this tool, added to the help.
void add_threads_option(CLI::App& app, std::string& text, const std::string& note = "");
// 0 for auto; Error(usage) for anything but a positive number or auto.
int parse_threads(const std::string& text);
// More threads per rank than any node has cores is a typo (-j 100000): refused.
constexpr int kMaxThreads = 1024;
// The threads to run: `parsed` when positive, else the node's cores shared among its ranks. Collective.
int threads_to_use(int parsed, const mpi::Comm& comm);
// The same, recorded in the manifest as threads_used and set as lib/io's threads
// (io::set_io_threads): what every threaded tool calls. Collective.
int threads_to_use(int parsed, Context& ctx);

}  // namespace phew::tool
