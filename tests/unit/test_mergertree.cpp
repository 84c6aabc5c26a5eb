// lib/mergertree's add_stage on hand-made snapshots: voting, mergers and the main progenitor,
// artefacts (which do not vote), the graveyard (revival, expiry), lineages; and the tree's rows
// through tree.h5's rows and back.
#include <phew/core/error.hpp>
#include <phew/mergertree/ctrees.hpp>
#include <phew/mergertree/stages.hpp>
#include <phew/mergertree/tree.hpp>
#include <phew/mergertree/tree_stats.hpp>

#include <gtest/gtest.h>

#include <numeric>
#include <sstream>

namespace phew::mergertree {
namespace {

struct PeakSpec {
  std::int64_t id;
  std::vector<std::uint64_t> members, voters;
  bool from_deblending = false;
};

Stage stage(std::int64_t snap, const std::vector<PeakSpec>& peaks) {
  Stage st;
  st.snap = snap;
  st.time = 1.0 + static_cast<double>(snap);
  std::map<std::uint64_t, std::int64_t> member;
  for (const PeakSpec& p : peaks) {
    st.peaks.push_back({p.id, p.from_deblending, {static_cast<double>(p.id), 0, 0}, {0, 0, 0}, 1.0, {}});
    for (std::uint64_t m : p.members) member[m] = p.id;
    st.voters[p.id] = p.voters;
  }
  for (const auto& [id, peak] : member) {
    st.member_id.push_back(id);
    st.member_peak.push_back(peak);
  }
  return st;
}

std::vector<std::uint64_t> range(std::uint64_t first, std::uint64_t last) {
  std::vector<std::uint64_t> v(last - first + 1);
  std::iota(v.begin(), v.end(), first);
  return v;
}

const TreeRow& row(const TreeState& st, std::int64_t snap, std::int64_t id) {
  for (const TreeRow& r : st.rows)
    if (r.peak == PeakKey{snap, id}) return r;
  throw std::runtime_error("no such row");
}

// Snapshot 0: A = 1, B = 2, C = 3. Snapshot 1: A and B merge into 5 (A's voters are most of 5's), C is
// gone, 7 (velocity-space only) has no progenitor: an artefact, 8 is new. Snapshot 2: 5 -> 10, 8 is
// gone, 9 holds C's particles and C's voters: revived from the graveyard. Snapshot 3: 10 -> 12,
// 9 -> 13.
class Tree4 : public ::testing::Test {
 protected:
  void SetUp() override {
    p.min_votes = 3;
    p.graveyard_votes = 2;
    p.graveyard_max_age = 2;
    add_stage(st,
              stage(0, {{1, range(1, 10), {1, 2, 3, 4}},
                        {2, range(11, 20), {11, 12, 13, 14}},
                        {3, range(21, 30), {21, 22, 23, 24}}}),
              p);
    after0 = st;
    add_stage(st,
              stage(1, {{5, range(1, 20), {1, 2, 3, 11}},
                        {7, range(31, 35), {31, 32, 33, 34}, true},
                        {8, range(41, 45), {41, 42, 43, 44}}}),
              p);
    after1 = st;
    add_stage(st,
              stage(2, {{9, range(21, 30), {21, 22, 23, 50}},
                        {10, range(1, 20), {1, 2, 3, 4}},
                        {14, range(31, 35), {31, 32, 33, 34}}}),
              p);
    after2 = st;
    add_stage(st, stage(3, {{12, range(1, 20), {1, 2, 3, 4}}, {13, range(21, 30), {21, 22, 23, 24}}}), p);
  }
  TreeParams p;
  TreeState st, after0, after1, after2;
};

TEST_F(Tree4, FirstSnapshotStartsALineagePerPeak) {
  ASSERT_EQ(after0.rows.size(), 3u);
  for (std::int64_t id = 1; id <= 3; ++id) {
    const TreeRow& r = row(after0, 0, id);
    EXPECT_EQ(r.lineage, id);
    EXPECT_TRUE(r.main_progenitor.none());
    EXPECT_FALSE(r.artefact);
  }
  EXPECT_TRUE(after0.graveyard.empty());
  EXPECT_EQ(after0.next_lineage, 4);
}

TEST_F(Tree4, AMergerLinksBothAndTheDescendantsVotersChooseTheMain) {
  const TreeRow& d = row(after1, 1, 5);
  EXPECT_EQ(d.n_progenitors, 2);
  EXPECT_EQ(d.main_progenitor, (PeakKey{0, 1}));  // 3 of 5's voters were A's members, 1 was B's
  EXPECT_EQ(d.progenitor_votes, 4);               // A's voters all voted for 5
  EXPECT_EQ(d.lineage, 1);
  EXPECT_FALSE(row(after1, 0, 1).merged);
  EXPECT_EQ(row(after1, 0, 1).descendant, (PeakKey{1, 5}));
  EXPECT_TRUE(row(after1, 0, 2).merged);
  EXPECT_EQ(row(after1, 0, 2).descendant, (PeakKey{1, 5}));
}

TEST_F(Tree4, AnUnmatchedVelocityPeakIsAnArtefactAndDoesNotVote) {
  EXPECT_TRUE(row(after1, 1, 7).artefact);
  EXPECT_FALSE(row(after1, 1, 8).artefact);  // not from deblending: a new peak
  EXPECT_EQ(row(after1, 1, 8).lineage, 5);
  EXPECT_EQ(after1.artefact_ids, (std::vector<std::int64_t>{7}));
  // 7's voters are all in 14 next, but an artefact casts no votes: 14 has no progenitor
  EXPECT_TRUE(row(after2, 2, 14).main_progenitor.none());
  EXPECT_TRUE(row(after1, 1, 7).descendant.none());
}

TEST_F(Tree4, DeadAndMergedPeaksVotersGoToTheGraveyard) {
  // C died (no descendant has its members), B merged: their voters, A's are alive.
  std::map<std::uint64_t, PeakKey> g;
  for (const auto& [particle, grave] : after1.graveyard) {
    g[particle] = grave.peak;
    EXPECT_EQ(grave.died, 0);
  }
  for (std::uint64_t v : {11, 12, 13, 14}) EXPECT_EQ(g.at(v), (PeakKey{0, 2}));
  for (std::uint64_t v : {21, 22, 23, 24}) EXPECT_EQ(g.at(v), (PeakKey{0, 3}));
  EXPECT_EQ(g.size(), 8u);
}

TEST_F(Tree4, TheGraveyardRevivesALostPeak) {
  const TreeRow& r = row(after2, 2, 9);
  EXPECT_TRUE(r.revived);
  EXPECT_EQ(r.main_progenitor, (PeakKey{0, 3}));
  EXPECT_EQ(r.gap, 2);
  EXPECT_EQ(r.lineage, 3);
  EXPECT_EQ(r.progenitor_votes, 3);
  EXPECT_EQ(row(after2, 0, 3).descendant, (PeakKey{2, 9}));
  for (const auto& [particle, grave] : after2.graveyard) EXPECT_NE(grave.peak, (PeakKey{0, 3}));  // left the graveyard
  // 8 died in snapshot 1: its voters are buried
  EXPECT_EQ(after2.graveyard.at(41).peak, (PeakKey{1, 8}));
  EXPECT_EQ(after2.graveyard.at(41).died, 1);
  EXPECT_EQ(row(after2, 2, 10).main_progenitor, (PeakKey{1, 5}));
  EXPECT_EQ(row(after2, 2, 10).lineage, 1);
}

TEST_F(Tree4, LineagesContinue) {
  EXPECT_EQ(row(st, 3, 13).main_progenitor, (PeakKey{2, 9}));
  EXPECT_EQ(row(st, 3, 13).lineage, 3);
  EXPECT_EQ(row(st, 3, 12).lineage, 1);
  EXPECT_EQ(st.next_lineage, 7);  // A, B, C, 7, 8 and 14
}

TEST(Graveyard, APeakRecordedAsMergedAndRevivedDidNotMerge) {
  // Snapshot 0: A = 1 and B = 2. Snapshot 1: one peak 5 holds both, with B's voters: B is its main
  // progenitor and A is recorded as merged into it. Snapshot 2: B goes on as 10, and 9 holds A's
  // particles and voters again: A is revived, so it did not merge; the peak it was confused with is kept.
  TreeParams p;
  p.min_votes = 3;
  p.graveyard_votes = 2;
  TreeState st;
  add_stage(st, stage(0, {{1, range(1, 10), {1, 2, 3, 4}}, {2, range(11, 20), {11, 12, 13, 14}}}), p);
  add_stage(st, stage(1, {{5, range(1, 20), {11, 12, 13, 14}}}), p);
  EXPECT_TRUE(row(st, 0, 1).merged);
  EXPECT_EQ(row(st, 0, 1).descendant, (PeakKey{1, 5}));
  add_stage(st, stage(2, {{9, range(1, 10), {1, 2, 3, 4}}, {10, range(11, 20), {11, 12, 13, 14}}}), p);
  const TreeRow& a = row(st, 0, 1);
  EXPECT_FALSE(a.merged);
  EXPECT_EQ(a.descendant, (PeakKey{2, 9}));
  EXPECT_EQ(a.merged_before_revival, (PeakKey{1, 5}));
  EXPECT_EQ(row(st, 1, 5).n_progenitors, 1);  // B alone: A is no longer one of its progenitors
  const TreeRow& revived = row(st, 2, 9);
  EXPECT_TRUE(revived.revived);
  EXPECT_EQ(revived.main_progenitor, (PeakKey{0, 1}));
  EXPECT_EQ(revived.lineage, a.lineage);
  EXPECT_EQ(revived.gap, 2);
  // the rows survive tree.h5's rows
  Tree tree;
  tree.state = st;
  tree.times = {1, 2, 3};
  EXPECT_EQ(from_tree_rows(to_tree_rows(tree)).state.rows[0].merged_before_revival, (PeakKey{1, 5}));
}

TEST(Graveyard, APeakCanBeRevivedUpToMaxAgeSnapshotsAfterItsDeath) {
  // Peak 1 is last seen in snapshot 0 (it is dead from snapshot 1 on); peak 9 fills the gap; peak 2
  // brings back 1's voters in snapshot `back`. With graveyard_max_age 2 it is revived in snapshot 3
  // (2 snapshots after its death, gap 3) but not in snapshot 4, when its entries have expired.
  TreeParams p;
  p.min_votes = 3;
  p.graveyard_votes = 2;
  p.graveyard_max_age = 2;
  for (std::int64_t back : {2, 3, 4}) {
    TreeState st;
    add_stage(st, stage(0, {{1, range(1, 10), {1, 2, 3, 4}}}), p);
    for (std::int64_t s = 1; s < back; ++s) add_stage(st, stage(s, {{9, range(100, 110), {100, 101, 102, 103}}}), p);
    add_stage(st, stage(back, {{2, range(1, 10), {1, 2, 3, 4}}}), p);
    const TreeRow& r = row(st, back, 2);
    EXPECT_EQ(r.revived, back <= 3) << back;
    EXPECT_EQ(r.main_progenitor, (back <= 3 ? PeakKey{0, 1} : PeakKey{})) << back;
    EXPECT_EQ(r.gap, back <= 3 ? back : 0) << back;
    EXPECT_EQ(r.lineage == 1, back <= 3) << back;
    for (const auto& [particle, grave] : st.graveyard) EXPECT_LE(back - grave.died, p.graveyard_max_age);
  }
}

TEST_F(Tree4, TooFewVotesDoNotLink) {
  TreeParams strict = p;
  strict.min_votes = 5;  // more than any peak's 4 voters
  TreeState s2;
  add_stage(s2, stage(0, {{1, range(1, 10), {1, 2, 3, 4}}}), strict);
  add_stage(s2, stage(1, {{2, range(1, 10), {5, 6, 7, 8}}}), strict);
  EXPECT_TRUE(row(s2, 1, 2).main_progenitor.none());
  EXPECT_EQ(row(s2, 1, 2).lineage, 2);
  EXPECT_EQ(s2.graveyard.size(), 4u);
}

TEST(Votes, APeakWithFewerVotersNeedsTheSameShareOfItsOwn) {
  EXPECT_EQ(votes_needed(15, 20, 20), 15);
  EXPECT_EQ(votes_needed(15, 25, 20), 15);
  EXPECT_EQ(votes_needed(15, 10, 20), 8);  // ceil(7.5)
  EXPECT_EQ(votes_needed(15, 4, 20), 3);
  EXPECT_EQ(votes_needed(15, 1, 20), 1);
  EXPECT_EQ(votes_needed(10, 10, 20), 5);
  EXPECT_EQ(votes_needed(15, 10, 0), 15);  // N_v unknown: as asked
}

// N_v = 20, min-votes 15: a progenitor with 10 voters (few candidates in its radius) links with 8 of
// them, not 7.
TEST(Votes, AProgenitorWithTenVotersLinksWithEight) {
  const TreeParams p;  // 15 of 20
  for (const auto& [votes, linked] : std::vector<std::pair<std::uint64_t, bool>>{{8, true}, {7, false}}) {
    TreeState st;
    Stage s0 = stage(0, {{1, range(1, 100), range(1, 10)}});
    s0.voters_per_peak = 20;
    add_stage(st, s0, p);
    // The first `votes` voters stay in peak 2, the others went to peak 3.
    Stage s1 = stage(1, {{2, range(1, votes), range(1, votes)}, {3, range(votes + 1, 100), range(votes + 1, 20)}});
    s1.voters_per_peak = 20;
    add_stage(st, s1, p);
    EXPECT_EQ(row(st, 1, 2).main_progenitor == (PeakKey{0, 1}), linked) << votes << " votes";
  }
}

// A progenitor's 20 voters split 9 / 8 / 3 over descendants 2, 3, 4. When 3 is in 2's halo the two hold
// 17 >= 15 together: 2 (the most votes) continues the lineage. When 3 is a halo of its own, no one has 15.
TEST(Votes, VotesSplitOverOneHalosPeaksCountForTheHalo) {
  const TreeParams p;
  for (const bool same_halo : {true, false}) {
    TreeState st;
    Stage s0 = stage(0, {{1, range(1, 100), range(1, 20)}});
    s0.voters_per_peak = 20;
    add_stage(st, s0, p);
    Stage s1 = stage(
        1, {{2, range(1, 9), range(1, 9)}, {3, range(10, 17), range(10, 17)}, {4, range(18, 100), range(18, 20)}});
    s1.voters_per_peak = 20;
    if (same_halo) s1.peaks[1].halo.host = 2;
    add_stage(st, s1, p);
    EXPECT_EQ(row(st, 1, 2).main_progenitor == (PeakKey{0, 1}), same_halo);
    EXPECT_TRUE(row(st, 1, 3).main_progenitor.none());
    EXPECT_EQ(row(st, 1, 2).lineage == 1, same_halo);
  }
}

// A dead peak is revived by a descendant with 5 voters (of N_v = 20) with 3 graveyard votes (10 of 20:
// half, rounded up), not 2.
TEST(Votes, TheGraveyardVotesScaleToo) {
  const TreeParams p;  // graveyard 10 of 20
  for (const auto& [votes, revived] : std::vector<std::pair<std::uint64_t, bool>>{{3, true}, {2, false}}) {
    TreeState st;
    Stage s0 = stage(0, {{1, range(1, 40), range(1, 20)}});
    s0.voters_per_peak = 20;
    add_stage(st, s0, p);
    Stage s1 = stage(1, {{2, range(500, 600), range(500, 519)}});  // 1's particles in no peak: it dies
    s1.voters_per_peak = 20;
    add_stage(st, s1, p);
    // Peak 3 has five voters, `votes` of them were 1's voters.
    std::vector<std::uint64_t> v = range(1, votes);
    for (std::uint64_t k = votes; k < 5; ++k) v.push_back(700 + k);
    Stage s2 = stage(2, {{3, range(1, 40), v}});
    s2.voters_per_peak = 20;
    add_stage(st, s2, p);
    EXPECT_EQ(row(st, 2, 3).main_progenitor == (PeakKey{0, 1}), revived) << votes << " votes";
  }
}

TEST_F(Tree4, TheTreeSurvivesItsFileRows) {
  Tree tree;
  tree.state = st;
  tree.params = p;
  tree.sim = {{100, 100, 100}, 1234, "kpc", true};
  tree.times = {1, 2, 3, 4};
  const Tree back = from_tree_rows(to_tree_rows(tree));
  ASSERT_EQ(back.state.rows.size(), st.rows.size());
  for (std::size_t i = 0; i < st.rows.size(); ++i) {
    const TreeRow &a = st.rows[i], &b = back.state.rows[i];
    EXPECT_EQ(a.peak, b.peak);
    EXPECT_EQ(a.lineage, b.lineage);
    EXPECT_EQ(a.main_progenitor, b.main_progenitor);
    EXPECT_EQ(a.descendant, b.descendant);
    EXPECT_EQ(std::tie(a.merged, a.revived, a.artefact, a.from_deblending, a.gap, a.n_progenitors, a.progenitor_votes),
              std::tie(b.merged, b.revived, b.artefact, b.from_deblending, b.gap, b.n_progenitors, b.progenitor_votes));
    EXPECT_EQ(a.position, b.position);
  }
  EXPECT_EQ(back.times, tree.times);
  EXPECT_EQ(back.params.graveyard_max_age, 2);
  EXPECT_EQ(back.sim.box, tree.sim.box);
  EXPECT_EQ(back.state.next_lineage, st.next_lineage);
  EXPECT_EQ(back.state.artefact_ids, st.artefact_ids);
  EXPECT_EQ(back.state.last.member_id, st.last.member_id);
  EXPECT_EQ(back.state.last.voters, st.last.voters);
  EXPECT_EQ(back.state.graveyard.size(), st.graveyard.size());
  // continuing from the file gives what continuing in memory gives
  TreeState direct = st;
  Tree cont = back;
  add_stage(direct, stage(4, {{20, range(1, 20), {1, 2, 3, 4}}}), p);
  append_stage(cont, stage(4, {{20, range(1, 20), {1, 2, 3, 4}}}), tree.sim, false, "stage 4");
  EXPECT_EQ(row(cont.state, 4, 20).lineage, row(direct, 4, 20).lineage);
  EXPECT_EQ(cont.times.size(), 5u);
}

TEST(AppendStage, RefusesAnotherSimulationAndTimeDisorder) {
  Tree tree;
  const Simulation sim{{100, 100, 100}, 1000, "kpc", true};
  append_stage(tree, stage(0, {{1, range(1, 5), {1, 2}}}), sim, false, "s0");
  Simulation other = sim;
  other.n_particles = 999;
  EXPECT_THROW(append_stage(tree, stage(1, {}), other, false, "s1"), core::Error);
  Simulation zoom = other;
  zoom.periodic = false;  // a region may lose particles
  EXPECT_NO_THROW(append_stage(tree, stage(1, {}), zoom, false, "s1"));
  Stage early = stage(2, {});
  early.time = 0.5;
  try {
    append_stage(tree, early, zoom, false, "s2");
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.kind(), core::ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("out of time order"), std::string::npos);
  }
  EXPECT_NO_THROW(append_stage(tree, early, zoom, true, "s2"));
}

TEST(TextExport, OneLinePerPeakAndDescendantsByRow) {
  TreeParams p;
  p.min_votes = 2;
  TreeState st;
  add_stage(st, stage(0, {{1, range(1, 5), {1, 2, 3}}}), p);
  add_stage(st, stage(1, {{4, range(1, 5), {1, 2, 3}}}), p);
  const std::string links = links_text(st);
  EXPECT_EQ(std::count(links.begin(), links.end(), '\n'), 3);
  EXPECT_NE(links.find("\n0 1 1 -1 0 1 4 0 0 0 0 0 0 1\n"), std::string::npos) << links;
}

// A hand-made tree of rows: one main branch of `n` snapshots (peak 1 in each) with masses m(t) and
// positions x(t) along x, and at snapshot 2 a second progenitor (peak 2 of snapshot 1) merging in.
Tree branch_tree(int n, double (*mass)(double), double (*x)(double), double vx) {
  Tree tree;
  tree.units = {true, 3.085678e21, 1.98847e43, 1e5, true, false, 0, 0, 0};  // kpc/h, 1e10 Msun/h, km/s
  tree.sim.box = {1000, 1000, 1000};
  tree.sim.periodic = true;
  TreeState& st = tree.state;
  for (int k = 0; k < n; ++k) {
    TreeRow r;
    r.peak = {k, 1};
    r.time = 1.0 + k;
    r.mass = mass(r.time);
    r.position = {x(r.time), 500, 500};
    r.velocity = {vx, 0, 0};
    r.lineage = 1;
    if (k > 0) r.main_progenitor = {k - 1, 1};
    if (k + 1 < n) r.descendant = {k + 1, 1};
    st.rows.push_back(r);
    if (k == 1) {
      TreeRow m = r;
      m.peak = {1, 2};
      m.mass = 0.5 * r.mass;  // a major merger (ratio >= 0.3)
      m.lineage = 2;
      m.main_progenitor = {};
      m.descendant = {2, 1};
      m.merged = true;
      m.halo.host = 1;  // a subhalo of peak 1
      st.rows.push_back(m);
    }
  }
  std::sort(st.rows.begin(), st.rows.end(), [](const TreeRow& a, const TreeRow& b) { return a.peak < b.peak; });
  st.next_lineage = 3;
  return tree;
}

TEST(Ctrees, DepthFirstMainProgenitorFirstAndLinksByRow) {
  const Tree tree = branch_tree(
      4, [](double t) { return 10 * t; }, [](double t) { return 100 + t; }, 0);
  const auto trees = depth_first_trees(tree.state);
  ASSERT_EQ(trees.size(), 1u);  // one root: the peak of the last snapshot
  // rows: (0,1) (1,1) (1,2) (2,1) (3,1); depth first from (3,1): (2,1), then its main progenitor (1,1),
  // (0,1), then the merged (1,2).
  EXPECT_EQ(trees[0], (std::vector<std::size_t>{4, 3, 1, 0, 2}));
  const std::string text = ctrees_file(tree, "test");
  EXPECT_EQ(text.rfind("#scale(0) id(1) desc_scale(2) desc_id(3)", 0), 0u);
  EXPECT_NE(text.find("\n#Consistent Trees Version"), std::string::npos);
  EXPECT_NE(text.find("\n#Full box size = 1.000000 Mpc/h\n"), std::string::npos);
  EXPECT_NE(text.find("\n1\n#tree 4\n"), std::string::npos) << text;  // one tree, rooted at row 4
  // The merged peak (row 2): descendant row 3, not its main progenitor (mmp? 0), pid = row 1 (its host).
  std::istringstream in(text.substr(text.find("#tree 4\n") + 8));
  std::string line;
  std::vector<std::vector<double>> rows;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    rows.emplace_back(std::istream_iterator<double>(l), std::istream_iterator<double>());
  }
  ASSERT_EQ(rows.size(), 5u);
  const auto& merged = rows[4];
  EXPECT_EQ(merged[1], 2);    // id
  EXPECT_EQ(merged[3], 3);    // desc_id
  EXPECT_EQ(merged[5], 1);    // pid
  EXPECT_EQ(merged[14], 0);   // mmp?
  EXPECT_EQ(rows[0][3], -1);  // the root has no descendant
  EXPECT_EQ(rows[1][4], 2);   // row 3 has two progenitors
  EXPECT_EQ(rows[1][15], 3);  // scale_of_last_MM: the major merger at time 3 ...
  EXPECT_EQ(rows[0][15], 3);  // ... is the last one of its descendant too
  EXPECT_EQ(rows[2][15], 0);  // and none before it
}

TEST(TreeStats, MassGrowingWithTimeHasConstantBetaAndNoFluctuation) {
  // M proportional to t: alpha = 1 between any two snapshots, so beta = 1/2 and xi = 0.
  EXPECT_NEAR(mass_growth_beta(1, 10, 2, 20), 0.5, 1e-12);
  EXPECT_NEAR(mass_growth_beta(2, 5, 3, 5), 0.0, 1e-12);
  EXPECT_LT(mass_growth_beta(2, 5, 3, 4), 0.0);
  const Tree tree = branch_tree(
      6, [](double t) { return 10 * t; }, [](double t) { return 100 + t; }, 0);
  const auto j = tree_statistics(tree, {});
  const auto& h = j["haloes"];
  EXPECT_EQ(h["n_trees"], 1);
  EXPECT_EQ(h["main_branch_length"]["mean"], 6.0);
  EXPECT_EQ(h["branches_per_tree"]["mean"], 2.0);  // the first peak and the merged one have no progenitor
  EXPECT_EQ(h["beta_m"]["n"], 5);
  EXPECT_NEAR(h["beta_m"]["mean"].get<double>(), 0.5, 1e-12);
  EXPECT_NEAR(h["xi_m"]["std"].get<double>(), 0.0, 1e-12);
  EXPECT_EQ(h["n_progenitors"]["2"], 1);
  EXPECT_EQ(j["counts"]["mergers"], 1);
}

TEST(TreeStats, ArtefactsAreNeitherHaloesNorSubhaloes) {
  // A velocity-space peak of the last snapshot with no progenitor is an artefact: it sits in peak 1's
  // halo, but it is no subhalo (no tree), only counted as an artefact.
  Tree tree = branch_tree(
      4, [](double t) { return 10 * t; }, [](double t) { return 100 + t; }, 0);
  TreeRow a = tree.state.rows.back();
  a.peak = {3, 7};
  a.lineage = 3;
  a.main_progenitor = {};
  a.artefact = true;
  a.from_deblending = true;
  a.halo.host = 1;
  tree.state.rows.push_back(a);
  tree.state.next_lineage = 4;
  const auto j = tree_statistics(tree, {});
  EXPECT_EQ(j["haloes"]["n_trees"], 1);
  EXPECT_EQ(j["subhaloes"]["n_trees"], 0);
  EXPECT_EQ(j["counts"]["artefacts"], 1);
  EXPECT_EQ(j["counts"]["final_artefacts_left_out"], 1);
}

TEST(TreeStats, BallisticMotionHasNoDisplacementMiss) {
  // x = 100 + 3 t moving at v = 3 (snapshot units: kpc/h per kpc/h/(km/s)): every step is what the
  // velocity predicts, Delta_r = 0; a peak that jumps is flagged.
  const Tree tree = branch_tree(
      5, [](double) { return 10.0; }, [](double t) { return 100 + 3 * t; }, 3);
  const auto j = tree_statistics(tree, {});
  EXPECT_NEAR(j["haloes"]["delta_r"]["median"].get<double>(), 0.0, 1e-12);
  EXPECT_EQ(j["haloes"]["delta_r_fraction_above_1"], 0.0);
  Tree jump = tree;
  jump.state.rows.back().position[0] += 50;  // the last step lands 50 away from where v puts it
  EXPECT_GT(tree_statistics(jump, {})["haloes"]["delta_r_fraction_above_1"].get<double>(), 0.0);
  EXPECT_NEAR(cosmic_time(1, 1, 0), 2.0 / 3.0, 1e-12);  // Einstein-de Sitter: t = 2/(3 H0) a^(3/2)
}

}  // namespace
}  // namespace phew::mergertree
