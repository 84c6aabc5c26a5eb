#include "dtfe/field_runner.hpp"

#include "core/error.hpp"
#include "dtfe/schedule.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <thread>

namespace phew::dtfe {
namespace {

constexpr int kTagWork = 301;     // model schedule: a sender's batch of fields
constexpr int kTagRequest = 302;  // dynamic: "any work for me?"
constexpr int kTagReply = 303;    // dynamic: zero or one field

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Waiting ranks poll with short sleeps: OpenMPI's blocking calls spin, which on an oversubscribed
// node takes the core from the ranks that still compute.
void nap() { std::this_thread::sleep_for(std::chrono::microseconds(200)); }

// --- fields on the wire: [count] then per field [index, n_selected, scale, n, q[3n], mass[n]] -----
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

// Non-blocking sends whose buffers live until the end of the run.
class Outbox {
 public:
  explicit Outbox(MPI_Comm c) : comm_(c) {}
  void send(std::vector<char> bytes, int to, int tag) {
    if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw Error::input("a field of {} bytes is too large to send between ranks", bytes.size());
    buffers_.push_back(std::move(bytes));
    requests_.emplace_back();
    MPI_Isend(buffers_.back().data(), static_cast<int>(buffers_.back().size()), MPI_BYTE, to, tag, comm_,
              &requests_.back());
  }
  void wait() {
    if (!requests_.empty()) MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
    buffers_.clear();
  }

 private:
  MPI_Comm comm_;
  std::deque<std::vector<char>> buffers_;  // stable addresses
  std::vector<MPI_Request> requests_;
};

std::vector<char> receive(MPI_Comm c, const MPI_Status& st) {
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  std::vector<char> b(static_cast<std::size_t>(count));
  MPI_Recv(b.data(), count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, c, MPI_STATUS_IGNORE);
  return b;
}

// A private communicator, so that the runner's messages never meet anyone else's.
class DupComm {
 public:
  explicit DupComm(const mpi::Comm& c) { MPI_Comm_dup(c.raw(), &comm_); }
  ~DupComm() { MPI_Comm_free(&comm_); }
  DupComm(const DupComm&) = delete;
  DupComm& operator=(const DupComm&) = delete;
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_;
};

class Runner {
 public:
  Runner(const ExtractFn& extract, const ComputeFn& compute, const mpi::Comm& comm, RunReport& report)
      : extract_(extract), compute_(compute), comm_(comm), report_(report) {}

  void run_local(std::size_t index, double predicted = 0, bool sample = false) {
    run(index, extract_(index), predicted, sample);
  }

  void run(std::size_t index, const FieldPoints& points, double predicted = 0, bool sample = false) {
    FieldOutcome o;
    o.index = index;
    o.predicted = predicted;
    o.rank = comm_.rank();
    o.sample = sample;
    const double t0 = now();
    try {
      o.result = compute_(index, points);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::input) throw;
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
};

void run_model(const std::vector<FieldTask>& tasks, Runner& runner, const ExtractFn& extract, const mpi::Comm& comm,
               MPI_Comm c, RunReport& report) {
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
  for (std::size_t i = 0; i < rest.size(); ++i) total += cost[i] = report.model.predict(static_cast<double>(rest[i].n_particles));
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
  Outbox outbox(c);
  const SenderPlan plan = pack(cost, sends);
  for (std::size_t k = 0; k < plan.shipped.size(); ++k) {
    for (std::size_t i : plan.local[k]) runner.run_local(rest[i].index, cost[i]);
    std::vector<char> b;
    put<std::uint64_t>(b, plan.shipped[k].size());
    for (std::size_t i : plan.shipped[k]) put_field(b, rest[i].index, extract(rest[i].index));
    report.fields_sent += plan.shipped[k].size();
    ++report.messages_sent;
    outbox.send(std::move(b), plan.receiver[k], kTagWork);
  }
  for (std::size_t i : plan.local.back()) runner.run_local(rest[i].index, cost[i]);
  for (int s : senders) {
    MPI_Status st;
    for (int flag = 0;;) {
      MPI_Iprobe(s, kTagWork, c, &flag, &st);
      if (flag) break;
      nap();
    }
    for (auto& [index, points] : get_fields(receive(c, st))) {
      ++report.fields_received;
      runner.run(index, points, report.model.predict(static_cast<double>(points.n_selected)));
    }
  }
  outbox.wait();
}

void run_dynamic(const std::vector<FieldTask>& tasks, Runner& runner, const ExtractFn& extract, const mpi::Comm& comm,
                 MPI_Comm c, RunReport& report) {
  // The queue, largest first. A thief gets the largest field not started: it moves the most work per
  // message, and requests are answered only between fields, so thieves should wait as rarely as
  // possible (simulate_dynamic in schedule.cpp models exactly this).
  std::deque<FieldTask> queue(tasks.begin(), tasks.end());
  std::stable_sort(queue.begin(), queue.end(), [](const FieldTask& a, const FieldTask& b) { return a.n_particles > b.n_particles; });
  double load = 0;
  for (const FieldTask& t : tasks) load += static_cast<double>(t.n_particles) * std::log2(std::max<double>(2, static_cast<double>(t.n_particles)));
  const std::vector<double> loads = comm.all_gather(load);
  std::vector<int> victims;
  for (int r = 0; r < comm.size(); ++r)
    if (r != comm.rank() && loads[static_cast<std::size_t>(r)] > 0) victims.push_back(r);
  std::stable_sort(victims.begin(), victims.end(), [&](int a, int b) { return loads[static_cast<std::size_t>(a)] > loads[static_cast<std::size_t>(b)]; });

  Outbox outbox(c);
  // Answers every pending request: the front field of the queue, or nothing.
  auto serve = [&] {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, kTagRequest, c, &flag, &st);
      if (!flag) return;
      MPI_Recv(nullptr, 0, MPI_BYTE, st.MPI_SOURCE, kTagRequest, c, MPI_STATUS_IGNORE);
      std::vector<char> b;
      if (queue.empty()) {
        put<std::uint64_t>(b, 0);
      } else {
        const FieldTask t = queue.front();
        queue.pop_front();
        put<std::uint64_t>(b, 1);
        put_field(b, t.index, extract(t.index));
        ++report.fields_sent;
      }
      ++report.messages_sent;
      outbox.send(std::move(b), st.MPI_SOURCE, kTagReply);
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
      MPI_Send(nullptr, 0, MPI_BYTE, v, kTagRequest, c);
      MPI_Status st;
      for (int flag = 0;;) {
        serve();
        MPI_Iprobe(v, kTagReply, c, &flag, &st);
        if (flag) break;
        nap();
      }
      auto got = get_fields(receive(c, st));
      if (got.empty()) break;  // v has nothing queued, and never will again
      for (auto& [index, points] : got) {
        ++report.fields_received;
        runner.run(index, points);
      }
    }
  }
  // Done stealing: keep answering (with nothing) until every rank is done too.
  MPI_Request barrier;
  MPI_Ibarrier(c, &barrier);
  for (int done = 0;;) {
    serve();
    MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
    if (done) break;
    nap();
  }
  outbox.wait();
}

}  // namespace

Schedule parse_schedule(const std::string& text) {
  if (text == "none") return Schedule::none;
  if (text == "model") return Schedule::model;
  if (text == "dynamic") return Schedule::dynamic;
  throw Error::usage("--schedule '{}': expected none, model or dynamic", text);
}

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::none: return "none";
    case Schedule::model: return "model";
    case Schedule::dynamic: return "dynamic";
  }
  return "?";
}

std::vector<FieldOutcome> run_fields(const std::vector<FieldTask>& tasks, const ExtractFn& extract,
                                     const ComputeFn& compute, Schedule schedule, const mpi::Comm& comm,
                                     RunReport& report) {
  const double t0 = now();
  report = RunReport{};
  Runner runner(extract, compute, comm, report);
  if (schedule == Schedule::none) {
    for (const FieldTask& t : tasks) runner.run_local(t.index);
  } else {
    DupComm c(comm);
    if (schedule == Schedule::model) run_model(tasks, runner, extract, comm, c.get(), report);
    else run_dynamic(tasks, runner, extract, comm, c.get(), report);
  }
  report.seconds = now() - t0;
  return std::move(runner.out);
}

}  // namespace phew::dtfe
