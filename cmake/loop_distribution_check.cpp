// The reduction of a wrong-code bug in GCC 12.2 (Debian 12) at -O3: -ftree-loop-distribution splits
// this loop so that pb[] is summed from b[] before b[] is written, and every prefix sum comes out 0.
// phew's Comm::all_to_all once had this shape (counts and their prefix sums filled in one loop), and
// every MPI exchange then landed at offset 0. CMake compiles and runs this at the project's flags
// (cmake/ToolchainGuard.cmake); the test suite builds it again as a test (tests/build).
// Exit 0: the compiler got it right.
#include <cstdio>

__attribute__((noipa)) void fill(const long* x, const long* y, int* a, int* pa, int* b, int* pb, unsigned long n) {
  for (unsigned long r = 0; r < n; ++r) {
    a[r] = static_cast<int>(x[r]);
    b[r] = static_cast<int>(y[r]);
    if (r > 0) {
      pa[r] = pa[r - 1] + a[r - 1];
      pb[r] = pb[r - 1] + b[r - 1];
    }
  }
}

int main() {
  const long x[5] = {1, 2, 3, 4, 5}, y[5] = {10, 20, 30, 40, 50};
  int a[5] = {0}, pa[5] = {0}, b[5] = {0}, pb[5] = {0};
  fill(x, y, a, pa, b, pb, 5);
  const bool right = pa[4] == 10 && pb[1] == 10 && pb[2] == 30 && pb[4] == 100;
  if (!right) std::printf("prefix sums %d %d %d %d, expected 0 10 30 60\n", pb[0], pb[1], pb[2], pb[3]);
  return right ? 0 : 1;
}
