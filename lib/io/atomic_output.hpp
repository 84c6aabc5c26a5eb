// Nothing half-written (docs/cli.md, "Nothing half-written"). Every file a run writes (its outputs, their manifests, side
// outputs such as text exports and quicklooks) is written under a short hidden temporary name in its
// folder, `.phew-HOST-PID-XXXXXX` (HOST: 8 hex digits of the host name; the final name is kept in memory,
// so a long output name never makes a longer one), and all of them are moved into place together, at the end of a successful
// run, by one Commit. At every instant each output name holds the old file or the new one, never a
// partial one; a failed run commits nothing.
#pragma once

#include <phew/mpi/comm.hpp>

#include <string>
#include <utility>
#include <vector>

namespace phew::io {

// A temporary file for one output. Choosing the name also removes the stale temporary files in the
// output's folder (remove_stale_temporaries).
class AtomicOutput {
 public:
  // Chooses the temporary name on rank 0 and shares it. Collective.
  // Throws Error(io) when the output's folder does not exist or is not writable.
  AtomicOutput(std::string final_path, const mpi::Comm& comm);
  ~AtomicOutput();  // removes the temporary file unless it was handed to a Commit
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  const std::string& temp_path() const { return temp_; }
  const std::string& final_path() const { return final_; }
  // The temporary file now belongs to a Commit (rank 0's Commit::add); this object no longer removes it.
  void hand_over() { handed_over_ = true; }

 private:
  std::string final_;
  std::string temp_;
  const mpi::Comm& comm_;
  bool handed_over_ = false;
  int slot_ = -1;  // in the signal-cleanup registry (every rank)
};

// Files to move into place together. Rank 0 holds the list; every rank takes part in apply().
class Commit {
 public:
  Commit() = default;
  ~Commit();  // removes the temporary files of an unapplied commit
  Commit(const Commit&) = delete;
  Commit& operator=(const Commit&) = delete;

  // A finished temporary file and the name it gets. Each rank moves the files it added (mostly rank 0).
  void add(std::string temp, std::string final_path);
  // A small text file (a manifest, a text export, a quicklook): written now under a temporary name.
  // Throws Error(io) naming the cause ("no space left on device").
  void add_text(const std::string& final_path, const std::string& text);
  const std::vector<std::pair<std::string, std::string>>& files() const { return files_; }

  // Moves every file into place, each rank its own. Termination signals (SIGINT, SIGTERM, SIGHUP) are held on every rank
  // from here until the process ends: once the first file has moved, the run finishes and exits 0.
  // A rename that fails is an Error(io) on every rank. Collective.
  void apply(const mpi::Comm& comm);
  // The renames alone, from this process, without holding signals (write_text_atomically).
  void move_into_place();

 private:
  std::vector<std::pair<std::string, std::string>> files_;  // (temporary, final)
  std::vector<int> slots_;                                  // in the signal-cleanup registry
  bool applied_ = false;
};

// Writes a small text file atomically (temp + rename) from this process, now. For files that are not
// a run's outputs (tests, tools that write outside a run); outputs go through a Commit.
void write_text_atomically(const std::string& path, const std::string& text);

// Removes registered temporary files when the process is interrupted (SIGINT, SIGTERM, SIGHUP).
void install_cleanup_on_signals();

// Removes every temporary file this process still has registered (unfinished outputs, and the files of
// a Commit never applied), now. For a process about to end without unwinding (MPI_Abort): destructors
// will not run, and MPI_Abort ends the calling rank without a signal the cleanup handler would see.
void remove_temporary_files();

// Removes the temporary files in the folder of `final_path` left by killed runs on this host (their
// process is gone), whatever output they were for: `.phew-HOST-PID-XXXXXX`, and the older
// `.NAME.partial-HOST-PID`. Other hosts' files are left alone (a shared file system: their processes
// cannot be seen from here). Not collective.
void remove_stale_temporaries(const std::string& final_path);

// The message for a failed write or rename of `path`: the system's reason ("No space left on device").
std::string write_failure(const std::string& path, int error_number);

}  // namespace phew::io
