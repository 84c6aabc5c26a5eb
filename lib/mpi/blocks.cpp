#include <phew/mpi/blocks.hpp>

#include <phew/core/error.hpp>

#include <algorithm>

namespace phew::mpi {
namespace {

std::array<SlabDecomposition, 3> axes_of(const Extent3& shape, const std::array<int, 3>& lattice) {
  return {SlabDecomposition(shape[0], lattice[0]), SlabDecomposition(shape[1], lattice[1]),
          SlabDecomposition(shape[2], lattice[2])};
}

std::array<int, 3> usable_lattice(const Extent3& shape, int ranks) {
  if (ranks < 1 || shape[0] < 1 || shape[1] < 1 || shape[2] < 1)
    throw core::Error::internal("blocks of a {}x{}x{} grid over {} ranks", shape[0], shape[1], shape[2], ranks);
  for (int q = ranks; q >= 1; --q)
    if (const auto l = block_lattice(shape, q); l[0] > 0) return l;
  return {1, 1, 1};  // not reached: one rank always fits
}

}  // namespace

std::array<int, 3> block_lattice(const Extent3& shape, int ranks) {
  std::array<int, 3> best{0, 0, 0};
  double best_ghosts = 0;
  for (int px = ranks; px >= 1; --px) {
    if (ranks % px != 0 || px > shape[0]) continue;
    const int rest = ranks / px;
    for (int py = rest; py >= 1; --py) {
      if (rest % py != 0 || py > shape[1]) continue;
      const int pz = rest / py;
      if (pz > shape[2]) continue;
      // The largest block and the shell of one cell around it.
      const std::array<int, 3> p{px, py, pz};
      double inner = 1, outer = 1;
      for (std::size_t d = 0; d < 3; ++d) {
        const auto n = static_cast<double>((shape[d] + p[d] - 1) / p[d]);
        inner *= n;
        outer *= n + 2;
      }
      if (best[0] == 0 || outer - inner < best_ghosts) {  // strictly fewer: the first (more x cuts) wins ties
        best = p;
        best_ghosts = outer - inner;
      }
    }
  }
  return best;
}

BlockDecomposition::BlockDecomposition(const Extent3& shape, int ranks)
    : shape_(shape), lattice_(usable_lattice(shape, ranks)), axes_(axes_of(shape, lattice_)) {}

BlockDecomposition::BlockDecomposition(std::array<SlabDecomposition, 3> axes)
    : shape_{axes[0].nx(), axes[1].nx(), axes[2].nx()},
      lattice_{axes[0].ranks(), axes[1].ranks(), axes[2].ranks()},
      axes_(std::move(axes)) {
  for (std::size_t d = 0; d < 3; ++d)
    for (int q = 0; q < lattice_[d]; ++q) some_empty_ = some_empty_ || axes_[d].planes(q) == 0;
}

BlockDecomposition::Box BlockDecomposition::box(int rank) const {
  Box b;
  if (rank < 0 || rank >= used_ranks()) return b;
  const std::array<int, 3> at{rank / (lattice_[1] * lattice_[2]), rank / lattice_[2] % lattice_[1], rank % lattice_[2]};
  for (std::size_t d = 0; d < 3; ++d) {
    b.lo[d] = axes_[d].begin(at[d]);
    b.hi[d] = axes_[d].end(at[d]);
  }
  return b;
}

BlockDecomposition::Places BlockDecomposition::places_touching(std::size_t d, std::int64_t first, std::int64_t last,
                                                               bool periodic) const {
  const SlabDecomposition& axis = axes_[d];
  const std::int64_t n = shape_[d];
  const int all = axis.ranks() - 1;
  Places out;
  if (!periodic) {
    first = std::max<std::int64_t>(first, 0);
    last = std::min<std::int64_t>(last, n - 1);
    if (first <= last) out.span[0] = {axis.owner(first), axis.owner(last)};
    return out;
  }
  if (last - first + 1 >= n) {
    out.span[0] = {0, all};
    return out;
  }
  // A cloud reaches one cell beyond an edge, a window a few: one step wraps most runs (a division costs
  // as much as the rest of a cloud's routing), a division the others.
  const auto fold = [n](std::int64_t i) -> std::int64_t {
    if (i >= 0 && i < n) return i;
    if (i >= -n && i < 0) return i + n;
    if (i >= n && i < 2 * n) return i - n;
    return ((i % n) + n) % n;
  };
  const std::int64_t a = fold(first), b = fold(last);
  const int pa = axis.owner(a), pb = axis.owner(b);
  if (a <= b)
    out.span[0] = {pa, pb};
  else if (pb >= pa)
    out.span[0] = {0, all};  // the two ends of the wrapped run share places: every one
  else
    out.span = {Span{pa, all}, Span{0, pb}};
  return out;
}

int BlockDecomposition::owner(const Extent3& cell) const {
  return (axes_[0].owner(cell[0]) * lattice_[1] + axes_[1].owner(cell[1])) * lattice_[2] + axes_[2].owner(cell[2]);
}

}  // namespace phew::mpi
