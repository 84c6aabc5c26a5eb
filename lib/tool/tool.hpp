// The tool runner: every phew executable's main is one call to run_tool. It owns MPI set-up and
// tear-down, the common options (-o, -v, -q, --config, --version, --help), logging, the catch-all,
// the exit-code table (docs/cli.md) and the agreement on failure across ranks.
#pragma once

#include <phew/core/timer.hpp>
#include <phew/io/atomic_output.hpp>
#include <phew/io/h5.hpp>
#include <phew/manifest/manifest.hpp>
#include <phew/mpi/comm.hpp>

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace phew::tool {

struct ToolSpec {
  std::string name;         // "cic-project"
  std::string summary;      // one line for --help
  std::string example;      // a complete command line shown in --help
  std::string output_kind;  // manifest kind of the output ("grid")
  // Options naming an input the output may replace (mergertree's --state: a tree continued in place).
  // Every other input is protected: -o naming it is a usage error.
  std::vector<std::string> replaceable_inputs = {};
};

// What a running tool gets: the communicator, its output path, the manifest being built, timers.
class Context {
 public:
  Context(const ToolSpec& spec, const mpi::Comm& comm, std::string output, manifest::Builder builder);

  const mpi::Comm& comm() const { return comm_; }
  const std::string& output() const { return output_; }
  manifest::Builder& manifest() { return manifest_; }

  // Starts a named phase (timed, logged at --verbose, recorded in the manifest).
  // Test hooks: PHEW_TEST_FAIL_AT=NAME fails and PHEW_TEST_PAUSE_AT=NAME sleeps at the start of phase NAME
  // (on every rank, or only on rank PHEW_TEST_FAIL_RANK), so tests can check what a failed or killed
  // run leaves behind.
  void phase(std::string name);
  const std::string& current_phase() const { return phase_; }
  bool started() const { return phase_ != kBeforePhases; }

  // A side output of the run (a text export, a quicklook): rank 0's `content`, written now under a
  // temporary name, listed in the manifest of the next output finished, and moved into place with it.
  // Collective.
  void side_output(const std::string& path, const std::string& kind, const std::string& content);
  // Files each rank makes of its own share (dtfe-surface's quicklooks, (path, content)): written now
  // under temporary names, moved into place with the outputs by the rank that made them. The manifest
  // lists them itself (a summary). Collective (errors agreed).
  void rank_files(const std::vector<std::pair<std::string, std::string>>& files);

  // Finishes an HDF5 output written to out.temp_path(): puts the manifest in the root attribute
  // "manifest", closes the file, fingerprints it and writes OUTPUT.json under a temporary name. Nothing
  // is in place yet: every finished output and side output moves into place together when the run
  // succeeds (commit). Collective.
  void finish_output(io::File& file, io::AtomicOutput& out);
  // The same for one of several outputs of a run: the manifest names out.final_path() and has kind
  // `kind` (e.g. a snapshot and its "truth" file, or every snapshot of a sequence). Collective.
  void finish_output(io::File& file, io::AtomicOutput& out, const std::string& kind);

  // Moves every finished file into place (io::Commit). Called by run_tool after the body. Collective.
  void commit();

  // Paths given to the spec's replaceable_inputs: an output may replace these. Set by run_tool.
  void allow_replacing(std::vector<std::string> paths) { replaceable_ = std::move(paths); }

 private:
  static constexpr const char* kBeforePhases = "start";
  // Refuses (Error(usage)) an output path that is the same file as one of the run's inputs.
  void check_not_an_input(const std::string& output) const;

  const ToolSpec& spec_;
  const mpi::Comm& comm_;
  std::string output_;
  manifest::Builder manifest_;
  core::PhaseTimer timer_;
  std::string phase_ = kBeforePhases;
  io::Commit commit_;
  std::vector<std::string> replaceable_;
};

using DeclareOptions = std::function<void(CLI::App&)>;
using ToolBody = std::function<void(Context&)>;

// Parses the command line (options declared by `declare`, plus the common ones), runs `body`, commits
// its outputs, and returns the exit code for main. Never throws.
//
// Failures end every rank (docs/cli.md): an error raised on every rank together (mpi::agree, or any
// error before the first phase: the command line is the same everywhere) is printed once by rank 0 and
// every rank returns its exit code; an error only one rank knows of is printed by that rank, which then
// ends the whole job at once (mpi::abort) instead of leaving the others waiting in a collective.
int run_tool(const ToolSpec& spec, int argc, char** argv, const DeclareOptions& declare, const ToolBody& body);

}  // namespace phew::tool
