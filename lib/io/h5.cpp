// The HDF5 wrapper: a file's life (open, create, close, abandoned on an error) and a failed write
// agreed by every rank. Reading is in h5_read.cpp, writing in h5_write.cpp.
#include <phew/io/h5.hpp>

#include <phew/core/error.hpp>
#include <phew/core/files.hpp>
#include <phew/core/log.hpp>
#include <phew/core/watchdog.hpp>
#include <phew/io/h5_private.hpp>
#include <phew/mpi/agree.hpp>

#include <sys/resource.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <optional>

static_assert(sizeof(hid_t) == sizeof(std::int64_t), "hid_t is stored as int64_t");

namespace phew::io {
namespace {

using h5::Id;

// Silence HDF5's own error stack printing: phew reports errors itself, in one line.
struct QuietHdf5 {
  QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};
void quiet() { static QuietHdf5 once; }

}  // namespace

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
  if (!e->desc || !*e->desc) return 0;
  text = e->desc;
  // The POSIX driver spells out its call over lines ("file write failed: time = ..., errno = 27, error
  // message = 'File too large', buf = ..."): the system's message alone.
  const std::string_view mark = "error message = '";
  if (const auto at = text.find(mark); at != std::string::npos) {
    const auto from = at + mark.size(), to = text.find('\'', from);
    text = text.substr(from, to == std::string::npos ? std::string::npos : to - from);
  }
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
    core::end_process_after(std::chrono::seconds(10), exit_code(core::ErrorKind::io),
                            core::log::tool_name() + ": error: " + error->what());
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

void File::check_room(std::uint64_t bytes, const std::string& what) const {
  if (!parallel_ || !comm_ || comm_->size() == 1) return;
  // HDF5's metadata of a phew product (its headers, attributes and chunk indices) is well below this.
  constexpr std::uint64_t kMargin = std::uint64_t{256} << 10;
  std::optional<core::Error> error;
  if (comm_->root())
    if (const auto free = free_bytes_beside(path_); free && *free < bytes + kMargin)
      error = core::Error::io("{}: no space left on device: {} needs {} bytes and a margin of {}, {} are free", path_,
                              what, bytes, kMargin, *free);
  // A file-size limit (ulimit -f) is per process: any rank's stops the write.
  rlimit limit{};
  hsize_t size = 0;
  if (!error && getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      H5Fget_filesize(id_, &size) >= 0 && size + bytes + kMargin > limit.rlim_cur)
    error = core::Error::io(
        "{}: {} would take the file to {} bytes and a margin of {}, beyond the file-size limit of {} "
        "bytes (ulimit -f) of rank {}",
        path_, what, size + bytes, kMargin, static_cast<std::uint64_t>(limit.rlim_cur), rank_);
  try {
    mpi::agree_on(*comm_, error ? &*error : nullptr);
  } catch (const core::Error&) {
    g_unusable = true;  // closing the file would flush its metadata onto the full disk: HDF5 is not shut down
    throw;
  }
}

File File::open_read(const std::string& path) {
  quiet();
  core::check_readable_file(path);
  if (!is_hdf5(path)) throw core::Error::input("{}: not an HDF5 file", path);
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) throw core::Error::io("{}: HDF5 cannot open the file: {}", path, why_hdf5_cannot_open(path));
  return File(id, path, false, nullptr);
}

File File::create(const std::string& path, const mpi::Comm& comm, const std::string& name) {
  quiet();
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  // One rank writes through HDF5's POSIX driver, not MPI-IO: Open MPI's I/O layer opens a shared-file-
  // pointer file in the job's session folder for every file, and singletons started side by side without
  // mpirun share one session folder (isolated, all are job family 0), so one run's cleanup made another's
  // create fail now and then. The file's contents do not depend on the driver.
  if (comm.size() > 1) H5Pset_fapl_mpio(fapl, comm.raw(), MPI_INFO_NULL);
  // Later file-format features: attributes larger than 64 KiB (the manifest) are stored densely.
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  const bool ok = comm.min<int>(id >= 0 ? 1 : 0) == 1;
  if (!ok) {
    if (id >= 0) H5Fclose(id);
    throw core::Error::io("{}: cannot create the file", name.empty() ? path : name);
  }
  return File(id, name.empty() ? path : name, true, &comm);
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
  if (parallel_ && std::uncaught_exceptions() > 0)
    abandoned().push_back(id_);
  else
    H5Fclose(id_);  // a failure here has no one to report to; close() reports it
  id_ = -1;
}

void File::close() {
  if (id_ < 0) return;
  // What is still buffered is written by a flush first: it can fail (a full disk) and leave the file open,
  // where a failed close would leave HDF5 unable to shut down (see unusable()).
  check_room(0, "writing the file");
  errno = 0;
  const bool flushed = H5Fflush(id_, H5F_SCOPE_GLOBAL) >= 0;
  if (parallel_)
    agree_on_write(!flushed, "writing the file");  // the File stays open: ~File abandons it
  else if (!flushed)
    throw core::Error::io("{}: writing the file failed", path_);
  const herr_t status = H5Fclose(id_);
  id_ = -1;
  if (status < 0) throw core::Error::io("{}: closing the file failed", path_);
}

}  // namespace phew::io
