#include <phew/tool/threads_option.hpp>

#include <phew/core/error.hpp>
#include <phew/core/parse.hpp>
#include <phew/core/threads.hpp>

namespace phew::tool {

void add_threads_option(CLI::App& app, std::string& text, const std::string& note) {
  app.add_option("-j,--threads", text,
                 "Threads per rank (auto: the cores of the node shared among its ranks)" + (note.empty() ? "" : "; " + note))
      ->capture_default_str();
}

int parse_threads(const std::string& text) {
  if (text == "auto") return 0;
  const int n = core::parse_number<int>(text, "--threads");
  if (n < 1) throw core::Error::usage("--threads {}: expected a positive number or auto", n);
  return n;
}

int threads_to_use(int parsed, const mpi::Comm& comm) {
  return parsed > 0 ? parsed : core::default_threads(mpi::ranks_on_node(comm));
}

}  // namespace phew::tool
