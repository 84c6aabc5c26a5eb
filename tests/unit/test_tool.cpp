// The tools' option checking (check_options: pure) and the JSON config reader.
#include "cic_project.hpp"
#include <phew/core/error.hpp>
#include "deblend.hpp"
#include "dtfe_surface.hpp"
#include "mergertree.hpp"
#include "phew_merge.hpp"
#include "phew_segment.hpp"
#include "synth_particles.hpp"
#include "unbind.hpp"
#include "voters.hpp"
#include <phew/manifest/fields.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/mailbox.hpp>
#include <phew/tool/json_config.hpp>

#include <CLI/CLI.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>

namespace phew::tools {
namespace {

// A tool started without a launcher does not initialise MPI (this test binary does not either): every
// communicator is one rank that makes no MPI call, and a mailbox delivers to itself, by tag, in order.
TEST(WithoutMpi, OneRankAndAMailboxToItself) {
  ASSERT_FALSE(mpi::running());
  const mpi::Comm world;
  EXPECT_EQ(world.size(), 1);
  EXPECT_EQ(world.rank(), 0);
  EXPECT_EQ(world.sum(3), 3);
  EXPECT_EQ(mpi::ranks_on_node(world), 1);
  mpi::Mailbox box(world);
  box.send(0, 7, {'a'});
  box.send(0, 8, {'b', 'c'});
  box.send(0, 7, {'d'});
  EXPECT_FALSE(box.try_receive(9).has_value());
  EXPECT_EQ(box.receive(8).bytes, (std::vector<char>{'b', 'c'}));
  EXPECT_EQ(box.receive(7).bytes, (std::vector<char>{'a'}));
  EXPECT_EQ(box.try_receive(7)->bytes, (std::vector<char>{'d'}));
  EXPECT_THROW(box.send(1, 7), core::Error);
  box.done();
  EXPECT_FALSE(mpi::running());
}

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
  EXPECT_EQ(p.assignment, grid::Assignment::tsc);
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
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::usage);
    }
  }
}

TEST(SegmentOptions, ParsesTheThresholdAndRefusesBadOnes) {
  SegmentOptions o;
  o.threshold = "80mean";
  o.refine_positions = true;
  const PhewSegmentParams c = check_segment_options(o);
  EXPECT_EQ(c.threshold.unit, core::DensityThreshold::Unit::mean);
  EXPECT_EQ(c.threshold.value, 80.0);
  EXPECT_TRUE(c.refine_positions);
  for (const char* bad : {"", "80means", "-3mean", "nan", "1e400"}) {
    o.threshold = bad;
    try {
      check_segment_options(o);
      FAIL() << bad;
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::usage) << bad;
    }
  }
}

TEST(MergeOptions, ChecksThresholdsAndTheirCombinations) {
  MergeOptions o;
  o.relevance = 3;
  o.saddle_threshold = "200mean";
  o.mass_threshold = "10particles";
  const MergeParams c = check_merge_options(o);
  EXPECT_EQ(c.relevance, 3.0);
  ASSERT_TRUE(c.saddle && c.mass);
  EXPECT_EQ(c.saddle->unit, core::DensityThreshold::Unit::mean);
  EXPECT_EQ(c.mass->unit, core::MassThreshold::Unit::particles);
  EXPECT_FALSE(c.second_relevance);
  for (auto mutate : std::vector<std::function<void(MergeOptions&)>>{
           [](MergeOptions& m) { m.relevance = 1; },             // not above 1
           [](MergeOptions& m) { m.relevance = std::nan(""); },  // not a number
           [](MergeOptions& m) { m.second_relevance = 4; },      // with a saddle threshold
           [](MergeOptions& m) {
             m.saddle_threshold = "200";
             m.second_relevance = 0.5;
           },
           [](MergeOptions& m) { m.saddle_threshold = "200means"; },
           [](MergeOptions& m) { m.mass_threshold = "10cells"; }}) {
    MergeOptions bad = o;
    mutate(bad);
    try {
      check_merge_options(bad);
      FAIL();
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::usage);
    }
  }
  o.saddle_threshold.clear();
  o.second_relevance = 5;
  EXPECT_EQ(check_merge_options(o).second_relevance, 5.0);
}

// Every mutation of a valid option set is refused as a usage error.
template <typename Options, typename Check>
void expect_usage_errors(const Options& valid, Check check,
                         const std::vector<std::function<void(Options&)>>& mutations) {
  for (std::size_t i = 0; i < mutations.size(); ++i) {
    Options o = valid;
    mutations[i](o);
    try {
      check(o);
      FAIL() << "mutation " << i << " was accepted";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::usage) << "mutation " << i;
    }
  }
}

TEST(DeblendOptions, ChecksAndConverts) {
  DeblendOptions o;
  o.bin_fraction = 0.2;
  o.min_particles = 50;
  o.velocity_relevance = 2.5;
  const phasespace::DeblendParams p = check_deblend_options(o);
  EXPECT_EQ(p.bin_fraction, 0.2);
  EXPECT_EQ(p.min_particles, 50);
  EXPECT_EQ(p.velocity_relevance, 2.5);
  expect_usage_errors<DeblendOptions>(
      o, check_deblend_options,
      {[](DeblendOptions& x) { x.bin_fraction = 0; }, [](DeblendOptions& x) { x.bin_fraction = -1; },
       [](DeblendOptions& x) { x.velocity_relevance = 1; }, [](DeblendOptions& x) { x.min_particles = 1; }});
}

TEST(UnbindOptions, ChecksAndConverts) {
  UnbindOptions o;
  o.potential = "tree";
  o.centre = "most-bound";
  o.saddle = true;
  o.min_bound = 5;
  o.most_bound = 30;
  o.threads = "3";
  o.softening = 0.5;
  const UnbindParams p = check_unbind_options(o);
  EXPECT_EQ(p.params.potential, unbind::PotentialMode::tree);
  EXPECT_EQ(p.params.centre, unbind::CentreKind::most_bound);
  EXPECT_TRUE(p.params.saddle);
  EXPECT_TRUE(p.params.potential_of_all);  // implied by --saddle
  EXPECT_EQ(p.params.min_bound, 5u);
  EXPECT_EQ(p.params.n_most_bound, 30u);
  EXPECT_EQ(p.threads, 3);
  ASSERT_TRUE(p.softening);
  EXPECT_EQ(*p.softening, 0.5);
  EXPECT_EQ(check_unbind_options(UnbindOptions{}).threads, 0);  // auto
  expect_usage_errors<UnbindOptions>(
      o, check_unbind_options,
      {[](UnbindOptions& x) { x.potential = "exact"; }, [](UnbindOptions& x) { x.centre = "middle"; },
       [](UnbindOptions& x) { x.softening = -1.0; }, [](UnbindOptions& x) { x.min_bound = 0; },
       [](UnbindOptions& x) { x.most_bound = -1; }, [](UnbindOptions& x) { x.max_iterations = 0; },
       [](UnbindOptions& x) { x.threads = "0"; }, [](UnbindOptions& x) { x.export_yt = "halos.h5"; },
       [](UnbindOptions& x) { x.export_yt = "dir/.0.h5"; }});
}

TEST(VotersOptions, ChecksAndConverts) {
  VotersOptions o;
  o.n_voters = 30;
  o.search_radius = 12;
  o.potential = "compute";
  o.pm_mesh = 64;
  o.theta = 0.7;
  o.no_boost = true;
  VotersParams c = check_voters_options(o);
  EXPECT_EQ(c.params.n_voters, 30);
  EXPECT_EQ(c.params.search_radius, 12.0);
  EXPECT_EQ(c.potential, PotentialChoice::compute);
  EXPECT_EQ(c.params.gravity.pm_mesh, 64);
  EXPECT_EQ(c.params.gravity.theta, 0.7);
  EXPECT_FALSE(c.params.boost);
  EXPECT_TRUE(c.default_softening);
  o.softening = 0.5;
  o.potential = "auto";
  c = check_voters_options(o);
  EXPECT_FALSE(c.default_softening);
  EXPECT_EQ(c.params.softening, 0.5);
  EXPECT_EQ(c.potential, PotentialChoice::automatic);
  expect_usage_errors<VotersOptions>(
      o, check_voters_options,
      {[](VotersOptions& x) { x.n_voters = 0; }, [](VotersOptions& x) { x.search_radius = -1; },
       [](VotersOptions& x) { x.min_radius = -1; }, [](VotersOptions& x) { x.potential = "magic"; },
       [](VotersOptions& x) { x.theta = 0; }, [](VotersOptions& x) { x.pm_mesh = 8; },
       [](VotersOptions& x) { x.pm_mesh = 8192; }, [](VotersOptions& x) { x.search_radius = std::nan(""); },
       [](VotersOptions& x) { x.min_radius = std::nan(""); }, [](VotersOptions& x) { x.softening = -1; },
       [](VotersOptions& x) { x.softening = 0; }, [](VotersOptions& x) { x.softening = std::nan(""); },
       [](VotersOptions& x) { x.theta = std::nan(""); }});
}

TEST(TreeOptions, BatchOrOnTheFlyAndPositiveVotes) {
  TreeOptions o;
  o.stages = {"a.peaks.h5", "b.peaks.h5"};
  o.min_votes = 12;
  const mergertree::TreeParams p = check_tree_options(o);
  EXPECT_EQ(p.min_votes, 12);
  EXPECT_EQ(p.graveyard_votes, 10);
  EXPECT_EQ(p.graveyard_max_age, 10);
  TreeOptions fly;
  fly.state = "tree.h5";
  fly.add = {"c.peaks.h5"};
  EXPECT_NO_THROW(check_tree_options(fly));
  expect_usage_errors<TreeOptions>(
      o, check_tree_options,
      {[](TreeOptions& x) { x.stages.clear(); }, [](TreeOptions& x) { x.state = "tree.h5"; },
       [](TreeOptions& x) { x.min_votes = 0; }, [](TreeOptions& x) { x.graveyard_votes = 0; },
       [](TreeOptions& x) { x.graveyard_max_age = -1; }});
  expect_usage_errors<TreeOptions>(fly, check_tree_options, {[](TreeOptions& x) { x.add.clear(); }});
}

TEST(DtfeOptions, ChecksAndConverts) {
  DtfeOptions o;
  o.size = 20;
  o.resolution = 64;
  o.axis = "x";
  o.samples = 4;
  o.threads = "3";
  o.schedule = "model";
  o.precision = "float64";
  DtfeParams c = check_dtfe_options(o);
  EXPECT_EQ(c.maps.size, 20.0);
  EXPECT_EQ(c.maps.resolution, 64);
  ASSERT_TRUE(c.maps.depth);
  EXPECT_EQ(*c.maps.depth, 20.0);  // default: the size
  EXPECT_EQ(c.maps.margin, 2.0);   // default: grown per field from a tenth of the size
  EXPECT_TRUE(c.maps.auto_margin);
  EXPECT_EQ(c.maps.axis, 0);
  EXPECT_EQ(c.maps.map.samples, 4);
  EXPECT_EQ(c.maps.map.mode, dtfe::MapMode::ray);
  EXPECT_EQ(c.threads, 3);
  EXPECT_EQ(c.maps.schedule, dtfe::Schedule::model);
  EXPECT_TRUE(c.float64);
  o.depth = "box";
  o.margin = "0";
  o.threads = "auto";
  o.samples = 1;
  o.mode = "exact";
  c = check_dtfe_options(o);
  EXPECT_FALSE(c.maps.depth);
  EXPECT_EQ(c.maps.margin, 0.0);
  EXPECT_FALSE(c.maps.auto_margin);  // a given margin is used as it is
  EXPECT_EQ(c.threads, 0);
  EXPECT_EQ(c.maps.map.mode, dtfe::MapMode::exact);
}

TEST(DtfeOptions, RejectsBadValuesAsUsageErrors) {
  for (auto mutate : std::vector<std::function<void(DtfeOptions&)>>{
           [](DtfeOptions& o) { o.size = 0; }, [](DtfeOptions& o) { o.size = -1; },
           [](DtfeOptions& o) { o.resolution = 0; }, [](DtfeOptions& o) { o.resolution = 70000; },
           [](DtfeOptions& o) { o.top = -1; }, [](DtfeOptions& o) { o.depth = "deep"; },
           [](DtfeOptions& o) { o.depth = "-2"; }, [](DtfeOptions& o) { o.margin = "-1"; },
           [](DtfeOptions& o) { o.axis = "w"; }, [](DtfeOptions& o) { o.samples = 0; },
           [](DtfeOptions& o) {
             o.mode = "exact";
             o.samples = 4;
           },
           [](DtfeOptions& o) { o.mode = "fast"; }, [](DtfeOptions& o) { o.backend = "foo"; },
           [](DtfeOptions& o) { o.threads = "0"; }, [](DtfeOptions& o) { o.threads = "two"; },
           [](DtfeOptions& o) { o.schedule = "greedy"; }, [](DtfeOptions& o) { o.precision = "float16"; }}) {
    DtfeOptions o;
    o.size = 10;
    o.resolution = 8;
    mutate(o);
    try {
      check_dtfe_options(o);
      FAIL();
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::usage);
    }
  }
}

TEST(SynthOptions, ChecksAndResolvesTheScene) {
  SynthOptions o;
  o.model = "plummer";
  o.particles = "2000";
  o.scale_radius = "2";
  o.position = "1,2,3";
  o.seed = "9";
  o.precision = "float64";
  const SynthParams c = check_synth_options(o);
  ASSERT_EQ(c.scene.components.size(), 1u);
  EXPECT_EQ(c.scene.components[0].particles, 2000u);
  EXPECT_EQ(c.scene.components[0].scale_radius, 2.0);
  EXPECT_EQ(c.scene.components[0].center[1], 2.0);
  EXPECT_EQ(c.scene.seed, 9u);
  EXPECT_TRUE(c.scene.double_precision);
  EXPECT_TRUE(c.scene_file.empty());
  SynthOptions b;
  b.model = "crossing";
  b.snapshots = "4";
  EXPECT_EQ(check_synth_options(b).scene.snapshots(), 4);
}

TEST(SynthOptions, RejectsBadValues) {
  for (auto mutate : std::vector<std::function<void(SynthOptions&)>>{
           [](SynthOptions& o) { o.mass = "lots"; }, [](SynthOptions& o) { o.mass = "-1"; },
           [](SynthOptions& o) { o.particles = "0"; }, [](SynthOptions& o) { o.position = "1,2"; },
           [](SynthOptions& o) { o.seed = "-3"; }, [](SynthOptions& o) { o.model = "king"; },
           [](SynthOptions& o) { o.snapshots = "3"; }, [](SynthOptions& o) { o.precision = "float16"; },
           [](SynthOptions& o) {
             o.model = "collision";
             o.mass = "2";
           }}) {
    SynthOptions o;
    o.model = "nfw";
    mutate(o);
    try {
      check_synth_options(o);
      FAIL() << o.model;
    } catch (const core::Error& e) {
      EXPECT_EQ(e.kind(), core::ErrorKind::usage) << e.what();
    }
  }
  SynthOptions missing;
  missing.model = "no/such/scene.json";
  try {
    check_synth_options(missing);
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::io);
  }
}

TEST(JsonConfig, FlattensObjectsAndLists) {
  std::istringstream in(R"({"grid": 64, "types": [0, 1], "region": "0,0,0,1,1,1", "flag": true})");
  const auto items = tool::JsonConfig().from_config(in);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].name, "grid");
  EXPECT_EQ(items[0].inputs, std::vector<std::string>{"64"});
  EXPECT_EQ(items[1].inputs, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(items[3].inputs, std::vector<std::string>{"true"});
}

TEST(JsonConfig, RejectsNonObjects) {
  std::istringstream in("[1, 2]");
  EXPECT_THROW(tool::JsonConfig().from_config(in), CLI::ConversionError);
}

}  // namespace
}  // namespace phew::tools

// A summary declared as a field list records each field under its name, in the order listed.
TEST(ManifestFields, RecordsMembersAndComputedValuesInOrder) {
  struct Result {
    std::int64_t n = 3;
    std::vector<int> rounds{1, 2};
    double above = 5, discarded = 2;
  };
  // clang-format off: one column and its constraints per line
  const auto fields = phew::manifest::Fields<Result>()
                          .field("n", &Result::n)
                          .field("rounds", &Result::rounds)
                          .field("kept", [](const Result& r) { return phew::manifest::Json(r.above - r.discarded); });
  // clang-format on
  phew::manifest::Builder b("t", {"t"}, 1);
  fields.record(b, Result{});
  const auto m = b.finish("x", 0, "");
  EXPECT_EQ(m["summary"]["n"], 3);
  EXPECT_EQ(m["summary"]["rounds"], phew::manifest::Json({1, 2}));
  EXPECT_EQ(m["summary"]["kept"], 3.0);
}
