#include <phew/core/log.hpp>

#include <chrono>
#include <cstdio>

namespace phew::core::log {

namespace detail {
bool info_enabled = true;
bool verbose_enabled = false;
bool warn_enabled = true;
}  // namespace detail

namespace {
std::string g_tool = "phew";
int g_rank = 0;
Level g_level = Level::info;
auto g_start = std::chrono::steady_clock::now();
}  // namespace

void configure(std::string tool, int rank, Level lvl) {
  g_tool = std::move(tool);
  g_rank = rank;
  g_level = lvl;
  g_start = std::chrono::steady_clock::now();
  const bool root = rank == 0;
  detail::info_enabled = root && lvl >= Level::info;
  detail::verbose_enabled = root && lvl >= Level::verbose;
  detail::warn_enabled = root && lvl >= Level::info;
}

Level level() { return g_level; }
const std::string& tool_name() { return g_tool; }

double elapsed_seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now() - g_start).count(); }

void write(std::string_view level_name, std::string_view message) {
  // One fprintf per line so that lines from several ranks do not interleave mid-line.
  const std::string line =
      fmt::format("{}[{}] {:.1f}s {}: {}\n", g_tool, g_rank, elapsed_seconds(), level_name, message);
  std::fputs(line.c_str(), stderr);
}

std::string thousands(long long n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string bytes(double n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (n >= 1024.0 && u < 5) {
    n /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", n) : fmt::format("{:.1f} {}", n, units[u]);
}

}  // namespace phew::core::log
