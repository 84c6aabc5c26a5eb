// Saddle points between peak patches (PHEW Sec. 2.3, Algorithm 1): for every pair of neighbouring test
// cells in different patches the candidate saddle density is the mean of the two cell densities; the
// saddle of two patches is the maximum over their shared boundary.
#pragma once

#include <phew/core/threads.hpp>
#include <phew/model/patches.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/slab.hpp>
#include <phew/watershed/watershed.hpp>

#include <algorithm>

#include <unordered_map>

namespace phew::watershed {

// peak_a < peak_b; cell_a in patch peak_a and cell_b in peak_b are where the saddle is reached.
using Saddle = model::SaddleRow;

// The better of two candidates for the same pair: denser, then the smaller (cell_a, cell_b).
inline bool better_saddle(const Saddle& x, const Saddle& y) {
  if (x.density != y.density) return x.density > y.density;
  return x.cell_a != y.cell_a ? x.cell_a < y.cell_a : x.cell_b < y.cell_b;
}

// Every touching pair once, ordered by (peak_a, peak_b). Each cell pair is looked at by the owner of its
// cell with the smaller global index, so pairs on slab boundaries count once; the candidates then go to
// the owner of peak_a (peaks in even blocks of IDs over the ranks), which returns the pairs it owns, so
// the ranks' results in rank order are the whole sorted table. Collective.
template <WatershedMesh Mesh>
std::vector<Saddle> find_saddles(const Mesh& mesh, const Segmentation& seg, const mpi::Comm& comm, int threads = 1) {
  // Threads take chunks of slots, each keeping the best candidate of every pair it meets. A pair met by
  // several threads (or ranks) sends several candidates; the owner keeps the best (better_saddle is a
  // total order), so the table does not depend on which thread met which.
  using Best = std::unordered_map<std::uint64_t, Saddle>;  // key: peak_a * (npeaks+1) + peak_b
  std::vector<Best> best_of(static_cast<std::size_t>(std::max(threads, 1)));
  for (Best& b : best_of) b.reserve(2 * seg.n_peaks / static_cast<std::size_t>(comm.size() * std::max(threads, 1)) + 16);
  const auto stride = static_cast<std::uint64_t>(seg.n_peaks) + 1;
  core::parallel_for(threads, mesh.end_local() - mesh.first_local(), kSlotsPerChunk, [&](std::size_t b, std::size_t e, int thread) {
    Best& best = best_of[static_cast<std::size_t>(thread)];
    std::uint64_t last_key = 0;  // no pair has key 0 (peak IDs start at 1)
    Saddle* last = nullptr;
    seg.tests.for_each(mesh.first_local() + b, mesh.first_local() + e, [&](std::size_t s, std::size_t member) {
      const std::int64_t ls = seg.label[member];
      std::int64_t cs = -1;  // computed when a boundary between patches is found
      const double rho = mesh.density(s);
      mesh.for_each_neighbour(s, [&](std::size_t n) {
        // The other cell's owner looks at the pair if the other cell has the smaller index. Between two
        // local cells slot order is index order, which saves computing indices (and, asked first, half
        // the label lookups).
        const bool local = mesh.is_local(n);
        if (local && n < s) return;
        const std::int64_t ln = seg.label_of(n);
        if (ln == 0 || ln == ls) return;
        if (!local) {
          if (cs < 0) cs = mesh.global_index(s);
          if (mesh.global_index(n) < cs) return;
        }
        if (cs < 0) cs = mesh.global_index(s);
        const std::int64_t cn = mesh.global_index(n);
        Saddle cand{std::min(ls, ln), std::max(ls, ln), 0.5 * (rho + mesh.density(n)), ls < ln ? cs : cn,
                    ls < ln ? cn : cs};
        const std::uint64_t key = static_cast<std::uint64_t>(cand.peak_a) * stride + static_cast<std::uint64_t>(cand.peak_b);
        // Neighbouring boundary cells mostly belong to the same pair: remember the last one.
        if (key != last_key) {
          last = &best.try_emplace(key, cand).first->second;
          last_key = key;
        }
        if (better_saddle(cand, *last)) *last = cand;
      });
    });
  });
  std::vector<Saddle> mine;
  for (Best& best : best_of) {
    for (const auto& [k, v] : best) mine.push_back(v);
    best = Best();
  }
  const mpi::SlabDecomposition owners(std::max<std::int64_t>(1, static_cast<std::int64_t>(seg.n_peaks)), comm.size());
  std::vector<Saddle> all = mpi::route(comm, mine, [&](const Saddle& x) { return owners.owner(x.peak_a - 1); });
  std::sort(all.begin(), all.end(), [](const Saddle& x, const Saddle& y) {
    if (x.peak_a != y.peak_a) return x.peak_a < y.peak_a;
    if (x.peak_b != y.peak_b) return x.peak_b < y.peak_b;
    return better_saddle(x, y);
  });
  // Keep the best of each pair (first after the sort).
  std::vector<Saddle> out;
  for (const Saddle& s : all)
    if (out.empty() || out.back().peak_a != s.peak_a || out.back().peak_b != s.peak_b) out.push_back(s);
  return out;
}

}  // namespace phew::watershed
