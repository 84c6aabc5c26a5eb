#include <phew/gravity/long_range.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/grid/deposit.hpp>
#include <phew/mesh/ghost_planes.hpp>

#include <cmath>
#include <optional>

namespace phew::gravity {
namespace {

std::int64_t folded(std::int64_t i, std::int64_t n) { return i <= n / 2 ? i : i - n; }
double sinc(double x) { return x == 0 ? 1.0 : std::sin(x) / x; }

}  // namespace

double long_range_green(const std::array<std::int64_t, 3>& m, const grid::GridGeometry& mesh, double G,
                        double r_split) {
  double k2 = 0, window = 1;
  for (std::size_t d = 0; d < 3; ++d) {
    const double k = 2 * M_PI * static_cast<double>(m[d]) / mesh.extent[d];
    k2 += k * k;
    window *= sinc(M_PI * static_cast<double>(m[d]) / static_cast<double>(mesh.shape[d]));  // sinc(k h / 2)
  }
  if (k2 == 0) return 0;
  const double w2 = window * window;  // the CIC window is sinc^2 per axis; it is divided out twice
  return -4 * M_PI * G / k2 * std::exp(-k2 * r_split * r_split) / (w2 * w2);
}

GreenTable::GreenTable(const grid::GridGeometry& mesh, double G, double r_split) : G_(G) {
  for (std::size_t d = 0; d < 3; ++d) {
    const std::int64_t n = mesh.shape[d];
    k2_[d].resize(static_cast<std::size_t>(n));
    factor_[d].resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      const auto m = static_cast<double>(folded(i, n));
      const double k = 2 * M_PI * m / mesh.extent[d];
      const double w = sinc(M_PI * m / static_cast<double>(n));  // the CIC window per axis: sinc^2(k h / 2)
      const double w2 = w * w;
      k2_[d][static_cast<std::size_t>(i)] = k * k;
      factor_[d][static_cast<std::size_t>(i)] = std::exp(-k * k * r_split * r_split) / (w2 * w2);
    }
  }
}

LongRangeField::LongRangeField(const grid::GridGeometry& mesh, double G, double r_split,
                               std::span<const double> position, std::span<const double> mass, double reach,
                               const mpi::Comm& comm, int threads)
    : mesh_(mesh), cell_(mesh.cell_size()), fft_(mesh.shape, comm, threads) {
  if (!mesh.periodic) throw core::Error::internal("LongRangeField needs a periodic box");
  const auto& slabs = fft_.x_slabs();
  // The deposit on the FFT's own layout: its x-slabs, whole in y and z.
  const mpi::BlockDecomposition fft_blocks(
      {slabs, mpi::SlabDecomposition(mesh.shape[1], 1), mpi::SlabDecomposition(mesh.shape[2], 1)});
  // Each run of planes the deposit finishes goes straight into the FFT's first pass as densities: the
  // float64 mesh is never whole.
  const double inv_volume = 1.0 / mesh.cell_volume();
  std::optional<SlabFft::Forward> forward;
  grid::DepositMemory memory;
  memory.before_sums = [&] { forward.emplace(fft_); };
  memory.sink = [&](std::size_t p0, std::size_t p1, const double* m) { forward->add(p0, p1, m, inv_volume); };
  deposit(mesh, grid::Assignment::cic, fft_blocks, position, mass, comm, threads, memory);
  if (!forward) throw core::Error::internal("LongRangeField: the deposit handed over no planes");
  std::vector<std::complex<double>> spectrum = std::move(*forward).finish();
  const std::int64_t n0 = mesh.shape[0], nzc = fft_.nz_complex();
  const std::int64_t y0 = fft_.y_slabs().begin(comm.rank()), y1 = fft_.y_slabs().end(comm.rank());
  const GreenTable green(mesh, G, r_split);
  core::parallel_for(threads, static_cast<std::size_t>(y1 - y0), 1, [&](std::size_t b, std::size_t e, int) {
    for (auto ky = static_cast<std::int64_t>(b) + y0; ky < static_cast<std::int64_t>(e) + y0; ++ky) {
      std::complex<double>* at = spectrum.data() + (ky - y0) * n0 * nzc;
      for (std::int64_t kx = 0; kx < n0; ++kx)
        for (std::int64_t kz = 0; kz < nzc; ++kz) *at++ *= green(kx, ky, kz);
    }
  });

  // The potential goes straight between its ghost planes: CIC reaches one plane beyond the sample's,
  // the finite difference two more.
  const int width = static_cast<int>(std::ceil(reach / cell_[0])) + 3;
  const std::size_t plane = mesh.plane_cells();
  const auto own = static_cast<std::size_t>(slabs.planes(comm.rank())) * plane;
  first_plane_ = slabs.begin(comm.rank()) - width;
  held_planes_ = slabs.planes(comm.rank()) + 2 * width;
  phi_.resize(static_cast<std::size_t>(held_planes_) * plane);
  const std::span<double> local(phi_.data() + static_cast<std::size_t>(width) * plane, own);
  fft_.backward(std::move(spectrum), local);
  const std::vector<double> ghosts =
      mesh::fetch_ghost_planes<double>(comm, slabs, std::span<const double>(local), plane, width, true, 0.0);
  const auto half = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(width) * plane);
  std::copy(ghosts.begin(), ghosts.begin() + half, phi_.begin());
  std::copy(ghosts.begin() + half, ghosts.end(), phi_.begin() + half + static_cast<std::ptrdiff_t>(own));
}

void LongRangeField::sample(const double x[3], double& phi, double acc[3]) const {
  std::int64_t c[3];
  double f[3];
  for (std::size_t d = 0; d < 3; ++d) {
    const double u = (x[d] - mesh_.origin[d]) / cell_[d] - 0.5;  // from the centre of cell 0
    const double fl = std::floor(u);
    c[d] = static_cast<std::int64_t>(fl);
    f[d] = u - fl;
  }
  // Whole periods move the plane index into the planes held (ghost planes are exact copies, so any
  // period that fits gives the same bits; x itself is never shifted, which would round differently).
  c[0] -= first_plane_;
  const std::int64_t n0 = mesh_.shape[0], n1 = mesh_.shape[1], n2 = mesh_.shape[2];
  if (c[0] < 2) c[0] += n0 * ((2 - c[0] + n0 - 1) / n0);
  if (c[0] + 3 >= held_planes_) c[0] -= n0 * ((c[0] + 3 - held_planes_) / n0 + 1);
  if (c[0] < 2 || c[0] + 3 >= held_planes_)
    throw core::Error::internal("LongRangeField::sample: x = {} is beyond the planes this rank holds", x[0]);
  // The rows and columns the stencils reach, c - 2 .. c + 3: the first folded (two integer divisions,
  // dear beside everything else here), the others one step on from it.
  std::int64_t row[6], col[6];
  row[0] = grid::fold_index(c[1] - 2, n1, true);
  col[0] = grid::fold_index(c[2] - 2, n2, true);
  for (int o = 1; o < 6; ++o) {
    row[o] = row[o - 1] + 1 == n1 ? 0 : row[o - 1] + 1;
    col[o] = col[o - 1] + 1 == n2 ? 0 : col[o - 1] + 1;
  }
  // The potential at plane i (extended index), row c[1] + dj, column c[2] + dk.
  const auto at = [&](std::int64_t i, int dj, int dk) {
    return phi_[static_cast<std::size_t>(grid::linear_index(i, row[dj + 2], col[dk + 2], n1, n2))];
  };
  phi = 0;
  acc[0] = acc[1] = acc[2] = 0;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int e = 0; e < 2; ++e) {
        const double w = (a ? f[0] : 1 - f[0]) * (b ? f[1] : 1 - f[1]) * (e ? f[2] : 1 - f[2]);
        const std::int64_t i = c[0] + a;
        phi += w * at(i, b, e);
        // -d phi / dx by the 4-point difference (8 (f1 - f-1) - (f2 - f-2)) / 12 h.
        const double gx = 8 * (at(i + 1, b, e) - at(i - 1, b, e)) - (at(i + 2, b, e) - at(i - 2, b, e));
        const double gy = 8 * (at(i, b + 1, e) - at(i, b - 1, e)) - (at(i, b + 2, e) - at(i, b - 2, e));
        const double gz = 8 * (at(i, b, e + 1) - at(i, b, e - 1)) - (at(i, b, e + 2) - at(i, b, e - 2));
        acc[0] -= w * gx / (12 * cell_[0]);
        acc[1] -= w * gy / (12 * cell_[1]);
        acc[2] -= w * gz / (12 * cell_[2]);
      }
}

}  // namespace phew::gravity
