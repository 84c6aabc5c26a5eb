// The Fortran records of a RAMSES part file (Fortran unformatted sequential: a 4-byte length marker
// before and after each record), found and checked one by one, and their values decoded from the file's
// byte order. Internal to lib/particles' RAMSES reader.
#pragma once

#include <phew/snapshot/byte_order.hpp>
#include <phew/snapshot/ramses_descriptor.hpp>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace phew::snapshot::ramses {

// Reads n bytes at byte `pos`; false when the file ends first.
bool read_at(std::ifstream& in, std::uint64_t pos, void* buffer, std::size_t n);

struct Block {
  std::uint64_t offset = 0;  // first data byte
  std::uint64_t bytes = 0;
  int width = 0;  // bytes per value (fields only)
};

// Finds the records of one open file, each checked: both markers agree and the file holds the record.
class RecordScanner {
 public:
  RecordScanner(const std::string& path, std::ifstream& in);

  std::uint64_t size() const { return size_; }

  // The record whose leading marker is at byte `pos` (`number` and `what` name it in errors). The first
  // record (the 4-byte ncpu) sets `swap`, the byte order, from its marker; later ones use it.
  Block record(std::uint64_t pos, int number, const std::string& what, bool& swap, bool first);

  // The one 4- or 8-byte integer a record holds.
  std::int64_t integer_value(const Block& b, bool swap, int number, const std::string& what);

 private:
  const std::string& path_;
  std::ifstream& in_;
  std::uint64_t size_ = 0;
};

// loops, which are the whole cost of reading.
template <typename Out>
void decode(const unsigned char* p, Kind k, int width, bool swap, std::size_t m, Out* out) {
  const auto run = [&](auto tag) {
    using T = decltype(tag);
    if (swap)
      for (std::size_t j = 0; j < m; ++j) out[j] = static_cast<Out>(load<T>(p + j * sizeof(T), true));
    else
      for (std::size_t j = 0; j < m; ++j) out[j] = static_cast<Out>(load<T>(p + j * sizeof(T), false));
  };
  switch (k) {
    case Kind::f64:
      return run(double{});
    case Kind::f32:
      return run(float{});
    case Kind::i8:
      return run(std::int8_t{});
    case Kind::u8:
      return run(std::uint8_t{});
    case Kind::i16:
      return run(std::int16_t{});
    case Kind::u16:
      return run(std::uint16_t{});
    case Kind::i32:
    case Kind::logical:
      return run(std::int32_t{});
    case Kind::u32:
      return run(std::uint32_t{});
    case Kind::i64:
      return run(std::int64_t{});
    case Kind::u64:
      return run(std::uint64_t{});
    case Kind::integer:
      return width == 4 ? run(std::int32_t{}) : run(std::int64_t{});
  }
}

}  // namespace phew::snapshot::ramses
