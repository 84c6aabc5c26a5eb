#include <phew/core/watchdog.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace phew::core {

namespace {
std::atomic<void (*)()> g_last_words{nullptr};
}  // namespace

void set_last_words(void (*fn)()) { g_last_words = fn; }

void end_process_after(std::chrono::seconds grace, int code, std::string line) {
  static std::atomic<bool> armed{false};
  if (armed.exchange(true)) return;
  std::thread([grace, code, line = std::move(line)] {
    std::this_thread::sleep_for(grace);
    if (auto fn = g_last_words.load()) fn();
    if (!line.empty()) std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
    std::_Exit(code);
  }).detach();
}

}  // namespace phew::core
