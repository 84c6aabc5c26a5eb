// The particles' clouds summed onto cells on threads, with the bits of one thread (docs/cli.md,
// "Threads"): the adaptive mesh's refinement counts (and deposit_on_leaves on threads, the leaves'
// masses of the tests' serial reference).
//
// The particles come in the canonical order, coarse cell by coarse cell, so coarse plane by coarse plane
// (the x index, the slowest of the coarse grid's linear index). They are cut at whole planes into one
// run per thread, of about equal numbers. A cloud reaches at most one coarse plane either side of its
// particle's own, at any level (the particle's cell at every level lies inside its coarse cell), so the
// cells of a run's planes but the `kReach` first and last are reached from that run alone: its thread
// adds into them, in the particles' order. The terms for every other cell, the cells at the runs' edges,
// come only from the particles of the runs' edge planes: once the threads are done, those particles are
// visited again, run by run and in their order, for those terms alone. So every cell gets its terms in
// the particles' order, as one thread adds them, and nothing is kept in between.
#pragma once

#include <phew/core/threads.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace phew::mesh {

class PlaneRuns {
 public:
  // `plane_of(p)`: the coarse plane of particle p, ascending with p (with one thread, not needed).
  template <typename PlaneOf>
  PlaneRuns(std::size_t particles, int threads, PlaneOf&& plane_of) {
    // The first particle at or after `from` whose plane is at least `plane`.
    const auto first_of_plane = [&](std::size_t from, std::size_t to, std::int64_t plane) {
      while (from < to) {
        const std::size_t mid = from + (to - from) / 2;
        if (plane_of(mid) < plane)
          from = mid + 1;
        else
          to = mid;
      }
      return from;
    };
    std::vector<std::size_t> begin{0};
    for (int r = 1; r < std::max(threads, 1); ++r) {
      // The run starts at the first particle of the plane where the r-th share starts.
      const std::size_t share = particles * static_cast<std::size_t>(r) / static_cast<std::size_t>(threads);
      if (share >= particles) break;
      const std::size_t at = first_of_plane(begin.back(), share, plane_of(share));
      if (at > begin.back()) begin.push_back(at);
    }
    begin.push_back(particles);
    for (std::size_t r = 0; r + 1 < begin.size(); ++r) {
      Run run{begin[r], begin[r + 1]};
      if (run.begin < run.end) {
        run.inner_first = plane_of(run.begin) + kReach;
        run.inner_last = plane_of(run.end - 1) - kReach;
        // The particles of the edge planes: [begin, low_end) and [high_begin, end), which may meet.
        run.low_end = first_of_plane(run.begin, run.end, run.inner_first + 1);
        run.high_begin = std::max(run.low_end, first_of_plane(run.begin, run.end, run.inner_last));
      }
      runs_.push_back(run);
    }
  }

  int runs() const { return static_cast<int>(runs_.size()); }

  // Calls visit(p, sink) for every particle p, each run on its own thread, where sink(plane, target,
  // value) is how the visit adds `value` into cell `target` of coarse plane `plane`; add(target, value)
  // is where it goes (target: an index into the caller's sums). The edge planes' particles are visited
  // twice (the visit must be a function of p alone).
  template <typename Visit, typename Add>
  void sum(Visit&& visit, Add&& add) const {
    const auto pass = [&](std::size_t r, const auto& sink) {
      const Run& run = runs_[r];
      for (std::size_t p = run.begin; p < run.end; ++p) visit(p, sink);
    };
    if (runs() == 1) {
      const auto sink = [&](std::int64_t, std::size_t target, double value) { add(target, value); };
      pass(0, sink);
      return;
    }
    core::parallel_for(runs(), static_cast<std::size_t>(runs()), 1, [&](std::size_t r0, std::size_t r1, int) {
      for (std::size_t r = r0; r < r1; ++r) {
        const Run& run = runs_[r];
        const auto inner = [&](std::int64_t plane, std::size_t target, double value) {
          if (run.inner(plane)) add(target, value);
        };
        pass(r, inner);
      }
    });
    for (const Run& run : runs_) {
      const auto edge = [&](std::int64_t plane, std::size_t target, double value) {
        if (!run.inner(plane)) add(target, value);
      };
      for (std::size_t p = run.begin; p < run.low_end; ++p) visit(p, edge);
      for (std::size_t p = run.high_begin; p < run.end; ++p) visit(p, edge);
    }
  }

  // Planes at each end of a run that other runs may reach: one, and one more for safety (a position
  // rounded onto a plane's edge). A cloud reaches no further from its particle's plane.
  static constexpr std::int64_t kReach = 2;

 private:
  struct Run {
    std::size_t begin = 0, end = 0;                 // its particles
    std::size_t low_end = 0, high_begin = 0;        // its edge planes' particles: [begin, low_end), [high_begin, end)
    std::int64_t inner_first = 0, inner_last = -1;  // the planes only it reaches
    bool inner(std::int64_t plane) const { return plane >= inner_first && plane <= inner_last; }
  };
  std::vector<Run> runs_;
};

}  // namespace phew::mesh
