#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/quantity.hpp"

#include <gtest/gtest.h>

namespace phew {
namespace {

TEST(Error, KindsMapToTheDocumentedExitCodes) {
  EXPECT_EQ(exit_code(ErrorKind::usage), 2);
  EXPECT_EQ(exit_code(ErrorKind::input), 3);
  EXPECT_EQ(exit_code(ErrorKind::io), 4);
  EXPECT_EQ(exit_code(ErrorKind::internal), 1);
  const Error e = Error::input("{}: bad {}", "f.h5", 3);
  EXPECT_STREQ(e.what(), "f.h5: bad 3");
  EXPECT_EQ(e.kind(), ErrorKind::input);
}

TEST(DensityThreshold, ParsesAbsoluteMeanAndCrit) {
  EXPECT_DOUBLE_EQ(DensityThreshold::parse("1.5e-7").resolve(2.0, std::nullopt), 1.5e-7);
  EXPECT_DOUBLE_EQ(DensityThreshold::parse("80mean").resolve(2.0, std::nullopt), 160.0);
  EXPECT_DOUBLE_EQ(DensityThreshold::parse("200crit").resolve(2.0, 0.5), 100.0);
  EXPECT_EQ(DensityThreshold::parse("80mean").to_string(), "80mean");
}

TEST(DensityThreshold, RejectsBadText) {
  for (const char* bad : {"", "mean", "-1", "80foo", "nan", "inf"}) {
    try {
      DensityThreshold::parse(bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
    }
  }
}

TEST(DensityThreshold, CritWithoutCosmologyIsAnInputError) {
  try {
    DensityThreshold::parse("80crit").resolve(1.0, std::nullopt);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
  }
}

TEST(MassThreshold, ParsesParticles) {
  EXPECT_DOUBLE_EQ(MassThreshold::parse("10particles").resolve(0.5), 5.0);
  EXPECT_DOUBLE_EQ(MassThreshold::parse("3.5").resolve(0.0), 3.5);
  EXPECT_THROW(MassThreshold::parse("10particles").resolve(0.0), Error);
  EXPECT_THROW(MassThreshold::parse("10stars"), Error);
}

TEST(Log, FormatsNumbersForHumans) {
  EXPECT_EQ(log::thousands(1311208), "1,311,208");
  EXPECT_EQ(log::thousands(-1000), "-1,000");
  EXPECT_EQ(log::thousands(12), "12");
  EXPECT_EQ(log::bytes(1536), "1.5 KiB");
}

TEST(Memory, RefusesWhatDoesNotFit) {
  EXPECT_NO_THROW(check_memory(1e6, 2'000'000, "job"));
  EXPECT_THROW(check_memory(3e6, 2'000'000, "job"), Error);
  EXPECT_NO_THROW(check_memory(3e6, 0, "job"));  // unknown: no guess
}

}  // namespace
}  // namespace phew
