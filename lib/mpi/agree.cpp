#include <phew/mpi/agree.hpp>

#include <climits>
#include <cstdint>
#include <optional>

namespace phew::mpi {

void agree_on(const Comm& comm, const core::Error* error) {
  const int failing = comm.min<int>(error ? comm.rank() : INT_MAX);
  if (failing == INT_MAX) return;
  int kind = error ? static_cast<int>(error->kind()) : 0;
  std::string message = error ? error->what() : "";
  comm.broadcast(kind, failing);
  comm.broadcast(message, failing);
  core::Error agreed(static_cast<core::ErrorKind>(kind), message);
  agreed.mark_agreed(failing);
  throw agreed;
}

void agree_first(const Comm& comm, std::int64_t key, const core::Error* error) {
  struct Report {
    std::int64_t failed, key;
  };
  const auto all = comm.all_gather(Report{error ? 1 : 0, key});
  int failing = -1;
  for (int r = 0; r < comm.size(); ++r) {
    const Report& x = all[static_cast<std::size_t>(r)];
    if (x.failed && (failing < 0 || x.key < all[static_cast<std::size_t>(failing)].key)) failing = r;
  }
  if (failing < 0) return;
  int kind = error ? static_cast<int>(error->kind()) : 0;
  std::string message = error ? error->what() : "";
  comm.broadcast(kind, failing);
  comm.broadcast(message, failing);
  core::Error agreed(static_cast<core::ErrorKind>(kind), message);
  agreed.mark_agreed(failing);
  throw agreed;
}

void agree(const Comm& comm, const std::function<void()>& local) {
  std::optional<core::Error> error;
  try {
    local();
  } catch (const core::Error& e) {
    error = e;
  } catch (const std::bad_alloc&) {
    error = core::Error(core::ErrorKind::internal, "out of memory");
  } catch (const std::exception& e) {
    error = core::Error(core::ErrorKind::internal, e.what());
  }
  agree_on(comm, error ? &*error : nullptr);
}

}  // namespace phew::mpi
