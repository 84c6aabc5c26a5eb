#include <phew/tool/test_hooks.hpp>

#include <phew/core/error.hpp>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace phew::tool {

void test_hook_at_phase(const std::string& name, const mpi::Comm& comm) {
  const char* fail = std::getenv("PHEW_TEST_FAIL_AT");
  const char* pause = std::getenv("PHEW_TEST_PAUSE_AT");
  const char* only = std::getenv("PHEW_TEST_FAIL_RANK");
  const bool here = !only || std::atoi(only) == comm.rank() || (std::atoi(only) < 0 && comm.rank() == comm.size() - 1);
  if (pause && name == pause && here) std::this_thread::sleep_for(std::chrono::seconds(60));
  if (fail && name == fail && here) {
    // PHEW_TEST_FAIL_WITH=std: a library's exception, as a bare std::map::at would throw it.
    const char* with = std::getenv("PHEW_TEST_FAIL_WITH");
    if (with && std::string(with) == "std") throw std::out_of_range("map::at");
    throw core::Error::internal("failure injected (PHEW_TEST_FAIL_AT)");
  }
}

unsigned test_shuffle_seed() {
  const char* seed = std::getenv("PHEW_TEST_SHUFFLE_SEED");
  return seed ? static_cast<unsigned>(std::atoi(seed)) : 0;
}

}  // namespace phew::tool
