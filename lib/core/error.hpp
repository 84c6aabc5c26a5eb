// The one error type of phew and its exit-code table.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace phew::core {

// What went wrong, which decides the exit code (docs/cli.md).
enum class ErrorKind {
  usage,     // bad command line or configuration        -> exit 2
  input,     // bad input data (content, shape, values)   -> exit 3
  io,        // cannot read or write a file               -> exit 4
  internal,  // anything else                             -> exit 1
};

int exit_code(ErrorKind kind);
const char* to_string(ErrorKind kind);

// Thrown by library and tools; the tool runner prints "TOOL: error: MESSAGE" and exits.
// Messages name what and where: "grid.h5: dataset /grid/density is float32 3-D expected, found int32 [64]".
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message) : std::runtime_error(std::move(message)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  // Set when every rank raised this error together (mpi::agree), so ranks can exit in order
  // instead of aborting the job; raised_on() is then the rank it came from (-1 before).
  bool agreed() const { return agreed_; }
  int raised_on() const { return raised_on_; }
  void mark_agreed(int raised_on) {
    agreed_ = true;
    raised_on_ = raised_on;
  }

  template <typename... Args>
  static Error usage(fmt::format_string<Args...> f, Args&&... args) {
    return {ErrorKind::usage, fmt::format(f, std::forward<Args>(args)...)};
  }
  template <typename... Args>
  static Error input(fmt::format_string<Args...> f, Args&&... args) {
    return {ErrorKind::input, fmt::format(f, std::forward<Args>(args)...)};
  }
  template <typename... Args>
  static Error io(fmt::format_string<Args...> f, Args&&... args) {
    return {ErrorKind::io, fmt::format(f, std::forward<Args>(args)...)};
  }
  template <typename... Args>
  static Error internal(fmt::format_string<Args...> f, Args&&... args) {
    return {ErrorKind::internal, fmt::format(f, std::forward<Args>(args)...)};
  }

 private:
  ErrorKind kind_;
  bool agreed_ = false;
  int raised_on_ = -1;
};

}  // namespace phew::core
