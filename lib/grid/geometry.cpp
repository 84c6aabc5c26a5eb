#include "grid/geometry.hpp"

#include "core/error.hpp"

#include <charconv>
#include <vector>

namespace phew {

std::array<std::int64_t, 3> parse_grid_shape(const std::string& text) {
  std::vector<std::int64_t> n;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + end, v);
    if (ec != std::errc() || ptr != text.data() + end || v < 1)
      throw Error::usage("grid '{}': expected N or NX,NY,NZ with positive integers", text);
    n.push_back(v);
    pos = end + 1;
  }
  if (n.size() == 1) return {n[0], n[0], n[0]};
  if (n.size() == 3) return {n[0], n[1], n[2]};
  throw Error::usage("grid '{}': expected N or NX,NY,NZ", text);
}

}  // namespace phew
