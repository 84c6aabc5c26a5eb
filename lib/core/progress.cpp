#include <phew/core/progress.hpp>

#include <phew/core/log.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace phew::core {
namespace {

constexpr double kDefaultInterval = 5.0;  // seconds between log lines
constexpr double kRedraw = 0.1;           // seconds between redraws of a bar

std::string duration(double seconds) {
  if (seconds < 90) return fmt::format("{:.0f} s", seconds);
  if (seconds < 90 * 60) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

}  // namespace

double Progress::Output::interval_from_environment() {
  const char* env = std::getenv("PHEW_PROGRESS_INTERVAL");
  if (!env || !*env) return kDefaultInterval;
  char* end = nullptr;
  const double s = std::strtod(env, &end);
  // A test hook: anything but a number >= 0 keeps the default rather than stopping a long run.
  return end && *end == '\0' && s >= 0 && s < 1e9 ? s : kDefaultInterval;
}

Progress::Output Progress::Output::standard() {
  Output o;
  o.enabled = log::detail::info_enabled;  // rank 0, and not --quiet
  o.terminal = isatty(STDERR_FILENO) == 1;
  o.interval = interval_from_environment();
  if (o.terminal) {
    o.write = [](const std::string& text) {
      std::fputs(text.c_str(), stderr);
      std::fflush(stderr);
    };
  } else {
    o.write = [](const std::string& text) { log::write("progress", text); };
  }
  o.clock = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  return o;
}

Progress::Progress(std::string label, std::string items, std::uint64_t total, int ranks)
    : Progress(std::move(label), std::move(items), total, ranks, Output::standard()) {}

Progress::Progress(std::string label, std::string items, std::uint64_t total, int ranks, Output output)
    : label_(std::move(label)),
      items_(std::move(items)),
      total_(total),
      ranks_(ranks),
      out_(std::move(output)),
      active_(out_.enabled && total > 0 && out_.write && out_.clock) {
  if (active_) start_ = last_ = out_.clock();
}

Progress::~Progress() {
  try {
    if (std::uncaught_exceptions() == 0) {
      finish();
    } else if (active_ && !finished_ && wrote_ && out_.terminal) {  // an error: clear the bar for its line
      finished_ = true;
      out_.write("\r\033[K");
    }
  } catch (...) {  // a destructor must not throw; the progress line is not worth a crash
  }
}

std::string Progress::message(std::uint64_t done, double now, bool last) const {
  done = std::min(done, total_);
  const double f = static_cast<double>(done) / static_cast<double>(total_);
  std::string m = fmt::format("{}: {} of {} {} ({:.0f}%)", label_, log::thousands(static_cast<long long>(done)),
                              log::thousands(static_cast<long long>(total_)), items_, 100.0 * f);
  if (ranks_ > 1) m += fmt::format(" on rank 0 of {}", ranks_);
  const double elapsed = now - start_;
  if (done == total_)
    m += ", in " + duration(elapsed);
  else if (last)
    m += ", stopped after " + duration(elapsed);
  else if (done > 0 && elapsed >= 1)  // a rate measured over less than a second says little
    m += ", about " + duration(elapsed * static_cast<double>(total_ - done) / static_cast<double>(done)) + " left";
  return m;
}

void Progress::draw_bar(std::uint64_t done, double now) {
  constexpr std::size_t width = 30;
  const double f = static_cast<double>(std::min(done, total_)) / static_cast<double>(total_);
  std::string bar(static_cast<std::size_t>(f * width), '#');
  bar.resize(width, '.');
  out_.write(fmt::format("\r[{}] {}\033[K", bar, message(done, now)));
  wrote_ = true;
}

void Progress::update(std::uint64_t done) {
  done_ = done;
  if (!active_ || finished_) return;
  const double now = out_.clock();
  if (out_.terminal) {
    if (now - last_ < kRedraw) return;
    last_ = now;
    draw_bar(done, now);
    return;
  }
  if (done >= total_ || now - last_ < out_.interval) return;  // the end is finish()'s line
  last_ = now;
  out_.write(message(done, now));
  wrote_ = true;
}

void Progress::finish() {
  if (!active_ || finished_) return;
  finished_ = true;
  if (!wrote_ && (out_.terminal || out_.interval > 0)) return;  // a short loop leaves the log as it was
  if (out_.terminal)
    out_.write("\r\033[K");  // clear the bar: the log lines that follow stay clean
  else
    out_.write(message(done_, out_.clock(), true));
}

}  // namespace phew::core
