// Checks of HDF5 files beyond reading them: the sources of a virtual dataset, and the
// signature behind a user block. Kept apart from h5.cpp: neither needs the wrapper's internals.
#include <phew/io/h5.hpp>

#include <phew/core/error.hpp>

#include <fmt/format.h>
#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace phew::io {

namespace fs = std::filesystem;

// HDF5 looks for its superblock at 0, 512, 1024, 2048, ... (the bytes before it are a user block).
namespace {

// The offset of the superblock (after any user block), if the file has one.
std::optional<std::uint64_t> superblock_offset(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;  // a FIFO would block the read below
  std::ifstream in(path, std::ios::binary);
  for (std::uint64_t offset = 0; in; offset = offset == 0 ? 512 : 2 * offset) {
    char sig[8] = {};
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(sig, 8);
    if (in.gcount() != 8) return std::nullopt;
    if (std::memcmp(sig, "\x89HDF\r\n\x1a\n", 8) == 0) return offset;
    if (offset >= (std::uint64_t{1} << 40)) return std::nullopt;
  }
  return std::nullopt;
}

// A little-endian unsigned integer of `size` bytes (HDF5's addresses).
std::uint64_t little_endian(const unsigned char* p, int size) {
  std::uint64_t v = 0;
  for (int i = size - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

bool is_hdf5(const std::string& path) { return superblock_offset(path).has_value(); }

std::string why_hdf5_cannot_open(const std::string& path) {
  const auto at = superblock_offset(path);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!at || ec) return "damaged";
  // The superblock's layout (HDF5 File Format Specification, II.A): the base address and the end-of-file
  // address (relative to the base) follow fixed fields whose length depends on its version.
  unsigned char sb[64] = {};
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(*at));
  in.read(reinterpret_cast<char*>(sb), sizeof sb);
  if (in.gcount() < 48) return fmt::format("truncated ({} bytes, inside its superblock)", size);
  const int version = sb[8];
  int offsets = 0, base_at = 0;
  if (version == 0 || version == 1) {
    offsets = sb[13];
    base_at = version == 0 ? 24 : 28;
  } else if (version == 2 || version == 3) {
    offsets = sb[9];
    base_at = 12;
  }
  if ((offsets != 4 && offsets != 8) || base_at + 3 * offsets > static_cast<int>(sizeof sb)) return "damaged";
  const std::uint64_t base = little_endian(sb + base_at, offsets);
  const std::uint64_t end = little_endian(sb + base_at + 2 * offsets, offsets);
  if (base + end > size)
    return fmt::format("truncated: {} of its {} bytes (a copy or a write that did not finish?)", size, base + end);
  return "damaged (HDF5 cannot read its metadata)";
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
