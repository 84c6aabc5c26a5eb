#include "core/progress.hpp"

#include "core/log.hpp"

#include <unistd.h>

#include <cstdio>

namespace phew {

Progress::Progress(std::string label, std::uint64_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(log::detail::info_enabled && isatty(STDERR_FILENO) == 1 && total > 0) {}

Progress::~Progress() { finish(); }

void Progress::update(std::uint64_t done) {
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && done < total_) return;
  last_draw_ = now;
  constexpr int width = 30;
  const double f = total_ ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  const int filled = static_cast<int>(f * width);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r%s [%s] %5.1f%%", label_.c_str(), bar.c_str(), 100.0 * f);
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  update(total_);
  finished_ = true;
  std::fputs("\r\033[K", stderr);  // clear the bar so that the log stays clean
}

}  // namespace phew
