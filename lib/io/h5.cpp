#include <phew/io/h5.hpp>

#include <phew/core/error.hpp>

#include <hdf5.h>

#include <phew/core/log.hpp>
#include <phew/core/watchdog.hpp>
#include <phew/mpi/agree.hpp>

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <numeric>
#include <optional>

static_assert(sizeof(hid_t) == sizeof(std::int64_t), "hid_t is stored as int64_t");

namespace phew::io {
namespace {

// Silence HDF5's own error stack printing: phew reports errors itself, in one line.
struct QuietHdf5 {
  QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};
void quiet() { static QuietHdf5 once; }

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

hid_t native(NumType t) {
  switch (t) {
    case NumType::i8: return H5T_NATIVE_INT8;
    case NumType::u8: return H5T_NATIVE_UINT8;
    case NumType::i16: return H5T_NATIVE_INT16;
    case NumType::u16: return H5T_NATIVE_UINT16;
    case NumType::i32: return H5T_NATIVE_INT32;
    case NumType::u32: return H5T_NATIVE_UINT32;
    case NumType::i64: return H5T_NATIVE_INT64;
    case NumType::u64: return H5T_NATIVE_UINT64;
    case NumType::f32: return H5T_NATIVE_FLOAT;
    case NumType::f64: return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_DOUBLE;
}

bool is_float(NumType t) { return t == NumType::f32 || t == NumType::f64; }

TypeInfo describe_type(hid_t type, hid_t space) {
  TypeInfo info;
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: info.cls = TypeInfo::Class::integer; break;
    case H5T_FLOAT: info.cls = TypeInfo::Class::floating; break;
    case H5T_STRING: info.cls = TypeInfo::Class::string; break;
    default: info.cls = TypeInfo::Class::other;
  }
  info.size = H5Tget_size(type);
  info.is_signed = info.cls == TypeInfo::Class::integer && H5Tget_sign(type) == H5T_SGN_2;
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank > 0) {
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    info.shape.assign(dims.begin(), dims.end());
  }
  return info;
}

// Refuses to read a float into an integer or a string into a number: the conversion HDF5 would do is
// almost always a sign of the wrong dataset.
void check_class(const TypeInfo& info, NumType mem, const std::string& where) {
  const bool want_float = is_float(mem);
  if (info.cls == TypeInfo::Class::floating && !want_float)
    throw core::Error::input("{}: holds {} but integers are expected", where, info.describe());
  if (info.cls != TypeInfo::Class::floating && info.cls != TypeInfo::Class::integer)
    throw core::Error::input("{}: holds {} but numbers are expected", where, info.describe());
}

}  // namespace

std::string TypeInfo::describe() const {
  std::string t;
  switch (cls) {
    case Class::integer: t = (is_signed ? "int" : "uint") + std::to_string(size * 8); break;
    case Class::floating: t = "float" + std::to_string(size * 8); break;
    case Class::string: t = "string"; break;
    case Class::other: t = "non-numeric"; break;
  }
  if (shape.empty()) return t + " scalar";
  std::string s = t + " [";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::uint64_t TypeInfo::elements() const {
  return std::accumulate(shape.begin(), shape.end(), std::uint64_t{1}, std::multiplies<>());
}

File::File(std::int64_t id, std::string path, bool parallel, const mpi::Comm* comm)
    : id_(id), path_(std::move(path)), parallel_(parallel), rank_(comm ? comm->rank() : 0), comm_(comm) {}

namespace {
bool g_unusable = false;

std::vector<hid_t>& abandoned() {
  static std::vector<hid_t> ids;
  return ids;
}

// What HDF5's error stack says went wrong, innermost first: the system's reason ("No space left on
// device") is usually in the last entry.
herr_t collect(unsigned, const H5E_error2_t* e, void* out) {
  auto& text = *static_cast<std::string*>(out);
  if (e->desc && *e->desc) text = e->desc;
  return 0;
}
std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &reason);
  return reason;
}
}  // namespace

namespace {
// Bytes free for unprivileged writes in the folder of `path` (nullopt when it cannot be told).
std::optional<std::uint64_t> free_bytes_beside(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  struct statvfs st;
  if (statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}
}  // namespace

bool unusable() { return g_unusable; }

void close_abandoned_files() {
  if (!g_unusable)
    for (hid_t id : abandoned()) H5Fclose(id);
  abandoned().clear();
}

void close_library() {
  if (!g_unusable) H5close();
}

void File::agree_on_write(bool failed, const std::string& what) const {
  std::optional<core::Error> error;
  if (failed) {
    const int e = errno;
    std::string reason = hdf5_reason();
    if (e == ENOSPC || e == EDQUOT || e == EIO) reason = std::strerror(e);
    // MPI-IO does not pass the system's reason up through HDF5: a full disk reads "file write failed".
    // Ask the file system.
    if (const auto free = free_bytes_beside(path_); free && *free < (std::uint64_t{1} << 20))
      reason = fmt::format("no space left on device ({} bytes free)", *free);
    error = core::Error::io("{}: {} failed{}", path_, what, reason.empty() ? "" : ": " + reason);
    // Other ranks may be left inside HDF5's collectives and never agree: end within seconds regardless.
    core::end_process_after(std::chrono::seconds(10), exit_code(core::ErrorKind::io), core::log::tool_name() + ": error: " + error->what());
  }
  if (parallel_ && comm_) {
    try {
      mpi::agree_on(*comm_, error ? &*error : nullptr);
    } catch (const core::Error&) {
      g_unusable = true;  // a collective write failed: HDF5's state can no longer be trusted
      throw;
    }
  } else if (error) {
    throw *error;
  }
}

File File::open_read(const std::string& path) {
  quiet();
  if (!std::ifstream(path).good()) throw core::Error::io("{}: cannot open (no such file or no permission)", path);
  if (!is_hdf5(path)) throw core::Error::input("{}: not an HDF5 file", path);
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) throw core::Error::io("{}: HDF5 cannot open the file", path);
  return File(id, path, false, nullptr);
}

File File::create(const std::string& path, const mpi::Comm& comm) {
  quiet();
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_mpio(fapl, comm.raw(), MPI_INFO_NULL);
  // Later file-format features: attributes larger than 64 KiB (the manifest) are stored densely.
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  const bool ok = comm.min<int>(id >= 0 ? 1 : 0) == 1;
  if (!ok) {
    if (id >= 0) H5Fclose(id);
    throw core::Error::io("{}: cannot create the file", path);
  }
  return File(id, path, true, &comm);
}

File File::create_in_memory(const std::string& name) {
  quiet();
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_core(fapl, 1 << 20, 0);
  // The oldest file format (no metadata checksums): an image taken while the file is open is then a
  // valid file, which it is not with the checksummed superblock of later formats.
  const hid_t id = H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (id < 0) throw core::Error::io("{}: cannot create the file in memory", name);
  return File(id, name, false, nullptr);
}

std::string File::image() const {
  H5Fflush(id_, H5F_SCOPE_GLOBAL);
  const ssize_t n = H5Fget_file_image(id_, nullptr, 0);
  std::string bytes(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n <= 0 || H5Fget_file_image(id_, bytes.data(), bytes.size()) != n)
    throw core::Error::io("{}: cannot take the file's image", path_);
  return bytes;
}

File::File(File&& o) noexcept
    : id_(o.id_), path_(std::move(o.path_)), parallel_(o.parallel_), rank_(o.rank_), comm_(o.comm_) {
  o.id_ = -1;
}

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0) H5Fclose(id_);
    id_ = o.id_;
    path_ = std::move(o.path_);
    parallel_ = o.parallel_;
    rank_ = o.rank_;
    comm_ = o.comm_;
    o.id_ = -1;
  }
  return *this;
}

File::~File() {
  if (id_ < 0) return;
  if (parallel_ && std::uncaught_exceptions() > 0) abandoned().push_back(id_);
  else H5Fclose(id_);  // a failure here has no one to report to; close() reports it
  id_ = -1;
}

void File::close() {
  if (id_ < 0) return;
  // What is still buffered is written by a flush first: it can fail (a full disk) and leave the file open,
  // where a failed close would leave HDF5 unable to shut down (see unusable()).
  errno = 0;
  const bool flushed = H5Fflush(id_, H5F_SCOPE_GLOBAL) >= 0;
  if (parallel_) agree_on_write(!flushed, "writing the file");  // the File stays open: ~File abandons it
  else if (!flushed) throw core::Error::io("{}: writing the file failed", path_);
  const herr_t status = H5Fclose(id_);
  id_ = -1;
  if (status < 0) throw core::Error::io("{}: closing the file failed", path_);
}

bool File::has(const std::string& object) const {
  // Check every prefix: H5Lexists fails on a missing intermediate group.
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = object.find('/', pos + 1);
    const std::string prefix = object.substr(0, pos);
    if (prefix.empty() || prefix == "/") continue;
    if (H5Lexists(id_, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return true;
}

bool File::has_attribute(const std::string& object, const std::string& name) const {
  if (object != "/" && !has(object)) return false;
  return H5Aexists_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

TypeInfo File::dataset_info(const std::string& dataset) const {
  if (!has(dataset)) throw core::Error::input("{}: missing dataset {}", path_, dataset);
  Id d(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.ok()) throw core::Error::input("{}: {} is not a dataset", path_, dataset);
  Id type(H5Dget_type(d), H5Tclose);
  Id space(H5Dget_space(d), H5Sclose);
  return describe_type(type, space);
}

TypeInfo File::attribute_info(const std::string& object, const std::string& name) const {
  if (!has_attribute(object, name)) throw core::Error::input("{}: missing attribute {} of {}", path_, name, object);
  Id a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  Id type(H5Aget_type(a), H5Tclose);
  Id space(H5Aget_space(a), H5Sclose);
  return describe_type(type, space);
}

std::vector<std::string> File::list(const std::string& group) const {
  if (group != "/" && !has(group)) throw core::Error::input("{}: missing group {}", path_, group);
  Id g(H5Gopen2(id_, group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.ok()) throw core::Error::input("{}: {} is not a group", path_, group);
  H5G_info_t info;
  H5Gget_info(g, &info);
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t n = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string name(static_cast<std::size_t>(n), '\0');
    H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), static_cast<std::size_t>(n) + 1,
                       H5P_DEFAULT);
    names.push_back(name);
  }
  return names;
}

void File::read_raw(const std::string& dataset, std::uint64_t begin, std::uint64_t count, bool all, NumType mem,
                    void* out) const {
  const TypeInfo info = dataset_info(dataset);
  const std::string where = path_ + ": " + dataset;
  check_class(info, mem, where);
  Id d(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  herr_t status;
  if (all) {
    status = H5Dread(d, native(mem), H5S_ALL, H5S_ALL, H5P_DEFAULT, out);
  } else {
    if (info.shape.empty() || begin + count > info.shape[0])
      throw core::Error::input("{}: rows {}..{} requested but it has {}", where, begin, begin + count,
                         info.shape.empty() ? 0 : info.shape[0]);
    if (count == 0) return;
    Id fspace(H5Dget_space(d), H5Sclose);
    std::vector<hsize_t> start(info.shape.size(), 0), cnt(info.shape.begin(), info.shape.end());
    start[0] = begin;
    cnt[0] = count;
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, cnt.data(), nullptr);
    Id mspace(H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr), H5Sclose);
    status = H5Dread(d, native(mem), mspace, fspace, H5P_DEFAULT, out);
  }
  if (status < 0) throw core::Error::io("{}: read failed", where);
}

void File::read_attribute_raw(const std::string& object, const std::string& name, NumType mem, void* out) const {
  const std::string where = path_ + ": attribute " + name + " of " + object;
  check_class(attribute_info(object, name), mem, where);
  Id a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (H5Aread(a, native(mem), out) < 0) throw core::Error::io("{}: read failed", where);
}

void File::check_scalar(const std::string& object, const std::string& name, std::size_t n) const {
  if (n != 1) throw core::Error::input("{}: attribute {} of {} has {} values, one expected", path_, name, object, n);
}

void File::throw_size_mismatch(const std::string& dataset, std::size_t have, std::uint64_t need) const {
  throw core::Error::internal("{}: reading {} values of {} into a buffer of {}", path_, need, dataset, have);
}

std::string File::read_attribute_string(const std::string& object, const std::string& name) const {
  const TypeInfo info = attribute_info(object, name);
  const std::string where = path_ + ": attribute " + name + " of " + object;
  if (info.cls != TypeInfo::Class::string) throw core::Error::input("{}: holds {}, a string expected", where, info.describe());
  Id a(H5Aopen_by_name(id_, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  Id type(H5Aget_type(a), H5Tclose);
  if (H5Tis_variable_str(type) > 0) {
    Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem, H5T_VARIABLE);
    H5Tset_cset(mem, H5Tget_cset(type));
    char* s = nullptr;
    if (H5Aread(a, mem, &s) < 0) throw core::Error::io("{}: read failed", where);
    std::string out = s ? s : "";
    H5free_memory(s);
    return out;
  }
  std::string out(H5Tget_size(type), '\0');
  if (H5Aread(a, type, out.data()) < 0) throw core::Error::io("{}: read failed", where);
  out.resize(std::strlen(out.c_str()));  // fixed-length strings may be NUL-padded
  return out;
}

void File::create_group(const std::string& group) {
  Id g(H5Gcreate2(id_, group.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!g.ok()) throw core::Error::io("{}: cannot create group {}", path_, group);
}

void File::write_attribute_raw(const std::string& object, const std::string& name, NumType mem, const void* data,
                               std::size_t n, bool scalar) {
  const hsize_t dims = n;
  Id space(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &dims, nullptr), H5Sclose);
  Id a(H5Acreate_by_name(id_, object.c_str(), name.c_str(), native(mem), space, H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT),
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
  Id d(H5Dcreate2(id_, dataset.c_str(), native(file_type), fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  agree_on_write(!d.ok(), "creating dataset " + dataset);
  std::uint64_t row = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) row *= shape[i];
  if (row * (shape.empty() ? 1 : shape[0]) == 0) return;  // an empty dataset: nothing to write (MPI-IO fails on it)
  const std::uint64_t rows = row ? n / row : 0;
  std::vector<hsize_t> start(dims.size(), 0), count(dims);
  start[0] = row_begin;
  count[0] = rows;
  if (rows == 0)
    H5Sselect_none(fspace);
  else
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  Id mspace(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
  if (rows == 0) H5Sselect_none(mspace);
  Id dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  if (parallel_) H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
  static const double empty = 0;  // HDF5 refuses a null buffer even when nothing is selected
  errno = 0;
  const herr_t status = H5Dwrite(d, native(mem), mspace, fspace, dxpl, data ? data : &empty);
  agree_on_write(status < 0, "writing " + dataset);
}

void File::write_whole_raw(const std::string& dataset, const std::vector<std::uint64_t>& shape, NumType mem,
                           const void* data, std::size_t n) {
  write_rows_raw(dataset, shape, mem, 0, mem, data, rank_ == 0 ? n : 0);
}

}  // namespace phew::io
