#include <phew/dtfe/schedule.hpp>

#include <algorithm>
#include <numeric>
#include <queue>
#include <set>

namespace phew::dtfe {

std::vector<Transfer> communication_list(std::span<const double> totals) {
  struct P {
    int id;
    double t;
  };
  const std::size_t n = totals.size();
  std::vector<Transfer> out;
  if (n < 2) return out;
  const double mean = std::accumulate(totals.begin(), totals.end(), 0.0) / static_cast<double>(n);
  std::vector<P> ps(n);
  for (std::size_t i = 0; i < n; ++i) ps[i] = {static_cast<int>(i), totals[i]};
  std::sort(ps.begin(), ps.end(), [](const P& a, const P& b) { return a.t != b.t ? a.t > b.t : a.id < b.id; });
  std::size_t lr = 0;  // ranks above the mean: the senders, most loaded first
  while (lr < n && ps[lr].t > mean) ++lr;
  std::size_t cr = n - 1;  // the least loaded receiver not yet full
  for (std::size_t i = 0; i < lr; ++i) {
    while (cr >= lr && ps[i].t > mean) {
      const double room = mean - ps[cr].t, excess = ps[i].t - mean;
      if (excess > room) {
        if (room > 0) out.push_back({ps[i].id, ps[cr].id, ps[cr].t, room});
        ps[i].t -= room;
        ps[cr].t = mean;
        if (cr == 0) break;
        --cr;
      } else {
        out.push_back({ps[i].id, ps[cr].id, ps[cr].t, excess});
        ps[cr].t += excess;
        ps[i].t = mean;
      }
    }
  }
  return out;
}

SenderPlan pack(std::span<const double> cost, const std::vector<Transfer>& sends) {
  std::vector<Transfer> s(sends);
  std::stable_sort(s.begin(), s.end(), [](const Transfer& a, const Transfer& b) { return a.at < b.at; });
  SenderPlan plan;
  plan.local.resize(s.size() + 1);
  plan.shipped.resize(s.size());
  for (const Transfer& t : s) plan.receiver.push_back(t.receiver);
  // Bins: before send k (the time between sends) and send k itself.
  struct Bin {
    double room;
    bool shipped;
    std::size_t k;
  };
  std::vector<Bin> bins;
  double previous = 0;
  for (std::size_t k = 0; k < s.size(); ++k) {
    bins.push_back({std::max(0.0, s[k].at - previous), false, k});
    bins.push_back({s[k].amount, true, k});
    previous = std::max(previous, s[k].at);
  }
  std::stable_sort(bins.begin(), bins.end(), [](const Bin& a, const Bin& b) { return a.room < b.room; });
  std::vector<std::size_t> items(cost.size());
  std::iota(items.begin(), items.end(), 0);
  std::stable_sort(items.begin(), items.end(), [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  for (std::size_t it : items) {
    bool placed = false;
    for (Bin& b : bins)
      if (b.room >= cost[it]) {
        b.room -= cost[it];
        (b.shipped ? plan.shipped : plan.local)[b.k].push_back(it);
        placed = true;
        break;
      }
    if (!placed) plan.local.back().push_back(it);
  }
  return plan;
}

SimulatedRun simulate_none(std::span<const double> cost, std::span<const int> owner, int ranks) {
  std::vector<double> t(static_cast<std::size_t>(ranks), 0.0);
  SimulatedRun r;
  for (std::size_t k = 0; k < cost.size(); ++k) {
    t[static_cast<std::size_t>(owner[k])] += cost[k];
    r.busy += cost[k];
  }
  r.makespan = t.empty() ? 0.0 : *std::max_element(t.begin(), t.end());
  return r;
}

SimulatedRun simulate_model(std::span<const double> cost, std::span<const double> predicted, std::span<const int> owner,
                            int ranks, double latency) {
  const auto nr = static_cast<std::size_t>(ranks);
  std::vector<std::vector<std::size_t>> mine(nr);
  std::vector<double> totals(nr, 0.0);
  SimulatedRun r;
  for (std::size_t k = 0; k < cost.size(); ++k) {
    mine[static_cast<std::size_t>(owner[k])].push_back(k);
    totals[static_cast<std::size_t>(owner[k])] += predicted[k];
    r.busy += cost[k];
  }
  const std::vector<Transfer> list = communication_list(totals);
  std::vector<std::vector<Transfer>> sends(nr);
  for (const Transfer& t : list) sends[static_cast<std::size_t>(t.sender)].push_back(t);
  // Senders run their plans with the true costs; every shipped batch arrives `latency` after the
  // sender reached it. Receivers (and ranks that neither send nor receive) run their own fields first.
  struct Arrival {
    double time;
    double work;
  };
  std::vector<std::vector<Arrival>> arrivals(nr);
  std::vector<double> finish(nr, 0.0);
  for (std::size_t rk = 0; rk < nr; ++rk) {
    std::vector<double> c, p;
    for (std::size_t k : mine[rk]) c.push_back(cost[k]), p.push_back(predicted[k]);
    if (sends[rk].empty()) {
      finish[rk] = std::accumulate(c.begin(), c.end(), 0.0);
      continue;
    }
    const SenderPlan plan = pack(p, sends[rk]);
    double now = 0;
    for (std::size_t s = 0; s < plan.shipped.size(); ++s) {
      for (std::size_t i : plan.local[s]) now += c[i];
      double work = 0;
      for (std::size_t i : plan.shipped[s]) work += c[i];
      arrivals[static_cast<std::size_t>(plan.receiver[s])].push_back({now + latency, work});
      ++r.messages;
    }
    for (std::size_t i : plan.local.back()) now += c[i];
    finish[rk] = now;
  }
  // Receivers take batches in list order (the order of `list`, kept by the per-receiver vectors).
  for (std::size_t rk = 0; rk < nr; ++rk)
    for (const Arrival& a : arrivals[rk]) finish[rk] = std::max(finish[rk], a.time) + a.work;
  r.makespan = nr ? *std::max_element(finish.begin(), finish.end()) : 0.0;
  return r;
}

SimulatedRun simulate_dynamic(std::span<const double> cost, std::span<const double> predicted,
                              std::span<const int> owner, int ranks, double latency) {
  const auto nr = static_cast<std::size_t>(ranks);
  // Each rank's queue, largest predicted first; owners and thieves both take from the front.
  std::vector<std::vector<std::size_t>> queue(nr);
  std::vector<double> queued(nr, 0.0);  // predicted work still queued (not started)
  SimulatedRun r;
  for (std::size_t k = 0; k < cost.size(); ++k) {
    queue[static_cast<std::size_t>(owner[k])].push_back(k);
    queued[static_cast<std::size_t>(owner[k])] += predicted[k];
    r.busy += cost[k];
  }
  std::vector<std::size_t> head(nr, 0);
  for (auto& q : queue)
    std::stable_sort(q.begin(), q.end(), [&](std::size_t a, std::size_t b) { return predicted[a] > predicted[b]; });
  // Ranks with queued work by how much: the victim a thief asks is the most loaded.
  std::set<std::pair<double, std::size_t>> load;
  for (std::size_t rk = 0; rk < nr; ++rk)
    if (!queue[rk].empty()) load.insert({queued[rk], rk});
  auto take = [&](std::size_t rk, std::size_t k) {
    load.erase({queued[rk], rk});
    queued[rk] -= predicted[k];
    if (head[rk] < queue[rk].size()) load.insert({queued[rk], rk});
  };
  std::vector<double> busy_until(nr, 0.0);
  using Event = std::pair<double, std::size_t>;  // (time the rank is free, rank)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> free;
  for (std::size_t rk = 0; rk < nr; ++rk) free.push({0.0, rk});
  double makespan = 0;
  while (!free.empty()) {
    const auto [t, rk] = free.top();
    free.pop();
    if (head[rk] < queue[rk].size()) {
      const std::size_t k = queue[rk][head[rk]++];
      take(rk, k);
      busy_until[rk] = t + cost[k];
      free.push({busy_until[rk], rk});
      continue;
    }
    // Out of work: ask the most loaded rank that still has a queued field; it answers when its
    // current field is done (a request and a reply: two latencies).
    if (load.empty()) {
      makespan = std::max(makespan, t);
      continue;
    }
    const std::size_t v = std::prev(load.end())->second;
    // The largest field v has not started: moving the most work per message keeps thieves busy
    // for longest while they wait for the next answer (which comes only between v's fields).
    const std::size_t k = queue[v][head[v]++];
    take(v, k);
    const double work = cost[k];
    const double start = std::max(t, busy_until[v]) + 2 * latency;
    ++r.messages;
    busy_until[rk] = start + work;
    free.push({busy_until[rk], rk});
  }
  r.makespan = makespan;
  return r;
}

}  // namespace phew::dtfe
