// A progress bar on stderr, drawn only when stderr is a terminal, on rank 0, and not --quiet.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace phew {

class Progress {
 public:
  Progress(std::string label, std::uint64_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(std::uint64_t done);  // cheap to call often: redraws at most 10 times a second
  void finish();

 private:
  std::string label_;
  std::uint64_t total_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace phew
