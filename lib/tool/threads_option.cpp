#include <phew/tool/threads_option.hpp>

#include <phew/core/error.hpp>
#include <phew/core/parse.hpp>
#include <phew/core/threads.hpp>
#include <phew/io/h5.hpp>

#include <CLI/CLI.hpp>

#include <fmt/format.h>

namespace phew::tool {

void add_threads_option(CLI::App& app, std::string& text, const std::string& note) {
  app.add_option(
         "-j,--threads", text,
         fmt::format("Threads per rank, 1 to {} (auto: the cores of the node shared among its ranks)", kMaxThreads) +
             (note.empty() ? "" : "; " + note))
      ->capture_default_str();
}

int parse_threads(const std::string& text) {
  if (text == "auto") return 0;
  const int n = core::parse_number<int>(text, "--threads");
  if (n < 1) throw core::Error::usage("--threads {}: expected a positive number or auto", n);
  if (n > kMaxThreads)
    throw core::Error::usage("--threads {}: at most {} threads per rank (auto: the node's cores)", n, kMaxThreads);
  return n;
}

int threads_to_use(int parsed, const mpi::Comm& comm) {
  return parsed > 0 ? parsed : core::default_threads(mpi::ranks_on_node(comm));
}

int threads_to_use(int parsed, Context& ctx) {
  const int threads = threads_to_use(parsed, ctx.comm());
  ctx.manifest().parameter("threads_used", threads);
  io::set_io_threads(threads);  // lib/io codes compressed chunks and checks what it reads on them too
  return threads;
}

}  // namespace phew::tool
