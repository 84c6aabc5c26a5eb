#include "io/clumps_reader.hpp"

#include "io/grid_file.hpp"

#include <algorithm>

namespace phew::io {

GridMeta read_clumps_grid(const File& f) { return read_grid_attributes(f, "/grid", false); }

std::int64_t count_peaks(const File& f) { return static_cast<std::int64_t>(f.dataset_info("/peaks/id").elements()); }

std::vector<std::int64_t> read_clump_labels(const File& f, std::int64_t x0, std::int64_t x1) {
  if (x1 <= x0) return {};
  return f.read_rows<std::int64_t>("/cells/clump", static_cast<std::uint64_t>(x0), static_cast<std::uint64_t>(x1 - x0));
}

std::map<std::int64_t, std::array<double, 3>> read_clump_peak_positions(const File& f,
                                                                        const std::vector<std::int64_t>& ids) {
  std::map<std::int64_t, std::array<double, 3>> out;
  const std::uint64_t rows = f.dataset_info("/clumps/id").elements();
  constexpr std::uint64_t kChunk = 1 << 20;
  for (std::uint64_t b = 0; b < rows; b += kChunk) {
    const std::uint64_t c = std::min(kChunk, rows - b);
    const auto id = f.read_rows<std::int64_t>("/clumps/id", b, c);
    const auto pos = f.read_rows<double>("/clumps/peak_position", b, c);
    for (std::size_t i = 0; i < c; ++i)
      if (std::binary_search(ids.begin(), ids.end(), id[i])) out[id[i]] = {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]};
  }
  return out;
}

}  // namespace phew::io
