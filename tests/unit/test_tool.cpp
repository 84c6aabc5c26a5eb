// The tools' option checking (check_options: pure) and the JSON config reader.
#include "cic_project.hpp"
#include "core/error.hpp"
#include "phew_merge.hpp"
#include "phew_segment.hpp"
#include "tool/json_config.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>

namespace phew {
namespace {

TEST(CicOptions, ChecksAndConverts) {
  CicOptions o;
  o.grid = "32,32,64";
  o.region = "0,0,0,10,10,20";
  o.assignment = "tsc";
  o.precision = "float64";
  const CicParams p = check_cic_options(o);
  EXPECT_EQ(p.shape[2], 64);
  ASSERT_TRUE(p.region);
  EXPECT_EQ(p.region->extent[2], 20.0);
  EXPECT_EQ(p.assignment, Assignment::tsc);
  EXPECT_EQ(p.precision, io::Precision::f64);
}

TEST(CicOptions, RejectsBadValuesAsUsageErrors) {
  for (auto mutate : std::vector<std::function<void(CicOptions&)>>{
           [](CicOptions& o) { o.grid = "-3"; }, [](CicOptions& o) { o.region = "0,0,0,1,1"; },
           [](CicOptions& o) { o.region = "0,0,0,1,-1,1"; }, [](CicOptions& o) { o.assignment = "pcs"; },
           [](CicOptions& o) { o.precision = "float16"; }}) {
    CicOptions o;
    o.grid = "16";
    mutate(o);
    try {
      check_cic_options(o);
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
    }
  }
}

TEST(SegmentOptions, ParsesTheThresholdAndRefusesBadOnes) {
  SegmentOptions o;
  o.threshold = "80mean";
  o.refine_positions = true;
  const SegmentChecked c = check_segment_options(o);
  EXPECT_EQ(c.threshold.unit, DensityThreshold::Unit::mean);
  EXPECT_EQ(c.threshold.value, 80.0);
  EXPECT_TRUE(c.refine_positions);
  for (const char* bad : {"", "80means", "-3mean", "nan", "1e400"}) {
    o.threshold = bad;
    try {
      check_segment_options(o);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
    }
  }
}

TEST(MergeOptions, ChecksThresholdsAndTheirCombinations) {
  MergeOptions o;
  o.relevance = 3;
  o.saddle_threshold = "200mean";
  o.mass_threshold = "10particles";
  const MergeChecked c = check_merge_options(o);
  EXPECT_EQ(c.relevance, 3.0);
  ASSERT_TRUE(c.saddle && c.mass);
  EXPECT_EQ(c.saddle->unit, DensityThreshold::Unit::mean);
  EXPECT_EQ(c.mass->unit, MassThreshold::Unit::particles);
  EXPECT_FALSE(c.second_relevance);
  for (auto mutate : std::vector<std::function<void(MergeOptions&)>>{
           [](MergeOptions& m) { m.relevance = 1; },                               // not above 1
           [](MergeOptions& m) { m.relevance = std::nan(""); },                    // not a number
           [](MergeOptions& m) { m.second_relevance = 4; },                        // with a saddle threshold
           [](MergeOptions& m) { m.saddle_threshold = "200"; m.second_relevance = 0.5; },
           [](MergeOptions& m) { m.saddle_threshold = "200means"; },
           [](MergeOptions& m) { m.mass_threshold = "10cells"; }}) {
    MergeOptions bad = o;
    mutate(bad);
    try {
      check_merge_options(bad);
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
    }
  }
  o.saddle_threshold.clear();
  o.second_relevance = 5;
  EXPECT_EQ(check_merge_options(o).second_relevance, 5.0);
}

TEST(JsonConfig, FlattensObjectsAndLists) {
  std::istringstream in(R"({"grid": 64, "types": [0, 1], "region": "0,0,0,1,1,1", "flag": true})");
  const auto items = JsonConfig().from_config(in);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].name, "grid");
  EXPECT_EQ(items[0].inputs, std::vector<std::string>{"64"});
  EXPECT_EQ(items[1].inputs, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(items[3].inputs, std::vector<std::string>{"true"});
}

TEST(JsonConfig, RejectsNonObjects) {
  std::istringstream in("[1, 2]");
  EXPECT_THROW(JsonConfig().from_config(in), CLI::ConversionError);
}

}  // namespace
}  // namespace phew
