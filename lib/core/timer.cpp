#include <phew/core/timer.hpp>

#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>

namespace phew::core {

void PhaseTimer::start(std::string name) {
  stop();
  current_ = std::move(name);
  began_ = std::chrono::steady_clock::now();
}

void PhaseTimer::stop() {
  if (current_.empty()) return;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
  // The process's peak so far: what a phase needed at most is the rise since the phases before it.
  log::verbose("phase {} took {:.3f} s (peak memory so far {} MiB)", current_, s, peak_rss_bytes() >> 20);
  phases_.emplace_back(std::move(current_), s);
  current_.clear();
}

}  // namespace phew::core
