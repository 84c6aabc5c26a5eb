// A minimal thread pool for loops: chunks of [0, n) handed out dynamically to `threads` std::threads.
// Results must not depend on which thread ran a chunk: every use (lib/dtfe, the watershed, the
// deposit) writes disjoint outputs per chunk (pixels, rows, planes) or sums integers, so they never do.
#pragma once

#include <cstddef>
#include <functional>

namespace phew::core {

// Calls body(begin, end, thread) for consecutive chunks of at most `chunk` items covering [0, n), on
// up to `threads` threads (the calling thread is one of them). The first exception thrown by a body
// is rethrown here after all threads stopped.
void parallel_for(int threads, std::size_t n, std::size_t chunk,
                  const std::function<void(std::size_t begin, std::size_t end, int thread)>& body);

// Threads to use when the user says "auto": the hardware threads shared by the ranks on this node.
int default_threads(int ranks_on_node);

}  // namespace phew::core
