// The HDF5 wrapper: writing groups, attributes and datasets (for a parallel file, collective).
#include <phew/io/h5.hpp>

#include <phew/core/error.hpp>
#include <phew/io/h5_private.hpp>

#include <algorithm>
#include <cerrno>

namespace phew::io {

using h5::Id;
using h5::native;

void File::create_group(const std::string& group) {
  Id g(H5Gcreate2(id_, group.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!g.ok()) throw core::Error::io("{}: cannot create group {}", path_, group);
}

void File::write_attribute_raw(const std::string& object, const std::string& name, NumType mem, const void* data,
                               std::size_t n, bool scalar) {
  const hsize_t dims = n;
  Id space(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &dims, nullptr), H5Sclose);
  Id a(H5Acreate_by_name(id_, object.c_str(), name.c_str(), native(mem), space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
       H5Aclose);
  if (!a.ok() || H5Awrite(a, native(mem), data) < 0)
    throw core::Error::io("{}: cannot write attribute {} of {}", path_, name, object);
}

void File::write_attribute(const std::string& object, const std::string& name, const std::string& value) {
  // Variable-length UTF-8: h5py reads it as str, h5dump shows it, and any length fits.
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id a(H5Acreate_by_name(id_, object.c_str(), name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
       H5Aclose);
  const char* text = value.c_str();
  if (!a.ok() || H5Awrite(a, type, &text) < 0)
    throw core::Error::io("{}: cannot write attribute {} of {}", path_, name, object);
}

void File::write_attribute(const std::string& object, const std::string& name, const std::vector<std::string>& values) {
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const hsize_t n = values.size();
  Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Id a(H5Acreate_by_name(id_, object.c_str(), name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
       H5Aclose);
  std::vector<const char*> text;
  for (const std::string& v : values) text.push_back(v.c_str());
  if (!a.ok() || H5Awrite(a, type, text.data()) < 0)
    throw core::Error::io("{}: cannot write attribute {} of {}", path_, name, object);
}

void File::write_attribute_fixed(const std::string& object, const std::string& name, const std::string& value) {
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, std::max<std::size_t>(value.size(), 1));
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Id a(H5Acreate_by_name(id_, object.c_str(), name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
       H5Aclose);
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  if (!a.ok() || H5Awrite(a, type, padded.data()) < 0)
    throw core::Error::io("{}: cannot write attribute {} of {}", path_, name, object);
}

void File::write_rows_raw(const std::string& dataset, const std::vector<std::uint64_t>& shape, NumType file_type,
                          std::uint64_t row_begin, NumType mem, const void* data, std::size_t n, Storage storage) {
  std::uint64_t row = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) row *= shape[i];
  std::vector<std::uint64_t> start(shape.size(), 0), count(shape);
  if (!shape.empty()) {
    start[0] = row_begin;
    count[0] = row ? n / row : 0;
  }
  write_selection_raw(dataset, shape, file_type, start, count, mem, data, storage);
}

void File::create_rows_raw(const std::string& dataset, const std::vector<std::uint64_t>& shape, NumType file_type,
                           Storage storage) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Id fspace(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (storage.chunk_rows > 0 && !dims.empty() && dims[0] > 0) {
    std::vector<hsize_t> chunk(dims);
    chunk[0] = std::min<hsize_t>(storage.chunk_rows, dims[0]);
    for (hsize_t& c : chunk) c = std::max<hsize_t>(c, 1);
    H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, static_cast<unsigned>(storage.deflate));
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
  }
  std::uint64_t all = 1;
  for (const std::uint64_t d : shape) all *= d;
  check_room(all * H5Tget_size(native(file_type)), "writing " + dataset);
  Id d(H5Dcreate2(id_, dataset.c_str(), native(file_type), fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  agree_on_write(!d.ok(), "creating dataset " + dataset);
}

void File::write_into_raw(const std::string& dataset, const std::vector<std::uint64_t>& begin,
                          const std::vector<std::uint64_t>& size, NumType mem, const void* data) {
  Id d(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.ok()) throw core::Error::internal("{}: dataset {} was not created", path_, dataset);
  Id fspace(H5Dget_space(d), H5Sclose);
  if (H5Sget_simple_extent_npoints(fspace) == 0) return;  // an empty dataset: nothing to write (MPI-IO fails on it)
  std::uint64_t mine = 1;
  for (const std::uint64_t n : size) mine *= n;
  std::vector<hsize_t> start(begin.begin(), begin.end()), count(size.begin(), size.end());
  if (mine == 0)
    H5Sselect_none(fspace);
  else
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  for (hsize_t& c : count) c = std::max<hsize_t>(c, 1);  // a valid memory space even when nothing is selected
  Id mspace(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
  if (mine == 0) H5Sselect_none(mspace);
  const bool mpi_io = parallel_ && comm_->size() > 1;
  if (!mpi_io && mine > 0) {  // row chunks coded on threads, where h5_chunks.cpp can
    errno = 0;
    const h5::ChunkIo done = h5::write_rows_as_chunks(d, native(mem), begin, size, data);
    if (done != h5::ChunkIo::not_here) {
      agree_on_write(done == h5::ChunkIo::failed, "writing " + dataset);
      return;
    }
  }
  Id dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  if (mpi_io) H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);  // MPI-IO only beyond one rank (File::create)
  static const double empty = 0;                             // HDF5 refuses a null buffer even when nothing is selected
  errno = 0;
  const herr_t status = H5Dwrite(d, native(mem), mspace, fspace, dxpl, data && mine ? data : &empty);
  agree_on_write(status < 0, "writing " + dataset);
}

void File::write_selection_raw(const std::string& dataset, const std::vector<std::uint64_t>& shape, NumType file_type,
                               const std::vector<std::uint64_t>& begin, const std::vector<std::uint64_t>& size,
                               NumType mem, const void* data, Storage storage) {
  create_rows_raw(dataset, shape, file_type, storage);
  write_into_raw(dataset, begin, size, mem, data);
}

void File::write_rows_piece_raw(const std::string& dataset, std::uint64_t row_begin, NumType mem, const void* data,
                                std::size_t rows) {
  write_into_raw(dataset, {row_begin}, {rows}, mem, data);
}

void File::write_whole_raw(const std::string& dataset, const std::vector<std::uint64_t>& shape, NumType mem,
                           const void* data, std::size_t n) {
  write_rows_raw(dataset, shape, mem, 0, mem, data, rank_ == 0 ? n : 0);
}

}  // namespace phew::io
