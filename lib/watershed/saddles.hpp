// Saddle points between peak patches (PHEW Sec. 2.3, Algorithm 1): for every pair of neighbouring test
// cells in different patches the candidate saddle density is the mean of the two cell densities; the
// saddle of two patches is the maximum over their shared boundary.
#pragma once

#include <phew/core/error.hpp>
#include <phew/core/threads.hpp>
#include <phew/model/patches.hpp>
#include <phew/mpi/comm.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/slab.hpp>
#include <phew/watershed/watershed.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace phew::watershed {

// peak_a < peak_b; cell_a in patch peak_a and cell_b in peak_b are where the saddle is reached.
using Saddle = model::SaddleRow;

// The better of two candidates for the same pair: denser, then the smaller (cell_a, cell_b).
inline bool better_saddle(const Saddle& x, const Saddle& y) {
  if (x.density != y.density) return x.density > y.density;
  return x.cell_a != y.cell_a ? x.cell_a < y.cell_a : x.cell_b < y.cell_b;
}

// The best candidate of each pair met so far: an open-addressing table (a power of two of slots, a
// multiplicative hash, linear probing) from the pair to its entry, so memory goes with the pairs this
// rank meets, not with all the peaks, and a lookup is a multiply and one or two probes where
// std::unordered_map spent half the saddle pass on its bucket division and node pointers.
class SaddlePairs {
 public:
  // The entry of pair (cand.peak_a, cand.peak_b), made from `cand` if the pair is new.
  std::size_t find_or_add(const Saddle& cand) {
    if (2 * (best_.size() + 1) > key_.size()) grow();
    const std::uint64_t key = pair_key(cand);
    for (std::size_t i = slot_of(key);; i = (i + 1) & (key_.size() - 1)) {
      if (key_[i] == key) return entry_[i];
      if (key_[i] == 0) {
        key_[i] = key;
        entry_[i] = static_cast<std::uint32_t>(best_.size());
        best_.push_back(cand);
        return best_.size() - 1;
      }
    }
  }
  Saddle& operator[](std::size_t e) { return best_[e]; }
  const std::vector<Saddle>& entries() const { return best_; }

 private:
  // Peak IDs are below 2^32 (they are counted in int64, but a grid of 2^32 peaks is 64 GiB of labels
  // alone); 0 marks an empty slot (IDs start at 1).
  static std::uint64_t pair_key(const Saddle& s) {
    return static_cast<std::uint64_t>(s.peak_a) << 32 | static_cast<std::uint64_t>(s.peak_b);
  }
  std::size_t slot_of(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    const std::size_t size = key_.empty() ? 1024 : 2 * key_.size();
    shift_ = 64 - std::countr_zero(size);
    key_.assign(size, 0);
    entry_.assign(size, 0);
    for (std::size_t e = 0; e < best_.size(); ++e) {
      const std::uint64_t key = pair_key(best_[e]);
      std::size_t i = slot_of(key);
      while (key_[i] != 0) i = (i + 1) & (size - 1);
      key_[i] = key;
      entry_[i] = static_cast<std::uint32_t>(e);
    }
  }
  std::vector<std::uint64_t> key_;
  std::vector<std::uint32_t> entry_;
  std::vector<Saddle> best_;
  int shift_ = 64;
};

// Every touching pair once, ordered by (peak_a, peak_b). Each cell pair is looked at by the owner of its
// cell with the smaller global index, so pairs on block boundaries count once; the candidates then go to
// the owner of peak_a (peaks in even blocks of IDs over the ranks), which returns the pairs it owns, so
// the ranks' results in rank order are the whole sorted table. Collective.
template <WatershedMesh Mesh>
std::vector<Saddle> find_saddles(const Mesh& mesh, const Segmentation& seg, const mpi::Comm& comm, int threads = 1) {
  // Threads take chunks of slots, each keeping the best candidate of every pair it meets. A pair met by
  // several threads (or ranks) sends several candidates; the owner keeps the best (better_saddle is a
  // total order), so the table does not depend on which thread met which.
  if (seg.n_peaks >= (std::uint64_t{1} << 32))
    throw core::Error::usage("{} peaks: the saddle search counts peaks in 32 bits; raise the threshold", seg.n_peaks);
  std::vector<SaddlePairs> best_of(static_cast<std::size_t>(std::max(threads, 1)));
  core::parallel_for(
      threads, mesh.end_local() - mesh.first_local(), kSlotsPerChunk, [&](std::size_t b, std::size_t e, int thread) {
        SaddlePairs& best = best_of[static_cast<std::size_t>(thread)];
        std::int64_t last_a = 0, last_b = 0;  // no pair is (0, 0) (peak IDs start at 1)
        std::size_t last = 0;
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
            // Neighbouring boundary cells mostly belong to the same pair: remember the last one.
            if (cand.peak_a != last_a || cand.peak_b != last_b) {
              last = best.find_or_add(cand);
              last_a = cand.peak_a;
              last_b = cand.peak_b;
            }
            if (better_saddle(cand, best[last])) best[last] = cand;
          });
        });
      });
  std::vector<Saddle> mine;
  for (SaddlePairs& best : best_of) {
    mine.insert(mine.end(), best.entries().begin(), best.entries().end());
    best = SaddlePairs();
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
