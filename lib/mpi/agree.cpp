#include "mpi/agree.hpp"

#include <climits>
#include <optional>

namespace phew::mpi {

void agree_on(const Comm& comm, const Error* error) {
  const int failing = comm.min<int>(error ? comm.rank() : INT_MAX);
  if (failing == INT_MAX) return;
  int kind = error ? static_cast<int>(error->kind()) : 0;
  std::string message = error ? error->what() : "";
  comm.broadcast(kind, failing);
  comm.broadcast(message, failing);
  Error agreed(static_cast<ErrorKind>(kind), message);
  agreed.mark_agreed();
  throw agreed;
}

void agree(const Comm& comm, const std::function<void()>& local) {
  std::optional<Error> error;
  try {
    local();
  } catch (const Error& e) {
    error = e;
  } catch (const std::bad_alloc&) {
    error = Error(ErrorKind::internal, "out of memory");
  } catch (const std::exception& e) {
    error = Error(ErrorKind::internal, e.what());
  }
  agree_on(comm, error ? &*error : nullptr);
}

}  // namespace phew::mpi
