// The one parser for numbers and comma-separated lists of numbers written by users (options, config
// values, text files). Whole text must be the number(s): "12x" and "" are errors, not 12 and 0.
#pragma once

#include <phew/core/error.hpp>

#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace phew::core {

// `text` as one number of type T. Floating point: finite values only. Throws Error(usage) naming
// `what` ("--threads") and the text.
template <typename T>
T parse_number(std::string_view text, std::string_view what) {
  T v{};
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty())
    throw Error::usage("{} '{}': expected {}", what, text, std::is_integral_v<T> ? "an integer" : "a number");
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(v)) throw Error::usage("{} '{}': expected a finite number", what, text);
  return v;
}

// "1,2.5,3" as numbers; `count` > 0 demands exactly that many. Throws Error(usage).
template <typename T>
std::vector<T> parse_list(std::string_view text, std::string_view what, std::size_t count = 0) {
  std::vector<T> out;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t comma = text.find(',', pos);
    const std::string_view item =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    out.push_back(parse_number<T>(item, what));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (count > 0 && out.size() != count)
    throw Error::usage("{} '{}': expected {} comma-separated numbers, found {}", what, text, count, out.size());
  return out;
}

}  // namespace phew::core
