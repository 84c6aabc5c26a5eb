// The particles' clouds summed onto cells on threads, with the bits of one thread (docs/cli.md,
// "Threads"): the adaptive mesh's refinement counts and its leaves' masses.
//
// The particles come in the canonical order, coarse cell by coarse cell, so coarse plane by coarse plane
// (the x index, the slowest of the coarse grid's linear index). They are cut at whole planes into one
// run per thread, of about equal numbers. A cloud reaches at most one coarse plane either side of its
// particle's own, at any level, so the cells of a run's planes but the `kReach` first and last are
// reached from that run alone: its thread adds into them directly, in the particles' order. The terms for
// every other cell are kept, and added after the threads, run by run: those cells too get their terms in
// the particles' order, as one thread adds them.
#pragma once

#include <phew/core/threads.hpp>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace phew::mesh {

class PlaneRuns {
 public:
  // `plane_of(p)`: the coarse plane of particle p, ascending with p.
  template <typename PlaneOf>
  PlaneRuns(std::size_t particles, int threads, PlaneOf&& plane_of) {
    begin_.push_back(0);
    for (int r = 1; r < std::max(threads, 1); ++r) {
      // The run starts at the first particle of the plane where the r-th share starts.
      const std::size_t share = particles * static_cast<std::size_t>(r) / static_cast<std::size_t>(threads);
      if (share >= particles) break;
      const std::int64_t plane = plane_of(share);
      std::size_t lo = begin_.back(), hi = share;
      while (lo < hi) {  // the first particle of `plane`
        const std::size_t mid = lo + (hi - lo) / 2;
        if (plane_of(mid) < plane) lo = mid + 1;
        else hi = mid;
      }
      if (lo > begin_.back()) begin_.push_back(lo);
    }
    begin_.push_back(particles);
    for (std::size_t r = 0; r + 1 < begin_.size(); ++r) {
      const bool empty = begin_[r] == begin_[r + 1];
      first_plane_.push_back(empty ? 0 : plane_of(begin_[r]));
      last_plane_.push_back(empty ? -1 : plane_of(begin_[r + 1] - 1));
    }
  }

  int runs() const { return static_cast<int>(begin_.size()) - 1; }

  // Calls visit(p, sink) for every particle p, each run on its own thread, where sink(plane, target,
  // value) is how the visit adds `value` into cell `target` of coarse plane `plane`; add(target, value)
  // is where it goes (target: an index into the caller's sums).
  template <typename Visit, typename Add>
  void sum(Visit&& visit, Add&& add) const {
    if (runs() == 1) {
      const auto sink = [&](std::int64_t, std::size_t target, double value) { add(target, value); };
      for (std::size_t p = begin_[0]; p < begin_[1]; ++p) visit(p, sink);
      return;
    }
    std::vector<std::vector<std::pair<std::size_t, double>>> later(static_cast<std::size_t>(runs()));
    core::parallel_for(runs(), static_cast<std::size_t>(runs()), 1, [&](std::size_t r0, std::size_t r1, int) {
      for (std::size_t r = r0; r < r1; ++r) {
        const std::int64_t inner_first = first_plane_[r] + kReach, inner_last = last_plane_[r] - kReach;
        auto& kept = later[r];
        const auto sink = [&](std::int64_t plane, std::size_t target, double value) {
          if (plane >= inner_first && plane <= inner_last) add(target, value);
          else kept.emplace_back(target, value);
        };
        for (std::size_t p = begin_[r]; p < begin_[r + 1]; ++p) visit(p, sink);
      }
    });
    for (const auto& kept : later)
      for (const auto& [target, value] : kept) add(target, value);
  }

 private:
  // Planes at each end of a run that other runs may reach: one, and one more for a position rounded
  // onto a plane's edge.
  static constexpr std::int64_t kReach = 2;
  std::vector<std::size_t> begin_;  // the first particle of each run, then the end
  std::vector<std::int64_t> first_plane_, last_plane_;
};

}  // namespace phew::mesh
