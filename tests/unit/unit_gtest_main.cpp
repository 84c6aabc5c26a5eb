// GoogleTest main for the unit tests: one process that initialises MPI only under a launcher, as the
// tools do (mpi::Environment), so the unit tests run the tools' path without MPI.
#include <phew/mpi/comm.hpp>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  phew::mpi::Environment env(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
