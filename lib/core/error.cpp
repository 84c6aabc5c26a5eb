#include <phew/core/error.hpp>

namespace phew::core {

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage:
      return 2;
    case ErrorKind::input:
      return 3;
    case ErrorKind::io:
      return 4;
    case ErrorKind::internal:
      return 1;
  }
  return 1;
}

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage:
      return "usage";
    case ErrorKind::input:
      return "input";
    case ErrorKind::io:
      return "io";
    case ErrorKind::internal:
      return "internal";
  }
  return "internal";
}

}  // namespace phew::core
