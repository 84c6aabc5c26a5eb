#include <phew/manifest/manifest.hpp>

#include <phew/core/error.hpp>
#include <phew/core/files.hpp>
#include <phew/core/version.hpp>
#include <phew/manifest/fingerprint.hpp>

#include <cctype>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>

namespace phew::manifest {

namespace fs = std::filesystem;

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Json read_manifest(const std::string& path) {
  const std::string mpath = path + ".json";
  std::error_code ec;
  if (std::filesystem::exists(mpath, ec)) core::check_readable_file(mpath);
  std::ifstream in(mpath);
  if (!in)
    throw core::Error::input("{}: no manifest {} beside it (not a phew output, or its run did not finish)", path,
                             mpath);
  Json m;
  try {
    m = Json::parse(in);
  } catch (const std::exception& e) {
    throw core::Error::input("{}: manifest is not valid JSON ({})", mpath, e.what());
  }
  if (!m.is_object()) throw core::Error::input("{}: manifest is not a JSON object", mpath);
  return m;
}

namespace {

// The string at `key` of `object`, or "" when either is not what a manifest holds there. For optional
// fields of steps and inputs read from files: never a library exception.
std::string text_or_empty(const Json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// The array at `key` of `object`, or an empty one.
Json array_or_empty(const Json& object, const char* key) {
  if (!object.is_object()) return Json::array();
  const auto it = object.find(key);
  return it != object.end() && it->is_array() ? *it : Json::array();
}

// A string field of a manifest object; Error(input) naming the manifest when it is missing or not a
// string (a malformed manifest is bad input, never a library exception).
std::string string_field(const Json& object, const char* key, const std::string& manifest_path,
                         const std::string& what) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string())
    throw core::Error::input("{}: manifest field {}{} is missing or not a string", manifest_path, what, key);
  return object[key].get<std::string>();
}

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 4;
    if (n == 4 || (n > 0 && i + n >= s.size())) return false;  // a bad lead byte, or cut short
    for (std::size_t k = 1; k <= n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n + 1;
  }
  return true;
}

}  // namespace

std::string encode_path(const std::string& path) {
  if (valid_utf8(path) && path.find('%') == std::string::npos) return path;
  std::string out;
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80 || ch == '%')
      out += fmt::format("%{:02X}", c);
    else
      out += ch;
  }
  return out;
}

std::string decode_path(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string to_text(const Json& manifest) {
  // Any byte that is not UTF-8 (a command-line argument, say) becomes U+FFFD instead of an exception;
  // paths that must be read back are percent-encoded before (encode_path).
  return manifest.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

RecordedInput recorded_input(const std::string& path, std::size_t index) {
  const Json m = read_manifest(path);
  const std::string where = path + ".json";
  if (!m.is_object() || !m.contains("inputs") || !m["inputs"].is_array() || index >= m["inputs"].size())
    throw core::Error::input("{}: its manifest does not record input {}", where, index + 1);
  const Json& in = m["inputs"][index];
  const std::string field = fmt::format("inputs[{}].", index);
  return {decode_path(string_field(in, "path", where, field)), string_field(in, "kind", where, field),
          string_field(in, "fingerprint", where, field)};
}

Input check_phew_input(const std::string& path, const std::vector<std::string>& kinds) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw core::Error::io("{}: no such file", path);
  const Json m = read_manifest(path);
  const std::string where = path + ".json";
  if (!m.is_object() || !m.contains("schema") || m["schema"] != kSchema)
    throw core::Error::input("{}: manifest is not a {} manifest", path, kSchema);
  const std::string kind = string_field(m, "kind", where, "");
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    std::string expected;
    for (const auto& k : kinds) expected += (expected.empty() ? "" : " or ") + k;
    throw core::Error::input("{}: is a '{}' file, expected {} (wrong stage?)", path, kind, expected);
  }
  Input in;
  in.path = path;
  in.kind = kind;
  in.size = fs::file_size(path, ec);
  in.fingerprint = fingerprint_file(path);
  in.manifest_id = m.contains("id") && m["id"].is_string() ? m["id"].get<std::string>() : "";
  // The file's fingerprint is the first output's (an empty or null list is named, not
  // compared as an empty fingerprint).
  if (!m.contains("outputs") || !m["outputs"].is_array() || m["outputs"].empty())
    throw core::Error::input(
        "{}: manifest field outputs is missing, empty or not a list (it records the file's fingerprint)", where);
  const std::string recorded = string_field(m["outputs"][0], "fingerprint", where, "outputs[0].");
  // Every phew product is made from inputs (a snapshot, an upstream product): the chain checks of later
  // stages walk them.
  if (!m.contains("inputs") || !m["inputs"].is_array() || m["inputs"].empty())
    throw core::Error::input(
        "{}: manifest field inputs is missing, empty or not a list (a '{}' file is made from inputs)", where, kind);
  for (std::size_t i = 0; i < m["inputs"].size(); ++i) {
    const std::string field = fmt::format("inputs[{}].", i);
    string_field(m["inputs"][i], "kind", where, field);
    string_field(m["inputs"][i], "fingerprint", where, field);
  }
  if (recorded != in.fingerprint)
    throw core::Error::input("{}: file changed since its manifest was written (stale or swapped: fingerprint {} != {})",
                             path, in.fingerprint, recorded);
  in.provenance = m.contains("provenance") && m["provenance"].is_array() ? m["provenance"] : Json::array();
  return in;
}

Input external_input(const std::string& path, const std::string& kind) {
  Input in;
  in.path = path;
  in.kind = kind;
  std::error_code ec;
  in.size = fs::file_size(path, ec);
  in.fingerprint = fingerprint_file(path);
  return in;
}

std::string kind_of(const std::string& path) { return text_or_empty(read_manifest(path), "kind"); }

bool made_from(const std::string& path, const std::string& fingerprint) {
  for (const auto& in : array_or_empty(read_manifest(path), "inputs"))
    if (text_or_empty(in, "fingerprint") == fingerprint) return true;
  return false;
}

std::vector<int> grid_types_in_chain(const std::string& derived) {
  std::vector<int> types;
  for (const auto& step : array_or_empty(read_manifest(derived), "provenance")) {
    const Json tool = step.contains("tool") ? step["tool"] : Json();
    if (!tool.is_object() || text_or_empty(tool, "name") != "cic-project" || !step.contains("parameters")) continue;
    const Json& used = step["parameters"].contains("types_used") ? step["parameters"]["types_used"] : Json();
    if (!used.is_array()) continue;
    types.clear();
    for (const auto& t : used)
      if (t.is_number_integer()) types.push_back(t.get<int>());
  }
  return types;
}

std::vector<Input> snapshot_inputs_in_chain(const std::string& derived, const std::vector<std::string>& files) {
  std::vector<std::string> known;
  const Json m = read_manifest(derived);
  for (const auto& step : array_or_empty(m, "provenance"))
    for (const auto& in : array_or_empty(step, "inputs"))
      if (text_or_empty(in, "kind") == "snapshot") known.push_back(text_or_empty(in, "fingerprint"));
  std::vector<Input> out;
  for (const auto& f : files) {
    out.push_back(external_input(f, "snapshot"));
    if (std::find(known.begin(), known.end(), out.back().fingerprint) == known.end())
      throw core::Error::input("{}: not the snapshot {} was made from (its fingerprint is not in the provenance chain)",
                               f, derived);
  }
  return out;
}

Builder::Builder(std::string tool, std::vector<std::string> command_line, int ranks)
    : tool_(std::move(tool)), command_line_(std::move(command_line)), ranks_(ranks), start_(utc_now()) {}

void Builder::parameter(const std::string& name, Json value, const std::string& units) {
  parameters_[name] = std::move(value);
  if (!units.empty()) units_[name] = units;
}

void Builder::add_input(const Input& input) {
  input_paths_.push_back(input.path);
  inputs_.push_back({{"path", encode_path(fs::absolute(input.path).lexically_normal().string())},
                     {"kind", input.kind},
                     {"size", input.size},
                     {"fingerprint", input.fingerprint},
                     {"manifest_id", input.manifest_id.empty() ? Json(nullptr) : Json(input.manifest_id)}});
  // Merge the input's chain, each step once (a step reached through two inputs is one step).
  std::set<std::string> seen;
  for (const auto& s : provenance_) seen.insert(text_or_empty(s, "id"));
  for (const auto& s : input.provenance)
    if (s.is_object() && seen.insert(text_or_empty(s, "id")).second) provenance_.push_back(s);
}

void Builder::summary(const std::string& name, Json value) { summary_[name] = std::move(value); }
void Builder::side_output(const std::string& path, const std::string& kind, std::uintmax_t size,
                          const std::string& fingerprint) {
  side_outputs_.push_back({{"path", encode_path(fs::absolute(path).lexically_normal().string())},
                           {"kind", kind},
                           {"size", size},
                           {"fingerprint", fingerprint}});
}
void Builder::timing(const std::string& phase, double seconds) { timings_[phase] = seconds; }
void Builder::exchanges(const std::string& phase, Json figures) { exchanges_[phase] = std::move(figures); }

Json Builder::finish(const std::string& output_path, std::uintmax_t size, const std::string& fingerprint) {
  Json m;
  m["schema"] = kSchema;
  m["id"] = nullptr;
  m["kind"] = kind_;
  m["tool"] = {{"name", tool_}, {"version", core::version()}, {"git", core::git_commit()}};
  m["command_line"] = command_line_;
  m["parameters"] = parameters_;
  m["units"] = units_;
  m["ranks"] = ranks_;
  m["start"] = start_;
  if (end_.empty()) end_ = utc_now();  // the same on every call, so both copies match
  m["end"] = end_;
  m["timings"] = timings_;
  if (!exchanges_.empty()) m["exchanges"] = exchanges_;
  m["inputs"] = inputs_;
  Json out = {{"path", encode_path(fs::absolute(output_path).lexically_normal().string())}, {"kind", kind_}};
  if (size) out["size"] = size;
  if (!fingerprint.empty()) out["fingerprint"] = fingerprint;
  m["outputs"] = Json::array({out});
  for (const auto& side : side_outputs_) m["outputs"].push_back(side);
  m["summary"] = summary_;

  // The step's own id covers what the step did, not the output bytes, so the copy of the manifest
  // inside the HDF5 file and the one beside it carry the same id.
  Json step = {{"tool", m["tool"]},         {"command_line", command_line_},
               {"parameters", parameters_}, {"ranks", ranks_},
               {"start", start_},           {"end", m["end"]},
               {"inputs", Json::array()}};
  // Inputs by kind, fingerprint and manifest id: a later stage can check that the snapshot it is given is
  // the one its upstream grid was made from, by walking the chain.
  for (const auto& in : inputs_)
    step["inputs"].push_back(
        {{"kind", in["kind"]}, {"fingerprint", in["fingerprint"]}, {"manifest_id", in["manifest_id"]}});
  const std::string id = fingerprint_text(step.dump(-1, ' ', false, Json::error_handler_t::replace));
  Json with_id = {{"id", id}};
  with_id.update(step);
  step = std::move(with_id);
  m["id"] = id;
  Json chain = provenance_;
  chain.push_back(step);
  m["provenance"] = chain;
  return m;
}

}  // namespace phew::manifest
