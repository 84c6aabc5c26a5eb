// Before phew opens a file to read it: it exists, can be read and is a regular file. A FIFO would block
// the reader until a writer came (a hang), a socket or a device would feed it garbage; every reader of
// the tools (snapshot pieces, RAMSES part and info files, products, configs, centres) asks here first.
#pragma once

#include <string>

namespace phew::core {

// Error(io) naming the cause when `path` is missing, unreadable (permission) or a loop of symbolic
// links; Error(input) when it is a folder or not a regular file (a FIFO, a socket, a device).
void check_readable_file(const std::string& path);

}  // namespace phew::core
