#include <phew/mesh/slab_mesh.hpp>

#include <phew/core/error.hpp>
#include <phew/mpi/route.hpp>

namespace phew::mesh {

template <typename Real>
BasicSlabMesh<Real>::BasicSlabMesh(const grid::GridGeometry& grid, const mpi::SlabDecomposition& slabs, int rank,
                                   std::vector<Real> density)
    : grid_(grid),
      slabs_(slabs),
      x0_(slabs.begin(rank)),
      x1_(slabs.end(rank)),
      ny_(grid.shape[1]),
      nz_(grid.shape[2]),
      plane_(static_cast<std::size_t>(grid.shape[1] * grid.shape[2])),
      tiny_x_(grid.shape[0] <= 2),
      density_(std::move(density)) {
  std::size_t n = 0;
  for (std::int64_t dp = -1; dp <= 1; ++dp)
    for (std::int64_t dj = -1; dj <= 1; ++dj)
      for (std::int64_t dk = -1; dk <= 1; ++dk)
        if (dp || dj || dk) offsets_[n++] = dp * static_cast<std::int64_t>(plane_) + dj * nz_ + dk;
  if (density_.size() != static_cast<std::size_t>(x1_ - x0_ + 2) * plane_)
    throw core::Error::internal("slab mesh: {} densities for {} planes + 2 ghosts", density_.size(), x1_ - x0_);
}

template <typename Real>
std::array<std::int64_t, 3> BasicSlabMesh<Real>::cell(std::size_t s) const {
  const std::int64_t nx = grid_.shape[0];
  std::int64_t i = x0_ - 1 + static_cast<std::int64_t>(s / plane_);
  i = ((i % nx) + nx) % nx;
  const auto r = static_cast<std::int64_t>(s % plane_);
  return {i, r / nz_, r % nz_};
}

template <typename Real>
std::optional<std::array<double, 27>> BasicSlabMesh<Real>::neighbourhood(std::size_t s) const {
  const auto p = static_cast<std::int64_t>(s / plane_);
  const auto r = static_cast<std::int64_t>(s % plane_);
  const std::int64_t j = r / nz_, k = r % nz_;
  std::array<double, 27> out{};
  for (std::int64_t dp = -1; dp <= 1; ++dp)
    for (std::int64_t dj = -1; dj <= 1; ++dj)
      for (std::int64_t dk = -1; dk <= 1; ++dk) {
        std::int64_t jj = j + dj, kk = k + dk;
        if (!grid_.periodic && (jj < 0 || jj >= ny_ || kk < 0 || kk >= nz_)) return std::nullopt;
        jj = (jj + ny_) % ny_;
        kk = (kk + nz_) % nz_;
        const double v = density_[static_cast<std::size_t>((p + dp) * static_cast<std::int64_t>(plane_) + jj * nz_ + kk)];
        if (v == -std::numeric_limits<double>::infinity()) return std::nullopt;  // Real's -inf too
        out[static_cast<std::size_t>((dp + 1) * 9 + (dj + 1) * 3 + (dk + 1))] = v;
      }
  return out;
}

template <typename Real>
void BasicSlabMesh<Real>::update_ghost_members(const grid::CellSet& members, std::vector<std::int64_t>& values,
                                    const mpi::Comm& comm) const {
  // As fetch_ghost_planes with one plane each side: every owner works out which of its planes each
  // rank holds as a ghost and pushes that plane's member values; no request round is needed.
  struct Value {
    std::int32_t to, side;  // side 0: the receiver's lower ghost plane, 1: its upper one
    std::uint64_t k;        // position among that ghost plane's members
    std::int64_t value;
  };
  const std::int64_t nx = slabs_.nx();
  std::vector<Value> outgoing;
  for (int r = 0; r < comm.size(); ++r) {
    if (slabs_.planes(r) == 0) continue;
    for (std::int32_t side = 0; side < 2; ++side) {
      const std::int64_t unwrapped = side == 0 ? slabs_.begin(r) - 1 : slabs_.end(r);
      if (!grid_.periodic && (unwrapped < 0 || unwrapped >= nx)) continue;
      const std::int64_t g = ((unwrapped % nx) + nx) % nx;
      if (g < x0_ || g >= x1_) continue;
      const std::size_t first = static_cast<std::size_t>(g - x0_ + 1) * plane_;
      const std::size_t b = members.rank(first), e = members.rank(first + plane_);
      for (std::size_t k = b; k < e; ++k) outgoing.push_back({r, side, k - b, values[k]});
    }
  }
  const std::vector<Value> incoming = mpi::route(comm, outgoing, [](const Value& v) { return v.to; });
  const std::size_t low = members.rank(first_local()), high = members.rank(end_local());
  for (const Value& v : incoming) {
    const std::size_t at = (v.side == 0 ? 0 : high) + v.k;
    if (at >= (v.side == 0 ? low : values.size()))
      throw core::Error::internal("ghost exchange: rank {} got member {} of its {} ghost plane, which has fewer test cells",
                            comm.rank(), v.k, v.side == 0 ? "lower" : "upper");
    values[at] = v.value;
  }
}

template class BasicSlabMesh<double>;
template class BasicSlabMesh<float>;

}  // namespace phew::mesh
