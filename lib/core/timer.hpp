// Wall-clock timings per named phase, logged at --verbose and recorded in the manifest.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace phew::core {

// A stage reports each phase it enters through this (the tool times, logs and records them, and its
// failure-injection hook acts on them); an empty one ignores them.
using PhaseReport = std::function<void(const std::string&)>;
inline void enter(const PhaseReport& report, const std::string& phase) {
  if (report) report(phase);
}

class PhaseTimer {
 public:
  // Starts a phase; the previous one (if any) ends.
  void start(std::string name);
  void stop();                                                                           // ends the current phase
  const std::vector<std::pair<std::string, double>>& phases() const { return phases_; }  // seconds

 private:
  std::string current_;
  std::chrono::steady_clock::time_point began_{};
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace phew::core
