#include <phew/dtfe/decomposition.hpp>

#include <phew/mpi/route.hpp>
#include <phew/core/raw_vector.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace phew::dtfe {

VolumeDecomposition::VolumeDecomposition(const grid::Box& domain, const std::array<double, 3>& ghost, int ranks)
    : domain_(domain), ghost_(ghost) {
  std::array<bool, 3> split{};
  for (std::size_t d = 0; d < 3; ++d) split[d] = domain.extent[d] > 0 && 2 * ghost[d] < domain.extent[d];
  // Try every factorisation of the rank count over the axes that may be cut; keep the one whose
  // largest ghosted block is smallest (ties: the first found, a fixed order).
  double best = std::numeric_limits<double>::infinity();
  for (int px = 1; px <= ranks; ++px) {
    if (ranks % px != 0 || (px > 1 && !split[0])) continue;
    for (int py = 1; py <= ranks / px; ++py) {
      if ((ranks / px) % py != 0 || (py > 1 && !split[1])) continue;
      const int pz = ranks / px / py;
      if (pz > 1 && !split[2]) continue;
      const std::array<int, 3> p{px, py, pz};
      double v = 1;
      for (std::size_t d = 0; d < 3; ++d) v *= std::min(domain.extent[d], domain.extent[d] / p[d] + 2 * ghost[d]);
      if (v < best) {
        best = v;
        dims_ = p;
      }
    }
  }
  if (!std::isfinite(best)) {
    // No factorisation fits the cuttable axes (e.g. a prime rank count and one cuttable axis too
    // small): put all ranks on the first cuttable axis, or give every rank everything.
    dims_ = {1, 1, 1};
    for (std::size_t d = 0; d < 3; ++d)
      if (split[d]) {
        dims_[d] = ranks;
        break;
      }
    if (dims_[0] * dims_[1] * dims_[2] != ranks) dims_ = {ranks, 1, 1};
  }
}

int VolumeDecomposition::owner(const std::array<double, 3>& x) const {
  std::array<int, 3> b{};
  for (std::size_t d = 0; d < 3; ++d) {
    const double e = domain_.extent[d] > 0 ? domain_.extent[d] : 1.0;
    double u = (x[d] - domain_.origin[d]) / e;
    if (domain_.periodic) u -= std::floor(u);
    b[d] = std::clamp(static_cast<int>(std::floor(u * dims_[d])), 0, dims_[d] - 1);
  }
  return grid::linear_index(b[0], b[1], b[2], dims_[1], dims_[2]);
}

void VolumeDecomposition::needing(const double* x, std::vector<int>& ranks) const {
  ranks.clear();
  // Per axis the blocks i with [i w - g, (i + 1) w + g) holding u (or an image u + k extent): a run
  // [lo, hi] of block numbers, folded into the box when periodic. A run shorter than the axis folds
  // onto distinct blocks; a longer one is every block once. (A call per particle and per round of
  // ghosts: no allocation here.)
  std::array<long, 3> lo{}, hi{};
  for (std::size_t d = 0; d < 3; ++d) {
    const int p = dims_[d];
    if (p == 1) continue;
    const double w = domain_.extent[d] / p;
    const double u = x[d] - domain_.origin[d];
    lo[d] = static_cast<long>(std::floor((u - ghost_[d]) / w));
    hi[d] = static_cast<long>(std::floor((u + ghost_[d]) / w));
    if (domain_.periodic) {
      if (hi[d] - lo[d] + 1 >= p) lo[d] = 0, hi[d] = p - 1;
    } else {
      lo[d] = std::max(lo[d], 0L), hi[d] = std::min(hi[d], static_cast<long>(p) - 1);
      if (lo[d] > hi[d]) lo[d] = hi[d] = std::clamp(static_cast<long>(std::floor(u / w)), 0L, static_cast<long>(p) - 1);
    }
  }
  auto block = [&](long i, std::size_t d) { return static_cast<int>(grid::fold_index(i, dims_[d], domain_.periodic)); };
  for (long i = lo[0]; i <= hi[0]; ++i)
    for (long j = lo[1]; j <= hi[1]; ++j)
      for (long k = lo[2]; k <= hi[2]; ++k)
        ranks.push_back(grid::linear_index(block(i, 0), block(j, 1), block(k, 2), dims_[1], dims_[2]));
}

GhostedParticles distribute(GhostedParticles mine, const VolumeDecomposition& blocks, const mpi::Comm& comm) {
  if (comm.size() == 1) return mine;  // one block holds everything (the index makes the periodic images)
  const std::vector<double>& position = mine.position;
  const std::vector<double>& mass = mine.mass;
  struct P {
    double x[3], m;
  };
  const auto nr = static_cast<std::size_t>(comm.size());
  std::vector<std::uint64_t> counts(nr, 0);
  std::vector<int> dest;
  const std::size_t n = mass.size();
  // Two passes (count, then place), so the send buffer is allocated once.
  for (std::size_t i = 0; i < n; ++i) {
    blocks.needing(&position[3 * i], dest);
    for (int r : dest) ++counts[static_cast<std::size_t>(r)];
  }
  std::vector<std::uint64_t> offset = mpi::offsets_of(counts);
  std::vector<P> send(offset.back() + counts.back());
  for (std::size_t i = 0; i < n; ++i) {
    blocks.needing(&position[3 * i], dest);
    for (int r : dest)
      send[offset[static_cast<std::size_t>(r)]++] = {{position[3 * i], position[3 * i + 1], position[3 * i + 2]},
                                                     mass[i]};
  }
  const std::vector<P> got = comm.all_to_all<P>(send, counts);
  core::release(send);
  GhostedParticles out;
  out.position.resize(3 * got.size());
  out.mass.resize(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::copy(got[i].x, got[i].x + 3, &out.position[3 * i]);
    out.mass[i] = got[i].m;
  }
  return out;
}

}  // namespace phew::dtfe
