#include <phew/core/files.hpp>

#include <phew/core/error.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace phew::core {

void check_readable_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT || e == ENOTDIR) throw Error::io("{}: no such file", path);
    if (e == ELOOP) throw Error::io("{}: cannot be opened: a loop of symbolic links", path);
    throw Error::io("{}: cannot be opened: {}", path, std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) throw Error::input("{}: is a folder, not a file", path);
  if (!S_ISREG(st.st_mode))
    throw Error::input("{}: is not a regular file (a FIFO, a socket or a device?): phew reads files", path);
  if (::access(path.c_str(), R_OK) != 0) throw Error::io("{}: cannot be read: {}", path, std::strerror(errno));
}

}  // namespace phew::core
