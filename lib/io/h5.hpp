// The HDF5 wrapper: the only code in phew that includes <hdf5.h>. Callers never see an hid_t.
// Reads convert to the requested C++ type (HDF5 does the conversion) after checking the stored type's
// class (integer / float / string), so that a float dataset is never silently read as an ID.
#pragma once

#include <phew/mpi/comm.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace phew::io {

enum class NumType { i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 };

template <typename T>
constexpr NumType num_type() {
  if constexpr (std::is_same_v<T, std::int8_t>)
    return NumType::i8;
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return NumType::u8;
  else if constexpr (std::is_same_v<T, std::int16_t>)
    return NumType::i16;
  else if constexpr (std::is_same_v<T, std::uint16_t>)
    return NumType::u16;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return NumType::i32;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return NumType::u32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return NumType::i64;
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return NumType::u64;
  else if constexpr (std::is_same_v<T, float>)
    return NumType::f32;
  else if constexpr (std::is_same_v<T, double>)
    return NumType::f64;
  else
    static_assert(sizeof(T) == 0, "unsupported element type");
}

// What a dataset or attribute holds.
struct TypeInfo {
  enum class Class { integer, floating, string, other } cls = Class::other;
  std::size_t size = 0;  // bytes per element
  bool is_signed = false;
  std::vector<std::uint64_t> shape;  // empty for a scalar
  std::string describe() const;      // "float32 [64,64,64]"
  std::uint64_t elements() const;
  bool is_float32() const { return cls == Class::floating && size == 4; }
};

// How a written dataset is stored: contiguous (the default), or in chunks of `chunk_rows` rows of its
// first dimension, byte-shuffled and compressed with deflate at `deflate` (1-9). A chunk never spans two
// ranks' rows when chunk_rows divides every rank's first row (one plane per chunk does).
struct Storage {
  std::uint64_t chunk_rows = 0;
  int deflate = 0;
};

// The threads lib/io runs on: to code the chunks of shuffled and deflated datasets when a file on one
// rank is written or read (h5_chunks.cpp), and to check the rows it reads. The tools set it from
// --threads (tool::threads_to_use); the bytes in a file are the same for any number. 1 until set (HDF5
// then codes the chunks itself).
void set_io_threads(int threads);
int io_threads();

// An open HDF5 file. Move-only; closes on destruction.
class File {
 public:
  // Opens for reading with the default (serial) driver; every rank may do this independently.
  // Throws Error(io) when the file cannot be opened as HDF5.
  static File open_read(const std::string& path);
  // Creates (truncating) a file for a collective parallel write over `comm` (MPI-IO). Collective.
  // `name`: what messages call the file (an output's final name while it is written under a temporary
  // one); the path itself by default.
  static File create(const std::string& path, const mpi::Comm& comm, const std::string& name = "");
  // Creates a file that lives in memory only (HDF5's core driver, no backing store), written by this
  // rank alone; image() gives its bytes (for a side output, committed with the tool's output).
  static File create_in_memory(const std::string& name);
  std::string image() const;

  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();
  void close();  // collective for parallel files (see close_abandoned_files for the unwinding case)

  const std::string& path() const { return path_; }
  bool parallel() const { return parallel_; }
  int rank() const { return rank_; }  // in the communicator of a parallel file, else 0

  // --- inspecting
  bool has(const std::string& object) const;  // a group or dataset at that path (parents checked too)
  bool has_attribute(const std::string& object, const std::string& name) const;
  TypeInfo dataset_info(const std::string& dataset) const;  // throws Error(input) when missing
  TypeInfo attribute_info(const std::string& object, const std::string& name) const;
  std::vector<std::string> list(const std::string& group) const;  // names of the group's members
  // Throws Error(io) naming the file when `dataset` is virtual and one of its source files is missing
  // (HDF5 would read zeros from it). Other datasets pass. (h5_checks.cpp)
  void check_virtual_sources(const std::string& dataset) const;

  // --- reading (independent, any rank)
  template <typename T>
  std::vector<T> read(const std::string& dataset) const {
    std::vector<T> out(dataset_info(dataset).elements());
    read_raw(dataset, 0, 0, true, num_type<T>(), out.data());
    return out;
  }
  // Rows [begin, begin+count) of the first dimension, all of the other dimensions.
  template <typename T>
  std::vector<T> read_rows(const std::string& dataset, std::uint64_t begin, std::uint64_t count) const {
    const TypeInfo info = dataset_info(dataset);
    std::uint64_t row = 1;
    for (std::size_t d = 1; d < info.shape.size(); ++d) row *= info.shape[d];
    std::vector<T> out(count * row);
    read_raw(dataset, begin, count, false, num_type<T>(), out.data());
    return out;
  }
  // The first row of an ascending 1-D dataset whose value is not below `value`: a binary search by
  // one-row reads down to 2^16 rows, then those rows read at once, so a few small reads however long
  // the dataset is. (A compressed dataset inflates a whole chunk for each read, and the cells' chunks
  // are 2^16 rows: one-row reads to the end were 21 chunks a search, the larger part of phew-merge's
  // inflate.)
  template <typename T>
  std::uint64_t first_row_not_below(const std::string& dataset, T value) const {
    constexpr std::uint64_t kRowsReadAtOnce = std::uint64_t{1} << 16;
    std::uint64_t lo = 0, hi = dataset_info(dataset).elements();
    while (hi - lo > kRowsReadAtOnce) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      if (read_rows<T>(dataset, mid, 1)[0] < value)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == hi) return lo;
    const std::vector<T> rows = read_rows<T>(dataset, lo, hi - lo);
    return lo + static_cast<std::uint64_t>(std::lower_bound(rows.begin(), rows.end(), value) - rows.begin());
  }
  // The same rows, read straight into `out` (which must hold count * row-size values).
  template <typename T>
  void read_rows_into(const std::string& dataset, std::uint64_t begin, std::uint64_t count, std::span<T> out) const {
    const TypeInfo info = dataset_info(dataset);
    std::uint64_t row = 1;
    for (std::size_t d = 1; d < info.shape.size(); ++d) row *= info.shape[d];
    if (out.size() != count * row) throw_size_mismatch(dataset, out.size(), count * row);
    read_raw(dataset, begin, count, false, num_type<T>(), out.data());
  }
  // A box of a 3-D dataset, [start, start + count) on each axis, straight into `out` in C order.
  template <typename T>
  void read_box_into(const std::string& dataset, const std::array<std::uint64_t, 3>& start,
                     const std::array<std::uint64_t, 3>& count, std::span<T> out) const {
    if (out.size() != count[0] * count[1] * count[2])
      throw_size_mismatch(dataset, out.size(), count[0] * count[1] * count[2]);
    read_box_raw(dataset, start, count, num_type<T>(), out.data());
  }
  template <typename T>
  std::vector<T> read_attribute(const std::string& object, const std::string& name) const {
    std::vector<T> out(attribute_info(object, name).elements());
    read_attribute_raw(object, name, num_type<T>(), out.data());
    return out;
  }
  template <typename T>
  T read_attribute_scalar(const std::string& object, const std::string& name) const {
    const auto v = read_attribute<T>(object, name);
    check_scalar(object, name, v.size());
    return v[0];
  }
  std::string read_attribute_string(const std::string& object, const std::string& name) const;
  // A 1-D attribute of variable-length strings (write_attribute's vector form). Throws Error(input).
  std::vector<std::string> read_attribute_strings(const std::string& object, const std::string& name) const;

  // --- writing (parallel files: every rank calls with the same arguments unless stated)
  void create_group(const std::string& group);
  template <typename T>
  void write_attribute(const std::string& object, const std::string& name, std::span<const T> values,
                       bool scalar = false) {
    write_attribute_raw(object, name, num_type<T>(), values.data(), values.size(), scalar);
  }
  template <typename T>
  void write_attribute(const std::string& object, const std::string& name, T value) {
    write_attribute_raw(object, name, num_type<T>(), &value, 1, true);
  }
  void write_attribute(const std::string& object, const std::string& name, const std::string& value);
  // A 1-D attribute of variable-length UTF-8 strings (h5py reads an array of str).
  void write_attribute(const std::string& object, const std::string& name, const std::vector<std::string>& values);
  void write_attribute(const std::string& object, const std::string& name, const char* value) {
    write_attribute(object, name, std::string(value));
  }
  // A fixed-length ASCII string (numpy reads it as bytes; some readers, e.g. ytree 2.x, need that).
  void write_attribute_fixed(const std::string& object, const std::string& name, const std::string& value);

  // A dataset of `global_shape` stored as file type F; this rank writes rows [row_begin, row_begin + rows)
  // from `data` (rows * row-size values, converted from T). Collective.
  template <typename F, typename T>
  void write_rows(const std::string& dataset, const std::vector<std::uint64_t>& global_shape, std::uint64_t row_begin,
                  std::span<const T> data, Storage storage = {}) {
    write_rows_raw(dataset, global_shape, num_type<F>(), row_begin, num_type<T>(), data.data(), data.size(), storage);
  }
  // A 1-D dataset of `rows` rows stored as file type F, created empty for writing in pieces: each rank
  // then writes its rows a piece at a time (write_rows_piece). Collective.
  template <typename F>
  void create_rows(const std::string& dataset, std::uint64_t rows, Storage storage = {}) {
    create_rows_raw(dataset, {rows}, num_type<F>(), storage);
  }
  // Rows [row_begin, row_begin + data.size()) of a dataset create_rows made, converted from T. Every rank
  // writes as many pieces as the others (an empty one when it has nothing left). Collective.
  template <typename T>
  void write_rows_piece(const std::string& dataset, std::uint64_t row_begin, std::span<const T> data) {
    write_rows_piece_raw(dataset, row_begin, num_type<T>(), data.data(), data.size());
  }
  // A dataset of `global_shape` stored as file type F; this rank writes the box [begin, begin + size)
  // from `data` (C order, converted from T). Collective.
  template <typename F, typename T>
  void write_box(const std::string& dataset, const std::vector<std::uint64_t>& global_shape,
                 const std::vector<std::uint64_t>& begin, const std::vector<std::uint64_t>& size,
                 std::span<const T> data, Storage storage = {}) {
    write_selection_raw(dataset, global_shape, num_type<F>(), begin, size, num_type<T>(), data.data(), storage);
  }
  // A table distributed over ranks in rank order: this rank's `data` (rows of `cols` values) goes after
  // the rows of lower ranks. Collective.
  template <typename T>
  void write_distributed(const std::string& dataset, std::span<const T> data, const mpi::Comm& comm,
                         std::uint64_t cols = 1, Storage storage = {}) {
    write_distributed(dataset, data, comm, cols > 1 ? std::vector<std::uint64_t>{cols} : std::vector<std::uint64_t>{},
                      storage);
  }
  // The same with rows of any shape: [rows][row_shape...] (every row holds the product of row_shape values).
  template <typename T>
  void write_distributed(const std::string& dataset, std::span<const T> data, const mpi::Comm& comm,
                         const std::vector<std::uint64_t>& row_shape, Storage storage = {}) {
    std::uint64_t width = 1;
    for (const std::uint64_t d : row_shape) width *= d;
    const std::uint64_t rows = width == 0 ? 0 : data.size() / width;
    const auto all = comm.all_gather(rows);
    std::uint64_t offset = 0, total = 0;
    for (int r = 0; r < comm.size(); ++r) {
      if (r < comm.rank()) offset += all[static_cast<std::size_t>(r)];
      total += all[static_cast<std::size_t>(r)];
    }
    std::vector<std::uint64_t> shape{total};
    shape.insert(shape.end(), row_shape.begin(), row_shape.end());
    write_rows<T, T>(dataset, shape, offset, data, storage);
  }
  // A dataset that every rank holds whole (small tables): written once, by rank 0. Collective.
  template <typename T>
  void write(const std::string& dataset, const std::vector<std::uint64_t>& shape, std::span<const T> data) {
    write_whole_raw(dataset, shape, num_type<T>(), data.data(), data.size());
  }
  template <typename T>
  void write(const std::string& dataset, std::span<const T> data) {
    write(dataset, {data.size()}, data);
  }

 private:
  File(std::int64_t id, std::string path, bool parallel, const mpi::Comm* comm);
  // For a parallel file: every rank learns of a failed collective write on any rank. Collective.
  void agree_on_write(bool failed, const std::string& what) const;
  // For a parallel file on more than one rank: Error(io) on every rank, before `what` starts, when the
  // device has less than `bytes` and a margin free (rank 0 asks). A collective write that meets a full
  // disk can leave the ranks in different HDF5 collectives (a hang): it is not begun. Collective.
  void check_room(std::uint64_t bytes, const std::string& what) const;
  void read_raw(const std::string& dataset, std::uint64_t begin, std::uint64_t count, bool all, NumType mem,
                void* out) const;
  void read_box_raw(const std::string& dataset, const std::array<std::uint64_t, 3>& start,
                    const std::array<std::uint64_t, 3>& count, NumType mem, void* out) const;
  void read_attribute_raw(const std::string& object, const std::string& name, NumType mem, void* out) const;
  void write_attribute_raw(const std::string& object, const std::string& name, NumType mem, const void* data,
                           std::size_t n, bool scalar);
  void write_selection_raw(const std::string& dataset, const std::vector<std::uint64_t>& shape, NumType file_type,
                           const std::vector<std::uint64_t>& begin, const std::vector<std::uint64_t>& size, NumType mem,
                           const void* data, Storage storage);
  void write_rows_raw(const std::string& dataset, const std::vector<std::uint64_t>& shape, NumType file_type,
                      std::uint64_t row_begin, NumType mem, const void* data, std::size_t n, Storage storage = {});
  void create_rows_raw(const std::string& dataset, const std::vector<std::uint64_t>& shape, NumType file_type,
                       Storage storage);
  void write_into_raw(const std::string& dataset, const std::vector<std::uint64_t>& begin,
                      const std::vector<std::uint64_t>& size, NumType mem, const void* data);
  void write_rows_piece_raw(const std::string& dataset, std::uint64_t row_begin, NumType mem, const void* data,
                            std::size_t rows);
  void write_whole_raw(const std::string& dataset, const std::vector<std::uint64_t>& shape, NumType mem,
                       const void* data, std::size_t n);
  void check_scalar(const std::string& object, const std::string& name, std::size_t n) const;
  [[noreturn]] void throw_size_mismatch(const std::string& dataset, std::size_t have, std::uint64_t need) const;

  std::int64_t id_ = -1;  // hid_t
  std::string path_;
  bool parallel_ = false;
  int rank_ = 0;
  const mpi::Comm* comm_ = nullptr;  // parallel files
};

// True when the file has the HDF5 signature at its start or after a user block (no HDF5 call, cheap;
// h5_checks.cpp).
bool is_hdf5(const std::string& path);

// Why HDF5 could not open a file that has its signature, for the error line: "truncated: 3000 of
// 46080 bytes" when the file is shorter than the end its superblock records, else "damaged".
std::string why_hdf5_cannot_open(const std::string& path);

// A parallel file whose object is destroyed while an exception unwinds is not closed there (closing is
// collective, and the other ranks may not be closing it: the job would hang); it is set aside instead.
// When every rank failed together (an agreed error), the tool runner closes them all here, before
// MPI_Finalize, so that no file is left open at the end. Collective.
void close_abandoned_files();

// Closes the HDF5 library while MPI is still running (HDF5 would otherwise do it inside MPI_Finalize).
// Collective.
void close_library();

// True after a collective write failed (a full disk): HDF5 1.10 cannot then close that file, nor shut
// down, without crashing or hanging in MPI-IO. The tool runner then ends the process without running
// HDF5's or MPI's shutdown (the temporary output is removed first); nothing else is left to write.
bool unusable();

}  // namespace phew::io
