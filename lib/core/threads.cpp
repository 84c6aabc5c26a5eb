#include <phew/core/threads.hpp>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace phew::core {

void parallel_for(int threads, std::size_t n, std::size_t chunk,
                  const std::function<void(std::size_t, std::size_t, int)>& body) {
  if (n == 0) return;
  chunk = std::max<std::size_t>(chunk, 1);
  const std::size_t chunks = (n + chunk - 1) / chunk;
  const int t = static_cast<int>(std::clamp<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), 1, chunks));
  if (t == 1) {  // the same chunks, in order: a body may size its scratch by the chunk
    for (std::size_t b = 0; b < n; b += chunk) body(b, std::min(n, b + chunk), 0);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&](int id) {
    try {
      for (;;) {
        const std::size_t c = next.fetch_add(1, std::memory_order_relaxed);
        if (c >= chunks) return;
        const std::size_t b = c * chunk;
        body(b, std::min(n, b + chunk), id);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next.store(chunks);  // the others stop at their next chunk
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(t - 1));
  // When the system cannot start another thread (a process limit), the loop runs on those it has: the
  // chunks are handed out dynamically, so no chunk is lost and no result changes.
  try {
    for (int i = 1; i < t; ++i) pool.emplace_back(work, i);
  } catch (const std::system_error&) {}
  work(0);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

int default_threads(int ranks_on_node) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, static_cast<int>(hw) / std::max(1, ranks_on_node));
}

}  // namespace phew::core
