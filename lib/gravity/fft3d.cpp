#include <phew/gravity/fft3d.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/gravity/fftw_buffer.hpp>

#include <fftw3.h>

#include <algorithm>

namespace phew::gravity {
namespace {

using Complex = std::complex<double>;

fftw_complex* as_fftw(Complex* p) { return reinterpret_cast<fftw_complex*>(p); }

}  // namespace

// One buffer and plan per kind of line; every line of that kind is copied into the buffer and
// transformed by the same plan.
struct SlabFft::Plans {
  explicit Plans(std::array<std::int64_t, 3> n)
      : real_z(static_cast<std::size_t>(n[2])),
        complex_z(static_cast<std::size_t>(n[2] / 2 + 1)),
        line_y(static_cast<std::size_t>(n[1])),
        line_x(static_cast<std::size_t>(n[0])) {
    const int nx = static_cast<int>(n[0]), ny = static_cast<int>(n[1]), nz = static_cast<int>(n[2]);
    // FFTW_ESTIMATE: the plan depends only on the sizes, never on timing measurements.
    r2c_z = fftw_plan_dft_r2c_1d(nz, real_z.data, as_fftw(complex_z.data), FFTW_ESTIMATE);
    c2r_z = fftw_plan_dft_c2r_1d(nz, as_fftw(complex_z.data), real_z.data, FFTW_ESTIMATE);
    forward_y = fftw_plan_dft_1d(ny, as_fftw(line_y.data), as_fftw(line_y.data), FFTW_FORWARD, FFTW_ESTIMATE);
    backward_y = fftw_plan_dft_1d(ny, as_fftw(line_y.data), as_fftw(line_y.data), FFTW_BACKWARD, FFTW_ESTIMATE);
    forward_x = fftw_plan_dft_1d(nx, as_fftw(line_x.data), as_fftw(line_x.data), FFTW_FORWARD, FFTW_ESTIMATE);
    backward_x = fftw_plan_dft_1d(nx, as_fftw(line_x.data), as_fftw(line_x.data), FFTW_BACKWARD, FFTW_ESTIMATE);
    if (!r2c_z || !c2r_z || !forward_y || !backward_y || !forward_x || !backward_x)
      throw core::Error::internal("FFTW could not plan a {}x{}x{} transform", nx, ny, nz);
  }
  ~Plans() {
    for (fftw_plan p : {r2c_z, c2r_z, forward_y, backward_y, forward_x, backward_x}) fftw_destroy_plan(p);
  }
  Plans(const Plans&) = delete;
  Plans& operator=(const Plans&) = delete;

  FftwBuffer<double> real_z;
  FftwBuffer<Complex> complex_z, line_y, line_x;
  fftw_plan r2c_z, c2r_z, forward_y, backward_y, forward_x, backward_x;
};

SlabFft::SlabFft(std::array<std::int64_t, 3> n, const mpi::Comm& comm)
    : n_(n), comm_(comm), x_slabs_(n[0], comm.size()), y_slabs_(n[1], comm.size()) {
  for (std::int64_t s : n)
    if (s < 2) throw core::Error::usage("an FFT mesh needs at least 2 cells per side, not {}x{}x{}", n[0], n[1], n[2]);
  plans_ = std::make_unique<Plans>(n);
}

SlabFft::~SlabFft() = default;

namespace {

// Transforms, in place, the lines along the middle axis of `blocks` blocks of [length][nzc] values:
// each line is copied into the plan's buffer, transformed, and copied back.
void transform_lines(std::vector<Complex>& data, std::size_t blocks, std::size_t length, std::size_t nzc,
                     fftw_plan plan, Complex* buffer) {
  for (std::size_t b = 0; b < blocks; ++b)
    for (std::size_t kz = 0; kz < nzc; ++kz) {
      Complex* base = data.data() + b * length * nzc + kz;
      for (std::size_t i = 0; i < length; ++i) buffer[i] = base[i * nzc];
      fftw_execute(plan);
      for (std::size_t i = 0; i < length; ++i) base[i * nzc] = buffer[i];
    }
}

}  // namespace

std::vector<Complex> SlabFft::forward(std::span<const double> real) const {
  const auto n1 = static_cast<std::size_t>(n_[1]), n2 = static_cast<std::size_t>(n_[2]);
  const auto nzc = static_cast<std::size_t>(nz_complex());
  const auto planes = static_cast<std::size_t>(x_slabs_.planes(comm_.rank()));
  if (real.size() != planes * n1 * n2)
    throw core::Error::internal("SlabFft::forward: {} values for {} planes", real.size(), planes);
  Plans& p = *plans_;
  std::vector<Complex> xs(planes * n1 * nzc);
  for (std::size_t row = 0; row < planes * n1; ++row) {  // z: real -> half spectrum
    std::copy_n(real.data() + row * n2, n2, p.real_z.data);
    fftw_execute(p.r2c_z);
    std::copy_n(p.complex_z.data, nzc, xs.data() + row * nzc);
  }
  transform_lines(xs, planes, n1, nzc, p.forward_y, p.line_y.data);
  std::vector<Complex> ys = transpose(xs, x_slabs_, y_slabs_);
  core::release(xs);
  transform_lines(ys, static_cast<std::size_t>(y_slabs_.planes(comm_.rank())), static_cast<std::size_t>(n_[0]), nzc,
                  p.forward_x, p.line_x.data);
  return ys;
}

std::vector<double> SlabFft::backward(std::vector<Complex> ys) const {
  const auto n0 = static_cast<std::size_t>(n_[0]), n1 = static_cast<std::size_t>(n_[1]),
             n2 = static_cast<std::size_t>(n_[2]);
  const auto nzc = static_cast<std::size_t>(nz_complex());
  const auto my_ky = static_cast<std::size_t>(y_slabs_.planes(comm_.rank()));
  if (ys.size() != my_ky * n0 * nzc)
    throw core::Error::internal("SlabFft::backward: {} values for {} ky planes", ys.size(), my_ky);
  Plans& p = *plans_;
  transform_lines(ys, my_ky, n0, nzc, p.backward_x, p.line_x.data);
  std::vector<Complex> xs = transpose(ys, y_slabs_, x_slabs_);
  core::release(ys);
  const auto planes = static_cast<std::size_t>(x_slabs_.planes(comm_.rank()));
  transform_lines(xs, planes, n1, nzc, p.backward_y, p.line_y.data);
  std::vector<double> real(planes * n1 * n2);
  const double norm = 1.0 / (static_cast<double>(n0) * static_cast<double>(n1) * static_cast<double>(n2));
  for (std::size_t row = 0; row < planes * n1; ++row) {  // z: half spectrum -> real
    std::copy_n(xs.data() + row * nzc, nzc, p.complex_z.data);
    fftw_execute(p.c2r_z);  // destroys complex_z, which is refilled for every row
    for (std::size_t z = 0; z < n2; ++z) real[row * n2 + z] = p.real_z.data[z] * norm;
  }
  return real;
}

std::vector<Complex> SlabFft::transpose(const std::vector<Complex>& in, const mpi::SlabDecomposition& from,
                                        const mpi::SlabDecomposition& to) const {
  const auto nzc = static_cast<std::size_t>(nz_complex());
  const int me = comm_.rank();
  const auto mine = static_cast<std::size_t>(from.planes(me));
  const auto nb = static_cast<std::size_t>(to.nx()), na = static_cast<std::size_t>(from.nx());
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(comm_.size()));
  std::vector<Complex> send;
  send.reserve(in.size());
  for (int r = 0; r < comm_.size(); ++r) {  // to r: [b in r's range][my a][kz]
    counts[static_cast<std::size_t>(r)] = static_cast<std::uint64_t>(to.planes(r)) * mine * nzc;
    for (auto b = static_cast<std::size_t>(to.begin(r)); b < static_cast<std::size_t>(to.end(r)); ++b)
      for (std::size_t a = 0; a < mine; ++a) {
        const Complex* row = in.data() + (a * nb + b) * nzc;
        send.insert(send.end(), row, row + nzc);
      }
  }
  const std::vector<Complex> recv = comm_.all_to_all<Complex>(send, counts);
  const auto my_b = static_cast<std::size_t>(to.planes(me));
  std::vector<Complex> out(my_b * na * nzc);
  std::size_t at = 0;
  for (int s = 0; s < comm_.size(); ++s)  // from s, in rank order: [my b][s's a][kz]
    for (std::size_t b = 0; b < my_b; ++b)
      for (auto a = static_cast<std::size_t>(from.begin(s)); a < static_cast<std::size_t>(from.end(s)); ++a) {
        std::copy_n(recv.data() + at, nzc, out.data() + (b * na + a) * nzc);
        at += nzc;
      }
  return out;
}

}  // namespace phew::gravity
