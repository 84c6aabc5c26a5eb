// Build details for --version and manifests.
#pragma once

#include <string>

namespace phew::core {

const std::string& version();     // "0.1.0"
const std::string& git_commit();  // short hash, "+dirty" when modified; "" outside git
std::string build_details();      // one line per item: compiler, build type, libraries

}  // namespace phew::core
