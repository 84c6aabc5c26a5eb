// part_file_descriptor.txt: the fields of a RAMSES part file, in record order, with their types.
// Internal to lib/particles' RAMSES reader.
#pragma once

#include <string>
#include <vector>

namespace phew::snapshot::ramses {

// The type letters of part_file_descriptor.txt: RAMSES' io/dump_utils.f90 writes d f q i h b and ?
// (logical); yt's convention (Python struct letters) adds the unsigned ones and l/L, whose width (4 or 8
// bytes) is taken from the record.
enum class Kind { f64, f32, i8, u8, i16, u16, i32, u32, i64, u64, logical, integer };

inline bool is_real(Kind k) { return k == Kind::f64 || k == Kind::f32; }

struct Field {
  std::string name;
  char letter = 0;
  Kind kind = Kind::f64;
  int width = 0;
};

// The fields of the descriptor at `path` (version 1). Throws Error(input) naming the file and line for
// anything phew cannot read: another version, a bad line, an unknown type letter, a repeated field.
std::vector<Field> parse_descriptor(const std::string& path);

}  // namespace phew::snapshot::ramses
