#include "watershed/slab_mesh.hpp"

#include "core/error.hpp"
#include "mpi/planes.hpp"

namespace phew {

SlabMesh::SlabMesh(const GridGeometry& grid, const mpi::SlabDecomposition& slabs, int rank, std::vector<double> density)
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
    throw Error::internal("slab mesh: {} densities for {} planes + 2 ghosts", density_.size(), x1_ - x0_);
}

std::int64_t SlabMesh::global_index(std::size_t s) const {
  const auto c = cell(s);
  return linear_index(c[0], c[1], c[2], ny_, nz_);
}

std::array<std::int64_t, 3> SlabMesh::cell(std::size_t s) const {
  const std::int64_t nx = grid_.shape[0];
  std::int64_t i = x0_ - 1 + static_cast<std::int64_t>(s / plane_);
  i = ((i % nx) + nx) % nx;
  const auto r = static_cast<std::int64_t>(s % plane_);
  return {i, r / nz_, r % nz_};
}

std::optional<std::array<double, 27>> SlabMesh::neighbourhood(std::size_t s) const {
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
        if (v == -std::numeric_limits<double>::infinity()) return std::nullopt;
        out[static_cast<std::size_t>((dp + 1) * 9 + (dj + 1) * 3 + (dk + 1))] = v;
      }
  return out;
}

void SlabMesh::update_ghosts(std::vector<std::int64_t>& values, const mpi::Comm& comm) const {
  const std::span<const std::int64_t> local(values.data() + plane_, values.size() - 2 * plane_);
  const auto ghosts = mpi::fetch_ghost_planes<std::int64_t>(comm, slabs_, local, plane_, 1, grid_.periodic, 0);
  std::copy(ghosts.begin(), ghosts.begin() + static_cast<std::ptrdiff_t>(plane_), values.begin());
  std::copy(ghosts.begin() + static_cast<std::ptrdiff_t>(plane_), ghosts.end(),
            values.end() - static_cast<std::ptrdiff_t>(plane_));
}

}  // namespace phew
