#include <phew/dtfe/field_runner.hpp>

#include <phew/core/error.hpp>
#include <phew/core/progress.hpp>
#include <phew/dtfe/schedule.hpp>
#include <phew/mpi/mailbox.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>

namespace phew::dtfe {
namespace {

constexpr int kTagWork = 301;     // model schedule: a sender's batch of fields
constexpr int kTagRequest = 302;  // dynamic: "any work for me?"
constexpr int kTagReply = 303;    // dynamic: zero or one field

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// --- fields on the wire: [count] then per field [index, n_selected, empty_outside, scale, n, q[3n], mass[n]]
template <typename T>
void put(std::vector<char>& b, const T& v) {
  const auto* p = reinterpret_cast<const char*>(&v);
  b.insert(b.end(), p, p + sizeof(T));
}
template <typename T>
T get(const std::vector<char>& b, std::size_t& at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  at += sizeof(T);
  return v;
}

void put_field(std::vector<char>& b, std::size_t index, const FieldPoints& p) {
  put<std::uint64_t>(b, index);
  put<std::uint64_t>(b, p.n_selected);
  put<std::uint64_t>(b, p.empty_outside ? 1 : 0);
  put<double>(b, p.scale);
  put<std::uint64_t>(b, p.size());
  const auto* q = reinterpret_cast<const char*>(p.q.data());
  b.insert(b.end(), q, q + p.q.size() * sizeof(std::int32_t));
  const auto* m = reinterpret_cast<const char*>(p.mass.data());
  b.insert(b.end(), m, m + p.mass.size() * sizeof(double));
}

std::vector<std::pair<std::size_t, FieldPoints>> get_fields(const std::vector<char>& b) {
  std::vector<std::pair<std::size_t, FieldPoints>> out;
  if (b.empty()) return out;
  std::size_t at = 0;
  const auto count = get<std::uint64_t>(b, at);
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto index = get<std::uint64_t>(b, at);
    FieldPoints p;
    p.n_selected = get<std::uint64_t>(b, at);
    p.empty_outside = get<std::uint64_t>(b, at) != 0;
    p.scale = get<double>(b, at);
    const auto n = get<std::uint64_t>(b, at);
    p.q.resize(3 * n);
    std::memcpy(p.q.data(), b.data() + at, 3 * n * sizeof(std::int32_t));
    at += 3 * n * sizeof(std::int32_t);
    p.mass.resize(n);
    std::memcpy(p.mass.data(), b.data() + at, n * sizeof(double));
    at += n * sizeof(double);
    out.emplace_back(static_cast<std::size_t>(index), std::move(p));
  }
  return out;
}

class Runner {
 public:
  Runner(const ExtractFn& extract, const ComputeFn& compute, const mpi::Comm& comm, RunReport& report, std::size_t own)
      : extract_(extract),
        compute_(compute),
        comm_(comm),
        report_(report),
        progress_("fields", "fields", own, comm.size()) {}

  // This rank's own fields: computed here (run_local) or sent to another rank (sent).
  void run_local(std::size_t index, double predicted = 0, bool sample = false) {
    run(index, extract_(index), predicted, sample);
    progress_.add();
  }
  void sent(std::size_t n) { progress_.add(n); }
  void finish() { progress_.finish(); }

  void run(std::size_t index, const FieldPoints& points, double predicted = 0, bool sample = false) {
    FieldOutcome o;
    o.index = index;
    o.predicted = predicted;
    o.rank = comm_.rank();
    o.sample = sample;
    const double t0 = now();
    try {
      o.result = compute_(index, points);
    } catch (const core::Error& e) {
      if (e.kind() != core::ErrorKind::input) throw;
      o.error = e.what();
    }
    report_.busy_seconds += now() - t0;
    out.push_back(std::move(o));
  }

  std::vector<FieldOutcome> out;

 private:
  const ExtractFn& extract_;
  const ComputeFn& compute_;
  const mpi::Comm& comm_;
  RunReport& report_;
  core::Progress progress_;
};

void run_model(const std::vector<FieldTask>& tasks, Runner& runner, const ExtractFn& extract, const mpi::Comm& comm,
               RunReport& report) {
  // 1-2. Time fields chosen at random (a fixed function of the rank) and keep their maps: one per
  // rank as in the paper, but at least kMinSamples in all, so that a few ranks still fit a model.
  constexpr int kMinSamples = 16;
  const int per_rank = std::max(1, (kMinSamples + comm.size() - 1) / comm.size());
  std::vector<FieldTask> rest(tasks);
  struct Sample {
    double n, tri, interp;
    int has;
  };
  std::vector<Sample> mine(static_cast<std::size_t>(per_rank), Sample{0, 0, 0, 0});
  std::uint64_t state = 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(comm.rank() + 1);
  for (int k = 0; k < per_rank && !rest.empty(); ++k) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::size_t pick = static_cast<std::size_t>(state >> 33) % rest.size();
    const FieldTask t = rest[pick];
    rest.erase(rest.begin() + static_cast<long>(pick));
    runner.run_local(t.index, 0, true);
    const FieldOutcome& o = runner.out.back();
    mine[static_cast<std::size_t>(k)] = {static_cast<double>(t.n_particles), o.result.seconds_triangulation,
                                         o.result.seconds_interpolation, o.error.empty() ? 1 : 0};
  }
  // 3-4. Share the samples; every rank fits the same models.
  const std::vector<Sample> all = comm.all_gatherv<Sample>(mine);
  std::vector<double> n, tri, interp;
  for (const Sample& s : all)
    if (s.has) n.push_back(s.n), tri.push_back(s.tri), interp.push_back(s.interp);
  report.samples = static_cast<int>(n.size());
  report.model.triangulation = fit_triangulation(n, tri);
  report.model.interpolation = fit_power_law(n, interp);
  // 5. Predict the rest; share the totals; the communication list.
  std::vector<double> cost(rest.size());
  double total = 0;
  for (std::size_t i = 0; i < rest.size(); ++i)
    total += cost[i] = report.model.predict(static_cast<double>(rest[i].n_particles));
  const std::vector<double> totals = comm.all_gather(total);
  const std::vector<Transfer> list = communication_list(totals);
  std::vector<Transfer> sends;
  std::vector<int> senders;
  for (const Transfer& t : list) {
    if (t.sender == comm.rank()) sends.push_back(t);
    if (t.receiver == comm.rank()) senders.push_back(t.sender);
  }
  // 6. Execute: a sender computes the fields packed before each send, then ships a batch; the
  // others compute their own fields, then receive and compute their batches in list order.
  mpi::Mailbox mailbox(comm);
  const SenderPlan plan = pack(cost, sends);
  for (std::size_t k = 0; k < plan.shipped.size(); ++k) {
    for (std::size_t i : plan.local[k]) runner.run_local(rest[i].index, cost[i]);
    std::vector<char> b;
    put<std::uint64_t>(b, plan.shipped[k].size());
    for (std::size_t i : plan.shipped[k]) put_field(b, rest[i].index, extract(rest[i].index));
    report.fields_sent += plan.shipped[k].size();
    runner.sent(plan.shipped[k].size());
    ++report.messages_sent;
    mailbox.send(plan.receiver[k], kTagWork, std::move(b));
  }
  for (std::size_t i : plan.local.back()) runner.run_local(rest[i].index, cost[i]);
  for (int s : senders) {
    for (auto& [index, points] : get_fields(mailbox.receive(kTagWork, s).bytes)) {
      ++report.fields_received;
      runner.run(index, points, report.model.predict(static_cast<double>(points.n_selected)));
    }
  }
  mailbox.flush();
}

void run_dynamic(const std::vector<FieldTask>& tasks, Runner& runner, const ExtractFn& extract, const mpi::Comm& comm,
                 RunReport& report) {
  // The queue, largest first. A thief gets the largest field not started: it moves the most work per
  // message, and requests are answered only between fields, so thieves should wait as rarely as
  // possible (simulate_dynamic in schedule.cpp models exactly this).
  std::deque<FieldTask> queue(tasks.begin(), tasks.end());
  std::stable_sort(queue.begin(), queue.end(),
                   [](const FieldTask& a, const FieldTask& b) { return a.n_particles > b.n_particles; });
  double load = 0;
  for (const FieldTask& t : tasks)
    load += static_cast<double>(t.n_particles) * std::log2(std::max<double>(2, static_cast<double>(t.n_particles)));
  const std::vector<double> loads = comm.all_gather(load);
  std::vector<int> victims;
  for (int r = 0; r < comm.size(); ++r)
    if (r != comm.rank() && loads[static_cast<std::size_t>(r)] > 0) victims.push_back(r);
  std::stable_sort(victims.begin(), victims.end(), [&](int a, int b) {
    return loads[static_cast<std::size_t>(a)] > loads[static_cast<std::size_t>(b)];
  });

  mpi::Mailbox mailbox(comm);
  // Answers every pending request: the front field of the queue, or nothing.
  auto serve = [&] {
    while (const auto request = mailbox.try_receive(kTagRequest)) {
      std::vector<char> b;
      if (queue.empty()) {
        put<std::uint64_t>(b, 0);
      } else {
        const FieldTask t = queue.front();
        queue.pop_front();
        put<std::uint64_t>(b, 1);
        put_field(b, t.index, extract(t.index));
        ++report.fields_sent;
        runner.sent(1);
      }
      ++report.messages_sent;
      mailbox.send(request->source, kTagReply, std::move(b));
    }
  };
  while (!queue.empty()) {
    serve();
    if (queue.empty()) break;
    const FieldTask t = queue.front();
    queue.pop_front();
    runner.run_local(t.index);
  }
  for (int v : victims) {
    for (;;) {
      mailbox.send(v, kTagRequest);
      auto got = get_fields(mailbox.receive(kTagReply, v, serve).bytes);
      if (got.empty()) break;  // v has nothing queued, and never will again
      for (auto& [index, points] : got) {
        ++report.fields_received;
        runner.run(index, points);
      }
    }
  }
  // Done stealing: keep answering (with nothing) until every rank is done too.
  mailbox.done(serve);
  mailbox.flush();
}

}  // namespace

Schedule parse_schedule(const std::string& text) {
  if (text == "none") return Schedule::none;
  if (text == "model") return Schedule::model;
  if (text == "dynamic") return Schedule::dynamic;
  throw core::Error::usage("--schedule '{}': expected none, model or dynamic", text);
}

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::none:
      return "none";
    case Schedule::model:
      return "model";
    case Schedule::dynamic:
      return "dynamic";
  }
  return "?";
}

std::vector<FieldOutcome> run_fields(const std::vector<FieldTask>& tasks, const ExtractFn& extract,
                                     const ComputeFn& compute, Schedule schedule, const mpi::Comm& comm,
                                     RunReport& report) {
  const double t0 = now();
  report = RunReport{};
  Runner runner(extract, compute, comm, report, tasks.size());
  if (schedule == Schedule::none) {
    for (const FieldTask& t : tasks) runner.run_local(t.index);
  } else if (schedule == Schedule::model) {
    run_model(tasks, runner, extract, comm, report);
  } else {
    run_dynamic(tasks, runner, extract, comm, report);
  }
  runner.finish();
  report.seconds = now() - t0;
  return std::move(runner.out);
}

}  // namespace phew::dtfe
