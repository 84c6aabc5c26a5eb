// What the HDF5 wrapper's sources (lib/io/h5.cpp, h5_read.cpp, h5_write.cpp) share: an hid_t closed on
// scope exit and the native type of a NumType. Private to them: it includes <hdf5.h>, so it is not
// installed with the other headers, and nothing else in phew includes it.
#pragma once

#include <phew/io/h5.hpp>

#include <hdf5.h>

namespace phew::io::h5 {

// Closes an hid_t on scope exit.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  operator hid_t() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

inline hid_t native(NumType t) {
  switch (t) {
    case NumType::i8:
      return H5T_NATIVE_INT8;
    case NumType::u8:
      return H5T_NATIVE_UINT8;
    case NumType::i16:
      return H5T_NATIVE_INT16;
    case NumType::u16:
      return H5T_NATIVE_UINT16;
    case NumType::i32:
      return H5T_NATIVE_INT32;
    case NumType::u32:
      return H5T_NATIVE_UINT32;
    case NumType::i64:
      return H5T_NATIVE_INT64;
    case NumType::u64:
      return H5T_NATIVE_UINT64;
    case NumType::f32:
      return H5T_NATIVE_FLOAT;
    case NumType::f64:
      return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_DOUBLE;
}

// The box [begin, begin + size) (whole rows: only the first dimension partial) or the rows
// [row_begin, row_begin + rows) of a dataset of row chunks, shuffled and deflated, coded on the
// io threads (set_io_threads) and written or read as raw chunks (h5_chunks.cpp). not_here: the
// dataset, the selection, the memory type or the thread count is not one this does; the caller then
// goes through H5Dwrite or H5Dread. failed: HDF5 refused a chunk, or a stored chunk is damaged.
enum class ChunkIo { not_here, done, failed };
ChunkIo write_rows_as_chunks(hid_t dataset, hid_t mem_type, const std::vector<std::uint64_t>& begin,
                             const std::vector<std::uint64_t>& size, const void* data);
ChunkIo read_rows_from_chunks(hid_t dataset, hid_t mem_type, std::uint64_t row_begin, std::uint64_t rows, void* out);

}  // namespace phew::io::h5
