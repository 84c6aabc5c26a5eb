// Test hooks (docs/cli.md, "Test hooks"): environment variables that make a run fail, pause or vary on
// purpose, so that tests can check what a failed, killed or reordered run leaves behind. Read here only:
// a tool never calls getenv for them itself.
#pragma once

#include <phew/mpi/comm.hpp>

#include <string>

namespace phew::tool {

// At the start of phase `name`: PHEW_TEST_FAIL_AT=NAME fails (an internal error, or with
// PHEW_TEST_FAIL_WITH=std a library's std::out_of_range) and PHEW_TEST_PAUSE_AT=NAME sleeps 60 s, on
// every rank or only on rank PHEW_TEST_FAIL_RANK (-1: the last rank).
void test_hook_at_phase(const std::string& name, const mpi::Comm& comm);

// PHEW_TEST_SHUFFLE_SEED: a seed for shuffling an order that must not matter (phew-merge's local merging
// order); 0 when unset: no shuffling.
unsigned test_shuffle_seed();

}  // namespace phew::tool
