// Work sharing (Rangel et al. Sec. IV D-E): from each rank's predicted total time, an a-priori list
// of who sends how much work to whom and when (CreateCommunicationList, Fig. 5), and for each sender
// a permutation of its fields that fills the gaps between sends (greedy first-fit bin packing).
// Also a simulator of the schedules on many ranks, fed with measured per-field costs (bench/).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace phew::dtfe {

// `sender` gives `amount` seconds of work to `receiver`, once the receiver's own work is predicted to
// be done, `at` seconds after the start.
struct Transfer {
  int sender = 0, receiver = 0;
  double at = 0, amount = 0;
};

// Fig. 5 on the ranks' predicted totals (seconds). Deterministic: every rank computes the same
// list from the same totals (ties in time broken by rank). In list order, which is the order in
// which each receiver receives.
std::vector<Transfer> communication_list(std::span<const double> totals);

// A sender's fields in execution order: local[k] before send k, shipped[k] in send k, then
// local.back() (whatever fitted no bin). `receiver[k]` is the receiver of send k.
struct SenderPlan {
  std::vector<std::vector<std::size_t>> local;
  std::vector<std::vector<std::size_t>> shipped;
  std::vector<int> receiver;
};

// Packs items of predicted `cost` (indices into it) into the bins between and of `sends` (this
// rank's transfers): items by decreasing cost, bins by increasing capacity, first fit.
SenderPlan pack(std::span<const double> cost, const std::vector<Transfer>& sends);

// --- the schedule simulator ------------------------------------------------------------------
// Field k costs cost[k] seconds (measured) and is predicted to cost predicted[k]; owner[k] is the
// rank that holds its particles. `latency` is added to every message (seconds).
struct SimulatedRun {
  double makespan = 0;  // seconds until the last rank finishes
  double busy = 0;      // total seconds of field work (the same for every schedule)
  int messages = 0;     // work messages sent
};
SimulatedRun simulate_none(std::span<const double> cost, std::span<const int> owner, int ranks);
SimulatedRun simulate_model(std::span<const double> cost, std::span<const double> predicted, std::span<const int> owner,
                            int ranks, double latency);
SimulatedRun simulate_dynamic(std::span<const double> cost, std::span<const double> predicted,
                              std::span<const int> owner, int ranks, double latency);

}  // namespace phew::dtfe
