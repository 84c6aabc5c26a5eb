#include <phew/mergertree/tree.hpp>

#include <phew/core/error.hpp>
#include <phew/core/radix_sort.hpp>

#include <algorithm>

namespace phew::mergertree {
namespace {

// The candidate with the most votes; ties go to the lower key. {none, 0} when there are no votes.
template <typename K>
std::pair<K, std::int64_t> winner(const std::map<K, std::int64_t>& votes) {
  std::pair<K, std::int64_t> best{K{}, 0};
  for (const auto& [k, n] : votes)
    if (n > best.second) best = {k, n};  // map order: the first of equal counts is the lower key
  return best;
}

// N_v of a stage: as asked, else the most any of its peaks has.
std::int64_t voters_per_peak(const Stage& s) {
  if (s.voters_per_peak > 0) return s.voters_per_peak;
  std::size_t most = 0;
  for (const auto& [id, v] : s.voters) most = std::max(most, v.size());
  return static_cast<std::int64_t>(most);
}

// The halo a peak of the stage belongs to: its host's ID, or its own when it is a central (or the host
// is unknown).
std::int64_t halo_of(const Stage& s, std::int64_t id) {
  const auto it =
      std::lower_bound(s.peaks.begin(), s.peaks.end(), id, [](const StagePeak& p, std::int64_t k) { return p.id < k; });
  return it != s.peaks.end() && it->id == id && it->halo.host > 0 ? it->halo.host : id;
}

TreeRow* row_of(TreeState& st, const PeakKey& k) {
  const std::ptrdiff_t r = st.row_index(k);
  return r < 0 ? nullptr : &st.rows[static_cast<std::size_t>(r)];
}

}  // namespace

std::int64_t votes_needed(std::int64_t required, std::size_t voters, std::int64_t per_peak) {
  const auto n = static_cast<std::int64_t>(voters);
  if (per_peak <= 0 || n >= per_peak) return required;
  return std::max<std::int64_t>(1, (required * n + per_peak - 1) / per_peak);
}

VoterCoverage voter_coverage(const Stage& stage, std::int64_t min_votes) {
  std::vector<std::int64_t> n;
  for (const StagePeak& pk : stage.peaks) {
    const auto it = stage.voters.find(pk.id);
    n.push_back(it == stage.voters.end() ? 0 : static_cast<std::int64_t>(it->second.size()));
  }
  VoterCoverage c;
  c.peaks = static_cast<std::int64_t>(n.size());
  c.with_min_votes = std::count_if(n.begin(), n.end(), [&](std::int64_t v) { return v >= min_votes; });
  if (!n.empty()) {
    std::nth_element(n.begin(), n.begin() + static_cast<std::ptrdiff_t>(n.size() / 2), n.end());
    c.median_voters = n[n.size() / 2];
  }
  return c;
}

std::ptrdiff_t TreeState::row_index(const PeakKey& k) const {
  const auto it =
      std::lower_bound(rows.begin(), rows.end(), k, [](const TreeRow& r, const PeakKey& key) { return r.peak < key; });
  return it != rows.end() && it->peak == k ? it - rows.begin() : -1;
}

std::size_t TreeState::linked_row(const PeakKey& k) const {
  const std::ptrdiff_t r = row_index(k);
  if (r < 0)
    throw core::Error::internal("mergertree: peak {} of snapshot {} is linked to but has no row", k.id, k.snap);
  return static_cast<std::size_t>(r);
}

std::int64_t Stage::peak_of(std::uint64_t particle) const {
  auto it = std::lower_bound(member_id.begin(), member_id.end(), particle);
  return it != member_id.end() && *it == particle ? member_peak[static_cast<std::size_t>(it - member_id.begin())] : 0;
}

std::vector<std::int64_t> Stage::peaks_of(const std::vector<std::uint64_t>& particles) const {
  std::vector<std::pair<std::uint64_t, std::size_t>> order(particles.size()), scratch;
  for (std::size_t i = 0; i < particles.size(); ++i) order[i] = {particles[i], i};
  core::radix_sort(order, scratch, [](const auto& q) { return q.first; });
  std::vector<std::int64_t> peak(particles.size(), 0);
  auto at = member_id.begin();
  for (const auto& [id, i] : order) {
    // Galloping from the last match: the gaps between successive voters are a few members.
    std::size_t step = 1;
    auto hi = at;
    while (hi != member_id.end() && *hi < id) {
      at = hi;
      hi = static_cast<std::size_t>(member_id.end() - hi) > step ? hi + static_cast<std::ptrdiff_t>(step)
                                                                 : member_id.end();
      step *= 2;
    }
    at = std::lower_bound(at, hi, id);
    if (at != member_id.end() && *at == id) peak[i] = member_peak[static_cast<std::size_t>(at - member_id.begin())];
  }
  return peak;
}

namespace {

// Rows for a snapshot's peaks, in ID order.
std::vector<TreeRow> new_rows(const Stage& stage) {
  std::vector<TreeRow> fresh;
  for (const StagePeak& pk : stage.peaks) {
    TreeRow r;
    r.peak = {stage.snap, pk.id};
    r.from_deblending = pk.from_deblending;
    r.position = pk.position;
    r.velocity = pk.velocity;
    r.mass = pk.mass;
    r.time = stage.time;
    r.halo = pk.halo;
    fresh.push_back(r);
  }
  return fresh;
}

// What the votes of one step decided.
struct Matching {
  std::map<std::int64_t, std::vector<std::pair<PeakKey, std::int64_t>>> match;  // descendant -> (progenitor, votes)
  std::vector<PeakKey> dead;
  std::map<PeakKey, std::int64_t> revived_from;  // dead progenitor -> descendant that revived it
  std::vector<std::int64_t> artefacts;           // descendants from deblending that nothing matched
};

// 1-2. Each progenitor (not an artefact) votes with its voters' current membership. The descendant with
// the most votes is its match when it has the votes needed, or when the descendants of its halo have
// them together: an object whose peak the mesh resolves into several (a core split into fragments, a
// subclump that appeared beside it) keeps its lineage in the fragment most of its voters chose.
void vote_progenitors(const TreeState& st, const Stage& stage, const TreeParams& p, Matching& m) {
  const std::int64_t per_peak = voters_per_peak(st.last);
  auto votes_now = [&](const StagePeak& prog) {
    return !std::binary_search(st.artefact_ids.begin(), st.artefact_ids.end(), prog.id);
  };
  // Where every voter is now, looked up at once in the order the loop below takes them.
  std::vector<std::uint64_t> voters;
  for (const StagePeak& prog : st.last.peaks)
    if (auto vit = st.last.voters.find(prog.id); votes_now(prog) && vit != st.last.voters.end())
      voters.insert(voters.end(), vit->second.begin(), vit->second.end());
  const std::vector<std::int64_t> now = stage.peaks_of(voters);
  std::size_t next = 0;
  for (const StagePeak& prog : st.last.peaks) {
    if (!votes_now(prog)) continue;
    std::map<std::int64_t, std::int64_t> votes;
    auto vit = st.last.voters.find(prog.id);
    const std::size_t n_voters = vit == st.last.voters.end() ? 0 : vit->second.size();
    for (std::size_t k = 0; k < n_voters; ++k)
      if (const std::int64_t d = now[next++]; d > 0) ++votes[d];
    const auto [d, n] = winner(votes);
    const std::int64_t needed = votes_needed(p.min_votes, n_voters, per_peak);
    std::int64_t in_halo = 0;
    if (n > 0 && n < needed) {
      const std::int64_t halo = halo_of(stage, d);
      for (const auto& [other, k] : votes)
        if (halo_of(stage, other) == halo) in_halo += k;
    }
    const PeakKey key{st.last.snap, prog.id};
    if (n > 0 && std::max(n, in_halo) >= needed)
      m.match[d].push_back({key, n});
    else
      m.dead.push_back(key);
  }
}

// 3-4. Unmatched descendants vote in the graveyard; still unmatched: artefact or new. A revived peak
// leaves the graveyard.
void vote_in_graveyard(TreeState& st, const Stage& stage, const TreeParams& p, Matching& m) {
  for (const StagePeak& d : stage.peaks) {
    if (m.match.count(d.id)) continue;
    std::map<PeakKey, std::int64_t> votes;
    auto vit = stage.voters.find(d.id);
    const std::size_t n_voters = vit == stage.voters.end() ? 0 : vit->second.size();
    if (vit != stage.voters.end())
      for (std::uint64_t particle : vit->second)
        if (auto g = st.graveyard.find(particle); g != st.graveyard.end()) ++votes[g->second.peak];
    const auto [dead_peak, n] = winner(votes);
    if (n > 0 && n >= votes_needed(p.graveyard_votes, n_voters, voters_per_peak(stage)) &&
        !m.revived_from.count(dead_peak)) {
      m.match[d.id].push_back({dead_peak, n});
      m.revived_from[dead_peak] = d.id;
      continue;
    }
    if (d.from_deblending) m.artefacts.push_back(d.id);
  }
  for (auto it = st.graveyard.begin(); it != st.graveyard.end();)
    it = m.revived_from.count(it->second.peak) ? st.graveyard.erase(it) : std::next(it);
}

// 5. The main progenitor of descendant `did` and the votes it cast for it: the only one, or the one
// chosen by the descendant's voters in the previous membership.
std::pair<PeakKey, std::int64_t> main_progenitor(const TreeState& st, const Stage& stage, std::int64_t did,
                                                 const std::vector<std::pair<PeakKey, std::int64_t>>& progs) {
  if (progs.size() == 1) return progs.front();
  std::map<PeakKey, std::int64_t> votes;
  for (const auto& [k, n] : progs) votes[k] = 0;
  auto vit = stage.voters.find(did);
  if (vit != stage.voters.end() && st.has_last)
    for (std::uint64_t particle : vit->second) {
      const PeakKey k{st.last.snap, st.last.peak_of(particle)};
      if (auto v = votes.find(k); v != votes.end()) ++v->second;
    }
  // Most of the descendant's voters; ties (e.g. no votes at all) go to the progenitor that voted
  // most for it, then to the lower key.
  std::pair<PeakKey, std::int64_t> best{progs.front().first, -1};
  std::int64_t best_cast = -1;
  for (const auto& [k, n] : progs) {
    const std::int64_t v = votes[k];
    if (v > best.second || (v == best.second && (n > best_cast || (n == best_cast && k < best.first)))) {
      best = {k, v};
      best_cast = n;
    }
  }
  return {best.first, best_cast};
}

// 5. Links descendant row `d` to its progenitors: the main one passes on its lineage (and, revived,
// stops being merged), the others merge into it and their voters go to the graveyard.
void link_progenitors(TreeState& st, TreeRow& d, const std::vector<std::pair<PeakKey, std::int64_t>>& progs,
                      const PeakKey& main, Matching& m) {
  for (const auto& [k, n] : progs) {
    TreeRow* pr = row_of(st, k);
    if (!pr) continue;
    const PeakKey before = pr->descendant;  // a merged peak revived now: the peak it had merged into
    pr->descendant = d.peak;
    if (k == main) {
      d.lineage = pr->lineage;
      if (m.revived_from.count(k)) {
        d.revived = true;
        d.gap = d.peak.snap - k.snap;
        if (pr->merged) {  // it had merged into another peak: that was a confusion, its lineage goes on
          pr->merged = false;
          pr->merged_before_revival = before;
          if (TreeRow* into = row_of(st, before)) --into->n_progenitors;
        }
      }
    } else {
      pr->merged = true;
      m.dead.push_back(k);  // merged progenitors' voters go to the graveyard too
    }
  }
}

// 6. Dead progenitors' voters go to the graveyard (revived ones are alive again); old entries expire.
void bury(TreeState& st, std::vector<PeakKey> dead, const Matching& m, std::int64_t snap, const TreeParams& p) {
  std::sort(dead.begin(), dead.end());
  dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
  for (const PeakKey& k : dead) {
    if (k.snap != st.last.snap || m.revived_from.count(k)) continue;
    auto vit = st.last.voters.find(k.id);
    if (vit == st.last.voters.end()) continue;
    for (std::uint64_t particle : vit->second) st.graveyard[particle] = {k, k.snap};
  }
  for (auto it = st.graveyard.begin(); it != st.graveyard.end();)
    it = snap - it->second.died > p.graveyard_max_age ? st.graveyard.erase(it) : std::next(it);
}

}  // namespace

void add_stage(TreeState& st, Stage stage, const TreeParams& p) {
  std::vector<TreeRow> fresh = new_rows(stage);
  auto fresh_row = [&](std::int64_t id) -> TreeRow& {
    return *std::lower_bound(fresh.begin(), fresh.end(), PeakKey{stage.snap, id},
                             [](const TreeRow& r, const PeakKey& k) { return r.peak < k; });
  };
  Matching m;
  if (st.has_last) vote_progenitors(st, stage, p, m);
  vote_in_graveyard(st, stage, p, m);
  for (auto& [did, progs] : m.match) {
    TreeRow& d = fresh_row(did);
    d.n_progenitors = static_cast<std::int64_t>(progs.size());
    const auto [main, main_votes] = main_progenitor(st, stage, did, progs);
    d.main_progenitor = main;
    d.progenitor_votes = main_votes;
    link_progenitors(st, d, progs, main, m);
  }
  std::sort(m.artefacts.begin(), m.artefacts.end());
  for (TreeRow& r : fresh) {
    if (r.lineage == 0) r.lineage = st.next_lineage++;
    r.artefact = std::binary_search(m.artefacts.begin(), m.artefacts.end(), r.peak.id);
  }
  bury(st, std::move(m.dead), m, stage.snap, p);

  st.rows.insert(st.rows.end(), fresh.begin(), fresh.end());
  st.artefact_ids = m.artefacts;
  st.last = std::move(stage);
  st.has_last = true;
}

}  // namespace phew::mergertree
