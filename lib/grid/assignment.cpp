#include <phew/grid/assignment.hpp>

#include <phew/core/error.hpp>

namespace phew::grid {

Assignment parse_assignment(const std::string& text) {
  if (text == "ngp" || text == "NGP") return Assignment::ngp;
  if (text == "cic" || text == "CIC") return Assignment::cic;
  if (text == "tsc" || text == "TSC") return Assignment::tsc;
  throw core::Error::usage("assignment '{}': expected ngp, cic or tsc", text);
}

const char* to_string(Assignment a) {
  switch (a) {
    case Assignment::ngp:
      return "NGP";
    case Assignment::cic:
      return "CIC";
    case Assignment::tsc:
      return "TSC";
  }
  return "CIC";
}

}  // namespace phew::grid
