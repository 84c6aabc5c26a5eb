// The HDF5 wrapper: datasets of row chunks, shuffled and deflated, coded on threads. HDF5 runs a
// dataset's filters on one thread, chunk after chunk; deflate then takes most of a tool's write (the
// patches' and catalogues' cell lists). Here the chunks are coded by chunk_codec.cpp on the io
// threads and handed to HDF5 as raw chunks (H5Dwrite_chunk, H5Dread_chunk): the same bytes in the file
// as HDF5's pipeline writes, so any reader reads them. Only where that is certain: a file on the POSIX
// or core driver (the raw chunk calls refuse MPI-IO), the filters phew writes (deflate, after shuffle or
// alone), chunks of whole rows, a selection of whole chunks (the last may end with the dataset), and
// more than one thread; everything else goes through H5Dwrite and H5Dread as before.
#include <phew/core/threads.hpp>
#include <phew/io/chunk_codec.hpp>
#include <phew/io/h5_private.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>

namespace phew::io {
namespace {

using h5::Id;

std::atomic<int> g_io_threads{1};

// Raw chunks read or coded at a time: the stored bytes of a batch are held together.
constexpr std::uint64_t kBatchBytes = std::uint64_t{64} << 20;

// How a dataset is chunked and filtered, when it is the kind this file codes itself.
struct ChunkedRows {
  std::vector<std::uint64_t> dims;  // the dataset's
  std::uint64_t chunk_rows = 0;
  std::size_t element = 0;    // bytes per element of the file type
  std::size_t row_bytes = 0;  // bytes per row
  bool shuffle = false;
  int level = 0;
  bool as_stored = false;  // the memory type is the file type: no conversion
  std::size_t chunk_bytes() const { return static_cast<std::size_t>(chunk_rows) * row_bytes; }
  // Where chunk c (counted along the rows) starts in the dataset, as the raw chunk calls take it.
  std::vector<hsize_t> offset_of(std::uint64_t c) const {
    std::vector<hsize_t> offset(dims.size(), 0);
    offset[0] = c * chunk_rows;
    return offset;
  }
};

// `mem`: the memory type of the read or write.
std::optional<ChunkedRows> row_chunks(hid_t d, hid_t mem) {
  Id dcpl(H5Dget_create_plist(d), H5Pclose);
  if (!dcpl.ok() || H5Pget_layout(dcpl) != H5D_CHUNKED) return std::nullopt;
  Id space(H5Dget_space(d), H5Sclose);
  Id type(H5Dget_type(d), H5Tclose);
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 1 || H5Tget_class(type) == H5T_VLEN || H5Tis_variable_str(type) > 0) return std::nullopt;
  ChunkedRows rc;
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  rc.dims.assign(dims.begin(), dims.end());
  std::vector<hsize_t> chunk(rc.dims.size());
  if (H5Pget_chunk(dcpl, rank, chunk.data()) != rank) return std::nullopt;
  for (std::size_t i = 1; i < chunk.size(); ++i)
    if (chunk[i] != rc.dims[i]) return std::nullopt;
  rc.chunk_rows = chunk[0];
  rc.element = H5Tget_size(type);
  rc.as_stored = H5Tequal(type, mem) > 0;
  rc.row_bytes = rc.element;
  for (std::size_t i = 1; i < rc.dims.size(); ++i) rc.row_bytes *= static_cast<std::size_t>(rc.dims[i]);
  if (rc.chunk_rows == 0 || rc.row_bytes == 0 || rc.dims[0] == 0) return std::nullopt;

  const int n = H5Pget_nfilters(dcpl);
  if (n < 1 || n > 2) return std::nullopt;
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t nvalues = 4;
    unsigned values[4] = {0, 0, 0, 0};
    const H5Z_filter_t f =
        H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nvalues, values, 0, nullptr, &config);
    if (i == 0 && n == 2 && f == H5Z_FILTER_SHUFFLE)
      rc.shuffle = true;
    else if (i == n - 1 && f == H5Z_FILTER_DEFLATE && nvalues >= 1)
      rc.level = static_cast<int>(values[0]);
    else
      return std::nullopt;
  }
  return rc;
}

}  // namespace

void set_io_threads(int threads) { g_io_threads = std::max(threads, 1); }
int io_threads() { return g_io_threads; }

namespace h5 {

ChunkIo write_rows_as_chunks(hid_t d, hid_t mem, const std::vector<std::uint64_t>& begin,
                             const std::vector<std::uint64_t>& size, const void* data) {
  const int threads = io_threads();
  if (threads < 2 || begin.empty() || size.size() != begin.size() || size[0] == 0) return ChunkIo::not_here;
  const std::optional<ChunkedRows> rc = row_chunks(d, mem);
  if (!rc || rc->dims.size() != begin.size() || !rc->as_stored) return ChunkIo::not_here;
  for (std::size_t i = 1; i < begin.size(); ++i)
    if (begin[i] != 0 || size[i] != rc->dims[i]) return ChunkIo::not_here;
  const std::uint64_t row_begin = begin[0], rows = size[0];
  const std::uint64_t end = row_begin + rows;
  if (row_begin % rc->chunk_rows != 0 || (end % rc->chunk_rows != 0 && end != rc->dims[0]) || end > rc->dims[0])
    return ChunkIo::not_here;
  const std::uint64_t first = row_begin / rc->chunk_rows, n_chunks = (rows + rc->chunk_rows - 1) / rc->chunk_rows;
  if (n_chunks < 2) return ChunkIo::not_here;

  const auto* bytes = static_cast<const std::byte*>(data);
  const std::size_t chunk_bytes = rc->chunk_bytes();
  const std::uint64_t per_batch =
      std::max<std::uint64_t>(kBatchBytes / chunk_bytes, static_cast<std::uint64_t>(threads));
  std::vector<std::vector<std::byte>> coded;
  for (std::uint64_t b = 0; b < n_chunks; b += per_batch) {
    const std::uint64_t nb = std::min(per_batch, n_chunks - b);
    coded.assign(nb, {});
    std::vector<std::vector<std::byte>> scratch(static_cast<std::size_t>(threads)), padded(scratch.size());
    core::parallel_for(threads, nb, 1, [&](std::size_t i0, std::size_t i1, int t) {
      for (std::size_t i = i0; i < i1; ++i) {
        const std::uint64_t c = b + i, chunk_row = c * rc->chunk_rows;
        const std::uint64_t have = std::min<std::uint64_t>(rc->chunk_rows, rows - chunk_row);
        std::span<const std::byte> chunk(bytes + chunk_row * rc->row_bytes, have * rc->row_bytes);
        if (have < rc->chunk_rows) {  // the dataset's last chunk: HDF5 stores it whole, zeros past the end
          auto& pad = padded[static_cast<std::size_t>(t)];
          pad.assign(chunk_bytes, std::byte{0});
          std::memcpy(pad.data(), chunk.data(), chunk.size());
          chunk = pad;
        }
        coded[i] = encode_chunk(chunk, rc->element, rc->shuffle, rc->level, scratch[static_cast<std::size_t>(t)]);
      }
    });
    for (std::uint64_t i = 0; i < nb; ++i) {
      if (coded[i].empty()) return ChunkIo::failed;
      const std::vector<hsize_t> offset = rc->offset_of(first + b + i);
      if (H5Dwrite_chunk(d, H5P_DEFAULT, 0, offset.data(), coded[i].size(), coded[i].data()) < 0)
        return ChunkIo::failed;
    }
  }
  return ChunkIo::done;
}

ChunkIo read_rows_from_chunks(hid_t d, hid_t mem, std::uint64_t row_begin, std::uint64_t rows, void* out) {
  const int threads = io_threads();
  if (threads < 2 || rows == 0) return ChunkIo::not_here;
  const std::optional<ChunkedRows> rc = row_chunks(d, mem);
  if (!rc || row_begin + rows > rc->dims[0]) return ChunkIo::not_here;
  const std::uint64_t first = row_begin / rc->chunk_rows, last = (row_begin + rows - 1) / rc->chunk_rows;
  const std::uint64_t n_chunks = last - first + 1;
  if (n_chunks < 2) return ChunkIo::not_here;
  std::vector<hsize_t> stored(n_chunks);
  for (std::uint64_t i = 0; i < n_chunks; ++i) {
    const std::vector<hsize_t> offset = rc->offset_of(first + i);
    // A chunk never written has no storage (HDF5 reads the fill value): left to H5Dread.
    if (H5Dget_chunk_storage_size(d, offset.data(), &stored[i]) < 0 || stored[i] == 0) return ChunkIo::not_here;
  }

  // Rows land in `out` when the types agree, else in a buffer of the file type converted after.
  const bool convert = !rc->as_stored;
  Id file_type(H5Dget_type(d), H5Tclose);
  const std::size_t mem_element = H5Tget_size(mem);
  const std::size_t values_per_row = rc->row_bytes / rc->element;
  const std::size_t chunk_bytes = rc->chunk_bytes();
  const std::uint64_t per_batch =
      std::max<std::uint64_t>(kBatchBytes / chunk_bytes, static_cast<std::uint64_t>(threads));
  auto* dest = static_cast<std::byte*>(out);
  std::vector<std::vector<std::byte>> raw;
  std::vector<std::uint32_t> mask;
  std::vector<std::byte> converted;
  for (std::uint64_t b = 0; b < n_chunks; b += per_batch) {
    const std::uint64_t nb = std::min(per_batch, n_chunks - b);
    raw.assign(nb, {});
    mask.assign(nb, 0);
    for (std::uint64_t i = 0; i < nb; ++i) {
      const std::vector<hsize_t> offset = rc->offset_of(first + b + i);
      raw[i].resize(stored[b + i]);
      if (H5Dread_chunk(d, H5P_DEFAULT, offset.data(), &mask[i], raw[i].data()) < 0) return ChunkIo::failed;
    }
    // The batch's rows [lo, hi) of the selection.
    const std::uint64_t lo = std::max(row_begin, (first + b) * rc->chunk_rows);
    const std::uint64_t hi = std::min(row_begin + rows, (first + b + nb) * rc->chunk_rows);
    std::byte* target = dest + (lo - row_begin) * values_per_row * mem_element;
    if (convert) converted.assign((hi - lo) * values_per_row * std::max(mem_element, rc->element), std::byte{0});
    std::byte* into = convert ? converted.data() : target;
    std::atomic<bool> damaged{false};
    std::vector<std::vector<std::byte>> chunk(static_cast<std::size_t>(threads)), scratch(chunk.size());
    core::parallel_for(threads, nb, 1, [&](std::size_t i0, std::size_t i1, int t) {
      auto& whole = chunk[static_cast<std::size_t>(t)];
      whole.resize(chunk_bytes);
      for (std::size_t i = i0; i < i1; ++i) {
        // A set bit in the mask: that filter was skipped for this chunk when it was written.
        const bool shuffled = rc->shuffle && !(mask[i] & 1u), deflated = !(mask[i] & (rc->shuffle ? 2u : 1u));
        if (!decode_chunk(raw[i], rc->element, shuffled, deflated, whole, scratch[static_cast<std::size_t>(t)])) {
          damaged = true;
          continue;
        }
        const std::uint64_t c0 = (first + b + i) * rc->chunk_rows;
        const std::uint64_t r0 = std::max(lo, c0), r1 = std::min(hi, c0 + rc->chunk_rows);
        std::memcpy(into + (r0 - lo) * rc->row_bytes, whole.data() + (r0 - c0) * rc->row_bytes,
                    (r1 - r0) * rc->row_bytes);
      }
    });
    if (damaged) return ChunkIo::failed;
    if (convert) {
      if (H5Tconvert(file_type, mem, (hi - lo) * values_per_row, converted.data(), nullptr, H5P_DEFAULT) < 0)
        return ChunkIo::failed;
      std::memcpy(target, converted.data(), (hi - lo) * values_per_row * mem_element);
    }
  }
  return ChunkIo::done;
}

}  // namespace h5
}  // namespace phew::io
