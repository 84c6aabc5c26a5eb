// Wall-clock timings per named phase, logged at --verbose and recorded in the manifest.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace phew {

class PhaseTimer {
 public:
  // Starts a phase; the previous one (if any) ends.
  void start(std::string name);
  void stop();  // ends the current phase
  const std::vector<std::pair<std::string, double>>& phases() const { return phases_; }  // seconds

 private:
  std::string current_;
  std::chrono::steady_clock::time_point began_{};
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace phew
