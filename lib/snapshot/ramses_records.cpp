// The Fortran records of a RAMSES part file.
#include <phew/snapshot/ramses_records.hpp>

#include <phew/core/error.hpp>

#include <algorithm>

namespace phew::snapshot::ramses {

bool read_at(std::ifstream& in, std::uint64_t pos, void* buffer, std::size_t n) {
  in.clear();
  in.seekg(static_cast<std::streamoff>(pos));
  in.read(static_cast<char*>(buffer), static_cast<std::streamsize>(n));
  return static_cast<std::size_t>(in.gcount()) == n;
}

RecordScanner::RecordScanner(const std::string& path, std::ifstream& in) : path_(path), in_(in) {
  in_.clear();
  in_.seekg(0, std::ios::end);
  const auto end = in_.tellg();
  if (end < 0) throw core::Error::io("{}: cannot determine the file size", path_);
  size_ = static_cast<std::uint64_t>(end);
}

Block RecordScanner::record(std::uint64_t pos, int number, const std::string& what, bool& swap, bool first) {
  unsigned char marker[4];
  if (pos + 4 > size_ || !read_at(in_, pos, marker, 4))
    throw core::Error::input("{}: truncated before record {} ({}) at byte {}", path_, number, what, pos);
  if (first) {  // the ncpu record has 4 bytes: its marker gives the byte order
    if (load<std::uint32_t>(marker, false) == 4)
      swap = false;
    else if (load<std::uint32_t>(marker, true) == 4)
      swap = true;
    else
      throw core::Error::input("{}: first record marker is {}, 4 expected (not a RAMSES part file)", path_,
                               load<std::uint32_t>(marker, false));
  }
  const std::int32_t signed_bytes = load<std::int32_t>(marker, swap);
  if (signed_bytes < 0)
    throw core::Error::input("{}: record {} ({}) is split into Fortran subrecords (over 2 GiB): not supported", path_,
                             number, what);
  const auto bytes = static_cast<std::uint64_t>(signed_bytes);
  if (pos + 8 + bytes > size_)
    throw core::Error::input("{}: truncated in record {} ({}): the record has {} bytes, the file ends {} bytes into it",
                             path_, number, what, bytes, size_ - std::min(size_, pos + 4));
  if (!read_at(in_, pos + 4 + bytes, marker, 4))
    throw core::Error::io("{}: cannot read at byte {}", path_, pos + 4 + bytes);
  if (load<std::uint32_t>(marker, swap) != bytes)
    throw core::Error::input("{}: record {} ({}) starts with length {} but ends with {}", path_, number, what, bytes,
                             load<std::uint32_t>(marker, swap));
  return {pos + 4, bytes, 0};
}

std::int64_t RecordScanner::integer_value(const Block& b, bool swap, int number, const std::string& what) {
  unsigned char v[8];
  if (b.bytes != 4 && b.bytes != 8)
    throw core::Error::input("{}: record {} ({}) has {} bytes, one 4- or 8-byte integer expected", path_, number, what,
                             b.bytes);
  if (!read_at(in_, b.offset, v, b.bytes)) throw core::Error::io("{}: cannot read record {}", path_, number);
  return b.bytes == 4 ? std::int64_t{load<std::int32_t>(v, swap)} : load<std::int64_t>(v, swap);
}

}  // namespace phew::snapshot::ramses
