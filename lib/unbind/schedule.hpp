// Which rank unbinds each halo, and in which of its batches: what bounds a rank's working set when one
// halo is far bigger than the rest. Pure: every rank computes the same schedule from
// the haloes' particle counts.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace phew::unbind {

struct HaloSchedule {
  std::vector<int> owner;           // per halo: the rank that unbinds it
  std::vector<std::int64_t> batch;  // per halo: its batch on its owner (0, 1, ...)
  std::int64_t batches = 0;         // the most batches of any rank: the rounds every rank takes part in
};

// `particles[h]`: the particle count of halo h. Owners: the haloes by decreasing count (equal counts by
// index), each to the rank with the fewest particles so far (equal loads: the lower rank), so a halo of
// more than 1/ranks of all the particles is the only halo of its rank and the rest are spread over the
// others. Batches: a rank's haloes in that order, cut into runs of at most `budget` particles; a halo
// bigger than the budget is a batch of its own. A rank so holds at most max(budget, its largest halo)
// particles at once. `ranks` >= 1, `budget` >= 1.
HaloSchedule schedule_haloes(std::span<const std::int64_t> particles, int ranks, std::int64_t budget);

}  // namespace phew::unbind
