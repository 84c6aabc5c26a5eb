#include <phew/io/chunk_codec.hpp>

#include <zlib.h>

#include <algorithm>
#include <cstring>

namespace phew::io {

namespace {

// The n whole elements' bytes to (from) their planes, element by element. E: the element size when
// known at compile time (the columns' 2, 4 and 8 bytes), a fixed number of streams the compiler unrolls
// (a plane at a time with a run-time stride moved a byte per iteration: 6 % of phew-merge), or 0 for
// `element_size`.
template <bool ToShuffled, std::size_t E>
void move_bytes(const std::byte* in, std::size_t n, std::size_t element_size, std::byte* out) {
  const std::size_t e = E > 0 ? E : element_size;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < e; ++k) {
      if constexpr (ToShuffled)
        out[k * n + i] = in[i * e + k];
      else
        out[i * e + k] = in[k * n + i];
    }
}

// Byte k of element i is byte k * n + i of the shuffled order; `ToShuffled` says which way they move.
// The bytes past the last whole element (and all of them when there is one byte per element or
// fewer than one element) stay where they are, as HDF5 leaves them.
template <bool ToShuffled>
void move_bytes(std::span<const std::byte> in, std::size_t element_size, std::span<std::byte> out) {
  const std::size_t n = element_size > 1 ? in.size() / element_size : 0, whole = n * element_size;
  if (n > 0) {
    switch (element_size) {
      case 2:
        move_bytes<ToShuffled, 2>(in.data(), n, element_size, out.data());
        break;
      case 4:
        move_bytes<ToShuffled, 4>(in.data(), n, element_size, out.data());
        break;
      case 8:
        move_bytes<ToShuffled, 8>(in.data(), n, element_size, out.data());
        break;
      default:
        move_bytes<ToShuffled, 0>(in.data(), n, element_size, out.data());
    }
  }
  std::copy(in.begin() + static_cast<std::ptrdiff_t>(whole), in.end(),
            out.begin() + static_cast<std::ptrdiff_t>(whole));
}

}  // namespace

void shuffle_bytes(std::span<const std::byte> in, std::size_t element_size, std::span<std::byte> out) {
  move_bytes<true>(in, element_size, out);
}

void unshuffle_bytes(std::span<const std::byte> in, std::size_t element_size, std::span<std::byte> out) {
  move_bytes<false>(in, element_size, out);
}

std::vector<std::byte> encode_chunk(std::span<const std::byte> chunk, std::size_t element_size, bool shuffle, int level,
                                    std::vector<std::byte>& scratch) {
  std::span<const std::byte> src = chunk;
  if (shuffle) {
    scratch.resize(chunk.size());
    shuffle_bytes(chunk, element_size, scratch);
    src = scratch;
  }
  uLongf size = compressBound(static_cast<uLong>(src.size()));
  std::vector<std::byte> out(size);
  // compress2 with the whole chunk at once, as H5Zdeflate.c calls it: the same zlib stream, byte for byte.
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(src.data()),
                static_cast<uLong>(src.size()), level) != Z_OK)
    out.clear();  // cannot happen with compressBound's room; the caller then writes through HDF5
  else
    out.resize(size);
  return out;
}

bool decode_chunk(std::span<const std::byte> stored, std::size_t element_size, bool shuffled, bool deflated,
                  std::span<std::byte> out, std::vector<std::byte>& scratch) {
  std::span<std::byte> inflated = out;
  if (shuffled) {
    scratch.resize(out.size());
    inflated = scratch;
  }
  if (deflated) {
    uLongf size = static_cast<uLongf>(inflated.size());
    if (uncompress(reinterpret_cast<Bytef*>(inflated.data()), &size, reinterpret_cast<const Bytef*>(stored.data()),
                   static_cast<uLong>(stored.size())) != Z_OK ||
        size != inflated.size())
      return false;
  } else {
    if (stored.size() != inflated.size()) return false;
    std::memcpy(inflated.data(), stored.data(), stored.size());
  }
  if (shuffled) unshuffle_bytes(inflated, element_size, out);
  return true;
}

}  // namespace phew::io
