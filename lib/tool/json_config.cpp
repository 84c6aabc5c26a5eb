#include <phew/tool/json_config.hpp>

#include <nlohmann/json.hpp>

namespace phew::tool {
namespace {

using Json = nlohmann::ordered_json;

std::string scalar_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number() || v.is_null()) return v.dump();
  throw CLI::ConversionError("config values must be strings, numbers, booleans or lists of them, found " + v.dump());
}

void flatten(const Json& object, std::vector<std::string>& parents, std::vector<CLI::ConfigItem>& out) {
  for (const auto& [key, value] : object.items()) {
    if (value.is_object()) {
      parents.push_back(key);
      flatten(value, parents, out);
      parents.pop_back();
      continue;
    }
    CLI::ConfigItem item;
    item.parents = parents;
    item.name = key;
    if (value.is_array()) {
      for (const auto& v : value) item.inputs.push_back(scalar_text(v));
    } else {
      item.inputs.push_back(scalar_text(value));
    }
    out.push_back(std::move(item));
  }
}

}  // namespace

std::string JsonConfig::to_config(const CLI::App* app, bool default_also, bool, std::string) const {
  Json j = Json::object();
  for (const CLI::Option* opt : app->get_options()) {
    if (opt->get_lnames().empty() || !opt->get_configurable()) continue;
    const std::string& name = opt->get_lnames().front();
    if (opt->count() > 0) {
      const auto& r = opt->results();
      j[name] = r.size() == 1 ? Json(r.front()) : Json(r);
    } else if (default_also && !opt->get_default_str().empty()) {
      j[name] = opt->get_default_str();
    }
  }
  return j.dump(2);
}

std::vector<CLI::ConfigItem> JsonConfig::from_config(std::istream& input) const {
  Json j;
  try {
    j = Json::parse(input);
  } catch (const std::exception& e) {
    throw CLI::ConversionError(std::string("config file is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw CLI::ConversionError("config file must hold a JSON object");
  std::vector<CLI::ConfigItem> parsed;
  std::vector<std::string> parents;
  flatten(j, parents, parsed);
  return parsed;
}

}  // namespace phew::tool
