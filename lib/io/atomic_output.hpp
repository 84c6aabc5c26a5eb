// Nothing half-written (DESIGN.md rule 3): outputs are written under a temporary name in the output's
// folder and renamed on success. The temporary name never looks like a finished output.
#pragma once

#include "mpi/comm.hpp"

#include <string>

namespace phew::io {

class AtomicOutput {
 public:
  // Chooses the temporary name on rank 0 and shares it. Collective.
  // Throws Error(io) when the output's folder does not exist or is not writable.
  AtomicOutput(std::string final_path, const mpi::Comm& comm);
  ~AtomicOutput();  // removes the temporary file unless committed
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  const std::string& temp_path() const { return temp_; }
  const std::string& final_path() const { return final_; }

  // Removes a stale manifest of the previous output, then renames the temporary file to the final
  // name (rank 0). Collective; the file must be closed.
  void commit();

 private:
  std::string final_;
  std::string temp_;
  const mpi::Comm& comm_;
  bool committed_ = false;
  int slot_ = -1;  // in the signal-cleanup registry
};

// Writes a small text file atomically (temp + rename) from this process.
void write_text_atomically(const std::string& path, const std::string& text);

// Removes registered temporary files when the process is interrupted (SIGINT, SIGTERM, SIGHUP).
void install_cleanup_on_signals();

}  // namespace phew::io
