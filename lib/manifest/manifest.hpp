// Manifests (docs/formats.md, "Manifests (every output)"): what made a file, from what, with which parameters. Each output X.h5 has
// X.h5.json beside it and the same JSON in its root attribute "manifest". The "provenance" list is the
// chain of every step that led to the file (inputs' chains first, this step last), like samtools' @PG.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace phew::manifest {

using Json = nlohmann::ordered_json;

inline constexpr const char* kSchema = "phew-manifest/1";

// A file a tool read: a phew output (with a manifest) or an external file such as a snapshot.
struct Input {
  std::string path;
  std::string kind;         // "grid", "patches", ... or "snapshot" for external files
  std::uintmax_t size = 0;  // bytes
  std::string fingerprint;
  std::string manifest_id;  // "" for external files
  Json provenance = Json::array();
};

// Inspects a phew output: reads PATH.json, checks that its kind is one of `kinds` and that the file's
// fingerprint still matches. Throws Error(input) with a clear message when the manifest is missing,
// the kind is wrong, or the file changed since its manifest was written (stale or swapped).
Input check_phew_input(const std::string& path, const std::vector<std::string>& kinds);
// An external input (snapshot): size and fingerprint only.
Input external_input(const std::string& path, const std::string& kind);
// The manifest stored beside a phew output. Throws Error(input) when missing, not JSON or not an object.
Json read_manifest(const std::string& path);
// The kind a manifest records ("" when it records none as a string). Throws as read_manifest.
std::string kind_of(const std::string& path);
// True when the manifest of `path` records an input with this fingerprint. Throws as read_manifest.
bool made_from(const std::string& path, const std::string& fingerprint);

// What the manifest of phew output `path` records about its input number `index` (path and
// fingerprint). Throws Error(input) when the manifest does not record it.
struct RecordedInput {
  std::string path, kind, fingerprint;
};
RecordedInput recorded_input(const std::string& path, std::size_t index);

// The particle types the density grid of phew output `derived` was made of: `types_used` of the last
// cic-project step in its provenance chain; empty when the chain has none. Throws as read_manifest.
std::vector<int> grid_types_in_chain(const std::string& derived);

// Checks that each snapshot file is one the phew output `derived` was made from (its fingerprint is
// among the snapshot inputs of the provenance chain) and returns them as inputs. Throws Error(input).
std::vector<Input> snapshot_inputs_in_chain(const std::string& derived, const std::vector<std::string>& snapshot_files);

// The manifest of the step being run. Built on rank 0.
class Builder {
 public:
  Builder(std::string tool, std::vector<std::string> command_line, int ranks);

  void set_kind(std::string kind) { kind_ = std::move(kind); }
  const std::string& kind() const { return kind_; }
  // An effective parameter value; `units` ("" for none) goes to the "units" table.
  void parameter(const std::string& name, Json value, const std::string& units = "");
  void add_input(const Input& input);
  // The paths of the inputs added so far, as given.
  const std::vector<std::string>& input_paths() const { return input_paths_; }
  void summary(const std::string& name, Json value);
  // A side output written with the main output (a text export, a quicklook): listed after it.
  void side_output(const std::string& path, const std::string& kind, std::uintmax_t size,
                   const std::string& fingerprint);
  void timing(const std::string& phase, double seconds);
  // What a phase's exchanges between ranks sent (docs/formats.md, `exchanges`); replaces an earlier entry.
  void exchanges(const std::string& phase, Json figures);

  // The finished manifest for `output_path` (kind, size and fingerprint filled when known).
  // Stamps the end time on the first call. The id is a fingerprint of the content without the id.
  Json finish(const std::string& output_path, std::uintmax_t size, const std::string& fingerprint);

 private:
  std::string tool_;
  std::vector<std::string> command_line_;
  int ranks_;
  std::string kind_;
  std::string start_;
  std::string end_;
  Json parameters_ = Json::object();
  Json units_ = Json::object();
  Json inputs_ = Json::array();
  Json summary_ = Json::object();
  Json timings_ = Json::object();
  Json exchanges_ = Json::object();
  Json provenance_ = Json::array();
  std::vector<Json> side_outputs_;
  std::vector<std::string> input_paths_;
};

std::string utc_now();  // ISO 8601, seconds

// A file name as a manifest records it: unchanged when it is UTF-8 without '%', else with '%' and every
// byte of 0x80 and above as %XX (any name the OS accepts can be recorded, and read back by decode_path).
std::string encode_path(const std::string& path);
std::string decode_path(const std::string& text);
// The manifest as the text written beside an output and into its root attribute.
std::string to_text(const Json& manifest);

}  // namespace phew::manifest
