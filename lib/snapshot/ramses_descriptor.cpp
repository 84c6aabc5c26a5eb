// part_file_descriptor.txt of a RAMSES output.
#include <phew/snapshot/ramses_descriptor.hpp>

#include <phew/core/error.hpp>
#include <phew/snapshot/ramses_info.hpp>

#include <algorithm>
#include <array>
#include <regex>

namespace phew::snapshot::ramses {
namespace {

// The letters of Kind, with their widths.
struct TypeLetter {
  char letter;
  Kind kind;
  int width;  // bytes; 0 = from the record (4 or 8)
};

constexpr std::array<TypeLetter, 13> kLetters{{{'d', Kind::f64, 8},
                                               {'f', Kind::f32, 4},
                                               {'b', Kind::i8, 1},
                                               {'B', Kind::u8, 1},
                                               {'h', Kind::i16, 2},
                                               {'H', Kind::u16, 2},
                                               {'i', Kind::i32, 4},
                                               {'I', Kind::u32, 4},
                                               {'q', Kind::i64, 8},
                                               {'Q', Kind::u64, 8},
                                               {'l', Kind::integer, 0},
                                               {'L', Kind::integer, 0},
                                               {'?', Kind::logical, 4}}};

}  // namespace

std::vector<Field> parse_descriptor(const std::string& path) {
  const auto lines = read_lines(path);
  static const std::regex version_re(R"(^#\s*version:\s*(\d+)\s*$)");
  static const std::regex field_re(R"(^\s*(\d+)\s*,\s*([A-Za-z0-9_]+)\s*,\s*(\S+)\s*$)");
  std::smatch m;
  if (lines.empty() || !std::regex_match(lines[0], m, version_re))
    throw core::Error::input("{}: line 1 is not '# version: 1' (not a RAMSES particle file descriptor)", path);
  if (m[1] != "1") throw core::Error::input("{}: descriptor version {}, phew reads version 1", path, m[1].str());
  std::vector<Field> fields;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string line = trim(lines[i]);
    if (line.empty() || line[0] == '#') continue;
    if (!std::regex_match(lines[i], m, field_re))
      throw core::Error::input("{}: line {} is not 'ivar, variable_name, variable_type': '{}'", path, i + 1, line);
    if (std::stoul(m[1]) != fields.size() + 1)
      throw core::Error::input("{}: line {} is field {}, {} expected", path, i + 1, m[1].str(), fields.size() + 1);
    const std::string type = m[3];
    const auto* t = std::find_if(kLetters.begin(), kLetters.end(),
                                 [&](const TypeLetter& l) { return type.size() == 1 && l.letter == type[0]; });
    if (t == kLetters.end())
      throw core::Error::input("{}: field {} ({}) has type '{}', not one phew knows (d f q i h b ? B H I Q l L)", path,
                               fields.size() + 1, m[2].str(), type);
    for (const Field& f : fields)
      if (f.name == m[2]) throw core::Error::input("{}: field {} appears twice", path, f.name);
    fields.push_back({m[2], t->letter, t->kind, t->width});
  }
  return fields;
}

}  // namespace phew::snapshot::ramses
