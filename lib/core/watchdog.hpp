// A last resort against hangs: once a rank knows the run has failed, it ends within a bounded time even
// if it, or a library under it, is left waiting for ranks that went another way (HDF5's collective
// I/O after a failed write, for one). Agreement and a clean exit normally come first; the watchdog only
// fires when they do not.
#pragma once

#include <chrono>
#include <string>

namespace phew::core {

// From now on, if this process has not ended within `grace`, print `line` on stderr (when not empty)
// and end it with `code`, without running any shutdown. Only the first call arms it.
void end_process_after(std::chrono::seconds grace, int code, std::string line);

// What the watchdog does just before it ends the process (removing temporary files: lib/io). Must be
// safe to call from any thread at any time (no locks, no allocation).
void set_last_words(void (*fn)());

}  // namespace phew::core
