// Logging to stderr: "TOOL[RANK] 3.2s LEVEL: message". Only rank 0 logs info and verbose lines.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace phew::core::log {

enum class Level { quiet = 0, info = 1, verbose = 2 };

// Set once by the tool runner.
void configure(std::string tool, int rank, Level level);
Level level();
const std::string& tool_name();
double elapsed_seconds();  // since configure()

void write(std::string_view level_name, std::string_view message);  // unconditional

namespace detail {
extern bool info_enabled, verbose_enabled, warn_enabled;
}

template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (detail::info_enabled) write("info", fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void verbose(fmt::format_string<Args...> f, Args&&... args) {
  if (detail::verbose_enabled) write("verbose", fmt::format(f, std::forward<Args>(args)...));
}
// Warnings are printed by rank 0 unless --quiet.
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (detail::warn_enabled) write("warning", fmt::format(f, std::forward<Args>(args)...));
}

// Numbers for humans: 1,311,208 and 1.2 GiB.
std::string thousands(long long n);
std::string bytes(double n);

}  // namespace phew::core::log
