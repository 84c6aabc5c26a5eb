// Checks of HDF5 files beyond reading them (issue 35): the sources of a virtual dataset, and the
// signature behind a user block. Kept apart from h5.cpp: neither needs the wrapper's internals.
#include <phew/io/h5.hpp>

#include <phew/core/error.hpp>

#include <hdf5.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace phew::io {

namespace fs = std::filesystem;

// HDF5 looks for its superblock at 0, 512, 1024, 2048, ... (the bytes before it are a user block).
bool is_hdf5(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  for (std::uint64_t offset = 0; in; offset = offset == 0 ? 512 : 2 * offset) {
    char sig[8] = {};
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(sig, 8);
    if (in.gcount() != 8) return false;
    if (std::memcmp(sig, "\x89HDF\r\n\x1a\n", 8) == 0) return true;
    if (offset >= (std::uint64_t{1} << 40)) return false;
  }
  return false;
}

void File::check_virtual_sources(const std::string& dataset) const {
  const hid_t d = H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT);
  if (d < 0) return;  // a missing dataset is reported by the read that needs it
  const hid_t dcpl = H5Dget_create_plist(d);
  std::string missing;
  if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_VIRTUAL) {
    size_t count = 0;
    H5Pget_virtual_count(dcpl, &count);
    const fs::path here = fs::path(path_).parent_path();
    for (size_t i = 0; i < count && missing.empty(); ++i) {
      const ssize_t n = H5Pget_virtual_filename(dcpl, i, nullptr, 0);
      if (n <= 0) continue;
      std::string name(static_cast<std::size_t>(n) + 1, '\0');
      H5Pget_virtual_filename(dcpl, i, name.data(), name.size());
      name.resize(static_cast<std::size_t>(n));
      // "." is this file; a name with printf-style patterns (%b) is HDF5's to expand.
      if (name == "." || name.find('%') != std::string::npos) continue;
      // HDF5 resolves a relative source name against the virtual file's folder, then the working folder.
      const fs::path p(name);
      std::error_code ec;
      if (!fs::exists(p, ec) && !(p.is_relative() && fs::exists(here / p, ec))) missing = name;
    }
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  H5Dclose(d);
  if (!missing.empty())
    throw core::Error::io("{}: {} is a virtual dataset whose source file {} is missing", path_, dataset, missing);
}

}  // namespace phew::io
