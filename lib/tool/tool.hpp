// The tool runner: every phew executable's main is one call to run_tool. It owns MPI set-up and
// tear-down, the common options (-o, -v, -q, --config, --version, --help), logging, the catch-all,
// the exit-code table (docs/cli.md) and the agreement on failure across ranks.
#pragma once

#include <phew/core/timer.hpp>
#include <phew/io/atomic_output.hpp>
#include <phew/io/h5.hpp>
#include <phew/manifest/fields.hpp>
#include <phew/manifest/manifest.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/traffic.hpp>

#include <functional>
#include <string>

// CLI11 2.1 compiles its validators and helpers into every file that includes it (about 5 s a file at
// -O3): the headers name CLI::App only, and the files that declare options include <CLI/CLI.hpp>.
namespace CLI {
class App;
}  // namespace CLI

namespace phew::tool {

struct ToolSpec {
  std::string name;         // "cic-project"
  std::string summary;      // one line for --help
  std::string example;      // a complete command line shown in --help
  std::string output_kind;  // manifest kind of the output ("grid")
  // Options naming an input the output may replace (mergertree's --state: a tree continued in place).
  // Every other input is protected: -o naming it is a usage error.
  std::vector<std::string> replaceable_inputs = {};
  // Options naming a file or folder the run writes (mergertree's --stats, --export-ctrees): not inputs,
  // so a second run may replace what the first wrote. The tool plans the files (Context::plan_side_output).
  std::vector<std::string> output_options = {};
};

// What a running tool gets: the communicator, its output path, the manifest being built, timers; and
// the ceremony every tool shares: inputs checked and recorded, outputs planned, checked before any work
// (the preflight), written atomically with their manifests, and summaries recorded from field lists.
class Context {
 public:
  Context(const ToolSpec& spec, const mpi::Comm& comm, std::string output, manifest::Builder builder);

  const mpi::Comm& comm() const { return comm_; }
  const std::string& output() const { return output_; }
  manifest::Builder& manifest() { return manifest_; }

  // Starts a named phase (timed, logged at --verbose, recorded in the manifest with the bytes this
  // phase's exchanges sent: `exchanges`, docs/formats.md). The first phase runs the preflight first. Test hooks (PHEW_TEST_FAIL_AT, PHEW_TEST_PAUSE_AT): tool/test_hooks.hpp.
  void phase(std::string name);
  // Logs (verbose) how memory follows the data: the peak memory so far per item of this rank's share
  // (`local` items: its cells, leaves or test cells), the most of any rank. Collective.
  void log_memory_per(std::uint64_t local, const std::string& item) const;
  const std::string& current_phase() const { return phase_; }
  bool started() const { return phase_ != kBeforePhases; }

  // --- Planned outputs and the preflight (docs/cli.md, "Before any work") ---
  // Every file the run will write, told before the first phase: an HDF5 output with its manifest
  // (plan_output; -o itself is planned already) or a side output (plan_side_output: a text export, a
  // quicklook; `make_folder`: its folder is created by the run, so only an existing ancestor must be
  // writable). Planned later (names known only from an input: dtfe-surface's quicklooks), a file is
  // checked at once. Collective (the same names on every rank).
  void plan_output(const std::string& path);
  void plan_side_output(const std::string& path, bool make_folder = false);
  // The inputs named on the command line (run_tool) and those an output may replace (--state).
  void set_command_line_inputs(std::vector<std::string> inputs, std::vector<std::string> replaceable);

  // --- Inputs ---
  // A phew product: checked on rank 0 (manifest::check_phew_input: kind one of `kinds`, not stale),
  // agreed on every rank, recorded in the manifest, refused when it is a planned output; every rank gets
  // the result. Collective.
  manifest::Input add_input(const std::string& path, const std::vector<std::string>& kinds);
  // The files of a product's provenance chain (the inputs its manifest records, theirs, and so on):
  // what a re-run needs, so never an output; add_input protects its product's. Rank 0.
  void protect_chain(const std::string& product);
  // External files (the pieces of a snapshot, a scene): recorded as inputs of kind `kind`. Collective.
  void add_external_inputs(const std::vector<std::string>& paths, const std::string& kind);
  // Inputs found by `find` (run on rank 0 only, errors agreed): the snapshot files of a provenance
  // chain, a centres file. Collective.
  void add_inputs(const std::function<std::vector<manifest::Input>()>& find);

  // Work only rank 0 does (the tree, a check of a manifest), its errors agreed on every rank. Collective.
  void on_root(const std::function<void()>& work);

  // --- Summaries ---
  // Records every field of `fields` of `result` as a manifest summary.
  template <typename Result>
  void summary(const manifest::Fields<Result>& fields, const Result& result) {
    fields.record(manifest_, result);
  }

  // --- Outputs ---
  // Writes the output -o: creates it under its temporary name, `write(file)` fills it, then
  // finish_output. Collective.
  void write_output(const std::function<void(io::File&)>& write);
  // The same for one of several outputs of a run (every snapshot of a sequence and its truth file):
  // written to `path`, its manifest of kind `kind`. Collective.
  void write_output(const std::string& path, const std::string& kind, const std::function<void(io::File&)>& write);

  // A side output of the run (a text export, a quicklook): rank 0's `content`, written now under a
  // temporary name, listed in the manifest of the next output finished, and moved into place with it.
  // A path not planned before is checked now. Collective.
  void side_output(const std::string& path, const std::string& kind, const std::string& content);
  // Files each rank makes of its own share (dtfe-surface's quicklooks, (path, content)): written now
  // under temporary names, moved into place with the outputs by the rank that made them. The manifest
  // lists them itself (a summary); plan them first. Collective (errors agreed).
  void rank_files(const std::vector<std::pair<std::string, std::string>>& files);

  // Finishes an HDF5 output written to out.temp_path(): puts the manifest in the root attribute
  // "manifest", closes the file, fingerprints it and writes OUTPUT.json under a temporary name. Nothing
  // is in place yet: every finished output and side output moves into place together when the run
  // succeeds (commit). `kind`: the manifest's kind (default: the spec's output kind). Collective.
  void finish_output(io::File& file, io::AtomicOutput& out);
  void finish_output(io::File& file, io::AtomicOutput& out, const std::string& kind);

  // Moves every finished file into place (io::Commit). Called by run_tool after the body. Collective.
  void commit();

 private:
  static constexpr const char* kBeforePhases = "start";
  struct Planned {
    std::string path, what;  // what: "-o", "the manifest", "a side output"
    bool make_folder = false;
  };
  void plan(Planned p);
  // The preflight (rank 0, errors agreed): every planned file against the inputs, their manifests and
  // each other; the destinations; stale temporary files removed. Collective.
  void preflight();
  void check_planned(const Planned& p, std::size_t index) const;
  // Refuses (Error(usage)) an input that is a planned output (an input found while running: a
  // snapshot's other pieces, the grid a manifest records). Rank 0.
  void check_not_an_output(const std::string& input) const;

  // Ends the open phase's count of exchanges (mpi::traffic), adding it to its name's.
  void end_phase_traffic();
  // Every phase's exchanges into the manifest, reduced over the ranks. Collective.
  void record_exchanges();

  const ToolSpec& spec_;
  const mpi::Comm& comm_;
  std::string output_;
  manifest::Builder manifest_;
  core::PhaseTimer timer_;
  std::string traffic_phase_;  // the phase whose exchanges are being counted ("" between phases)
  mpi::Traffic traffic_began_;
  std::vector<std::pair<std::string, mpi::Traffic>> traffic_;  // per phase name, in the order first seen
  std::string phase_ = kBeforePhases;
  io::Commit commit_;
  std::vector<Planned> planned_;
  bool preflight_done_ = false;
  std::vector<std::string> inputs_, replaceable_;
  std::vector<std::string> chain_;  // files of the inputs' provenance chains (protect_chain)
};

// The check of an option naming a file or folder to write: an empty name is refused at parse time
// (exit 2), as -o '' is.
inline std::string non_empty_name(const std::string& s) { return s.empty() ? "an empty name" : ""; }

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
