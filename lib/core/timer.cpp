#include <phew/core/timer.hpp>

#include <phew/core/log.hpp>

namespace phew::core {

void PhaseTimer::start(std::string name) {
  stop();
  current_ = std::move(name);
  began_ = std::chrono::steady_clock::now();
}

void PhaseTimer::stop() {
  if (current_.empty()) return;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
  log::verbose("phase {} took {:.3f} s", current_, s);
  phases_.emplace_back(std::move(current_), s);
  current_.clear();
}

}  // namespace phew::core
