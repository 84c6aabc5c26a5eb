// One chunk of a dataset coded as HDF5's shuffle and deflate filters code it (H5Zshuffle.c: byte k of
// every element together; H5Zdeflate.c: zlib's compress2 at the dataset's level), without HDF5: so that
// the chunks of a dataset can be coded on threads and written (or read) as raw chunks, and still be the
// very bytes HDF5's own filter pipeline writes. h5_chunks.cpp uses it; no HDF5 here, so it is tested alone.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace phew::io {

// Byte k of element i goes to byte k * n + i (n elements of `element_size` bytes; bytes past the last
// whole element stay at the end, as HDF5 leaves them).
void shuffle_bytes(std::span<const std::byte> in, std::size_t element_size, std::span<std::byte> out);
void unshuffle_bytes(std::span<const std::byte> in, std::size_t element_size, std::span<std::byte> out);

// The stored bytes of a chunk: shuffled (when `shuffle`) and deflated at `level` (1-9). `scratch` is
// reused between calls.
std::vector<std::byte> encode_chunk(std::span<const std::byte> chunk, std::size_t element_size, bool shuffle, int level,
                                    std::vector<std::byte>& scratch);

// The chunk back from its stored bytes into `out` (its full size): inflated when `deflated`, then
// unshuffled when `shuffled` (HDF5 skips a filter that failed on a chunk and says so in the chunk's
// filter mask, so either may be off). False when the bytes are not a zlib stream of exactly out.size()
// bytes (a damaged file).
bool decode_chunk(std::span<const std::byte> stored, std::size_t element_size, bool shuffled, bool deflated,
                  std::span<std::byte> out, std::vector<std::byte>& scratch);

}  // namespace phew::io
