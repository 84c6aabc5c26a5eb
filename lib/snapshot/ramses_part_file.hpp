// A RAMSES part file: eight header records (ncpu, ndim, npart, localseed, nstar_tot, mstar_tot,
// mstar_lost, nsink), then one record of npart values per field of part_file_descriptor.txt, in its
// order. Every marker is checked against the descriptor and npart before any value is used. Internal to
// lib/particles' RAMSES reader.
#pragma once

#include <phew/core/error.hpp>
#include <phew/snapshot/ramses_descriptor.hpp>
#include <phew/snapshot/ramses_records.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace phew::snapshot::ramses {

// Where every record of one part file is, checked: markers agree, the file is not truncated, each
// field record holds npart values of its type, nothing follows the last field.
struct PartLayout {
  std::string path;
  bool swap = false;
  std::uint64_t npart = 0;
  std::vector<Block> fields;  // in descriptor order
};

// Opens a part file for binary reading. Throws Error(io) when it cannot.
std::ifstream open_part(const std::string& path);

// The layout of the part file `path`, open as `in`, checked against the descriptor's `fields` and the info
// file's ncpu (`info_path` names it in errors). Throws Error(input) naming the file and the record.
PartLayout scan_part(const std::string& path, std::ifstream& in, const std::vector<Field>& fields, int ncpu,
                     const std::string& info_path);

// Reads values [lo, hi) of field `f` in bounded chunks and hands each decoded chunk to
// `use(first index, count, values)`.
template <typename Out, typename Use>
void for_each_chunk(std::ifstream& in, const PartLayout& L, const Field& f, const Block& b, std::uint64_t lo,
                    std::uint64_t hi, Use use) {
  constexpr std::uint64_t kChunk = 1 << 16;
  std::vector<unsigned char> buffer;
  std::vector<Out> values;
  const auto w = static_cast<std::uint64_t>(b.width);
  for (std::uint64_t i = lo; i < hi;) {
    const std::uint64_t m = std::min(kChunk, hi - i);
    buffer.resize(m * w);
    values.resize(m);
    if (!read_at(in, b.offset + i * w, buffer.data(), buffer.size()))
      throw core::Error::io("{}: cannot read {} bytes at byte {}", L.path, buffer.size(), b.offset + i * w);
    decode(buffer.data(), f.kind, b.width, L.swap, m, values.data());
    use(i, static_cast<std::size_t>(m), values.data());
    i += m;
  }
}

}  // namespace phew::snapshot::ramses
