// The tool runner: every phew executable's main is one call to run_tool. It owns MPI set-up and
// tear-down, the common options (-o, -v, -q, --config, --version, --help), logging, the catch-all,
// the exit-code table (docs/cli.md) and the agreement on failure across ranks.
#pragma once

#include "core/timer.hpp"
#include "io/atomic_output.hpp"
#include "io/h5.hpp"
#include "manifest/manifest.hpp"
#include "mpi/comm.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace phew {

struct ToolSpec {
  std::string name;         // "cic-project"
  std::string summary;      // one line for --help
  std::string example;      // a complete command line shown in --help
  std::string output_kind;  // manifest kind of the output ("grid")
};

// What a running tool gets: the communicator, its output path, the manifest being built, timers.
class Context {
 public:
  Context(const ToolSpec& spec, const mpi::Comm& comm, std::string output, manifest::Builder builder);

  const mpi::Comm& comm() const { return comm_; }
  const std::string& output() const { return output_; }
  manifest::Builder& manifest() { return manifest_; }

  // Starts a named phase (timed, logged at --verbose, recorded in the manifest).
  // Test hooks: PHEW_TEST_FAIL_AT=NAME fails and PHEW_TEST_PAUSE_AT=NAME sleeps at the start of phase NAME,
  // so tests can check what a failed or killed run leaves behind.
  void phase(std::string name);
  const std::string& current_phase() const { return phase_; }

  // Finishes an HDF5 output written to out.temp_path(): puts the manifest in the root attribute
  // "manifest", closes the file, renames it into place and writes OUTPUT.json beside it, last.
  // Collective.
  void finish_output(io::File& file, io::AtomicOutput& out);
  // The same for one of several outputs of a run: the manifest names out.final_path() and has kind
  // `kind` (e.g. a snapshot and its "truth" file, or every snapshot of a sequence). Collective.
  void finish_output(io::File& file, io::AtomicOutput& out, const std::string& kind);

 private:
  const ToolSpec& spec_;
  const mpi::Comm& comm_;
  std::string output_;
  manifest::Builder manifest_;
  PhaseTimer timer_;
  std::string phase_ = "start";
};

using DeclareOptions = std::function<void(CLI::App&)>;
using ToolBody = std::function<void(Context&)>;

// Parses the command line (options declared by `declare`, plus the common ones), runs `body`, and
// returns the exit code for main. Never throws.
int run_tool(const ToolSpec& spec, int argc, char** argv, const DeclareOptions& declare, const ToolBody& body);

}  // namespace phew
