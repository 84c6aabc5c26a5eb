#include <phew/watershed/peak_position.hpp>

#include <gtest/gtest.h>

namespace phew::watershed {
namespace {

TEST(PeakPosition, RecoversTheMaximumOfAQuadratic) {
  const double x0[3] = {0.2, -0.3, 0.1};
  std::array<double, 27> f{};
  for (int a = -1; a <= 1; ++a)
    for (int b = -1; b <= 1; ++b)
      for (int c = -1; c <= 1; ++c) {
        const double d[3] = {a - x0[0], b - x0[1], c - x0[2]};
        // A tilted, negative-definite quadratic: H = -[[2, 0.3, 0], [0.3, 1, 0.1], [0, 0.1, 3]].
        f[static_cast<std::size_t>((a + 1) * 9 + (b + 1) * 3 + (c + 1))] =
            10 - (2 * d[0] * d[0] + d[1] * d[1] + 3 * d[2] * d[2] + 0.6 * d[0] * d[1] + 0.2 * d[1] * d[2]) / 2;
      }
  const auto off = quadratic_peak_offset(f);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(off[static_cast<std::size_t>(i)], x0[i], 1e-12);
}

TEST(PeakPosition, ClipsToTheCellAndRejectsSaddles) {
  std::array<double, 27> f{};
  for (int a = -1; a <= 1; ++a)
    for (int b = -1; b <= 1; ++b)
      for (int c = -1; c <= 1; ++c)
        f[static_cast<std::size_t>((a + 1) * 9 + (b + 1) * 3 + (c + 1))] = -((a - 2.0) * (a - 2.0)) - b * b - c * c;
  EXPECT_DOUBLE_EQ(quadratic_peak_offset(f)[0], 0.5);
  for (int a = -1; a <= 1; ++a)
    for (int b = -1; b <= 1; ++b)
      for (int c = -1; c <= 1; ++c)
        f[static_cast<std::size_t>((a + 1) * 9 + (b + 1) * 3 + (c + 1))] = a * a - b * b - c * c;  // a saddle
  EXPECT_EQ(quadratic_peak_offset(f), (std::array<double, 3>{0, 0, 0}));
}

}  // namespace
}  // namespace phew::watershed
