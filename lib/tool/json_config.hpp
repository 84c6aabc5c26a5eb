// --config FILE.json for CLI11: the keys are the long option names ("grid": 128, "types": [0, 1]).
#pragma once

#include <CLI/CLI.hpp>

namespace phew::tool {

class JsonConfig : public CLI::Config {
 public:
  std::string to_config(const CLI::App* app, bool default_also, bool write_description,
                        std::string prefix) const override;
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
};

}  // namespace phew::tool
