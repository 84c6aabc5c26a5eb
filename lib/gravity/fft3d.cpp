#include <phew/gravity/fft3d.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/gravity/fftw_buffer.hpp>

#include <fftw3.h>

#include <algorithm>
#include <mutex>

namespace phew::gravity {
using Complex = std::complex<double>;

// One plan per pass, each transforming one whole plane: the z pass a plane's rows (r2c or c2r), the y
// pass an x-plane [n1][nzc] and the x pass a ky-plane [n0][nzc], all of their lines at once (FFTW's
// "many" interface walks the strided lines far better than a line copied out at a time). Every plane
// is copied into an FFTW-allocated buffer, transformed there and copied back: the plan then runs the
// same code on every plane wherever its data lies, so each plane's bits are the same on any rank and
// thread. The plans are made on one buffer and executed on each thread's own (fftw_execute_dft and
// its kin are thread-safe; FFTW buffers share the alignment the plans were made for).
struct SlabFft::Plans {
  explicit Plans(std::array<std::int64_t, 3> n) : n1(n[1]), n2(n[2]), nzc(n[2] / 2 + 1), longest(std::max(n[0], n[1])) {
    const int nx = static_cast<int>(n[0]), ny = static_cast<int>(n[1]), nz = static_cast<int>(n[2]);
    const int c = static_cast<int>(nzc);
    Scratch s(*this);
    // FFTW_ESTIMATE: the plan depends only on the sizes, never on timing measurements.
    r2c_z = fftw_plan_many_dft_r2c(1, &nz, ny, s.real.data, nullptr, 1, nz, s.spectrum.as_complex(), nullptr, 1, c,
                                   FFTW_ESTIMATE);
    c2r_z = fftw_plan_many_dft_c2r(1, &nz, ny, s.spectrum.as_complex(), nullptr, 1, c, s.real.data, nullptr, 1, nz,
                                   FFTW_ESTIMATE);
    const auto lines = [&](int length, int sign) {
      return fftw_plan_many_dft(1, &length, c, s.spectrum.as_complex(), nullptr, c, 1, s.spectrum.as_complex(), nullptr,
                                c, 1, sign, FFTW_ESTIMATE);
    };
    forward_y = lines(ny, FFTW_FORWARD);
    backward_y = lines(ny, FFTW_BACKWARD);
    forward_x = lines(nx, FFTW_FORWARD);
    backward_x = lines(nx, FFTW_BACKWARD);
    if (!r2c_z || !c2r_z || !forward_y || !backward_y || !forward_x || !backward_x)
      throw core::Error::internal("FFTW could not plan a {}x{}x{} transform", nx, ny, nz);
  }
  ~Plans() {
    for (fftw_plan p : {r2c_z, c2r_z, forward_y, backward_y, forward_x, backward_x}) fftw_destroy_plan(p);
  }
  Plans(const Plans&) = delete;
  Plans& operator=(const Plans&) = delete;

  // A thread's planes: the real rows of an x-plane, and a plane of complex lines (x or y).
  struct Scratch {
    explicit Scratch(const Plans& p)
        : real(static_cast<std::size_t>(p.n1 * p.n2)), spectrum(static_cast<std::size_t>(p.longest * p.nzc)) {}
    FftwBuffer<double> real;
    FftwBuffer<Complex> spectrum;
  };

  // Transforms, in place, `planes` planes of [length][nzc] values, each along its middle axis by
  // `plan`, on up to `threads` threads: a plane at a time through a thread's scratch buffer.
  void transform(std::vector<Complex>& data, std::size_t planes, std::size_t length, fftw_plan plan,
                 int threads) const {
    const std::size_t plane = length * static_cast<std::size_t>(nzc);
    on_planes(threads, planes, [&](Scratch& s, std::size_t p) {
      Complex* at = data.data() + p * plane;
      std::copy_n(at, plane, s.spectrum.data);
      fftw_execute_dft(plan, s.spectrum.as_complex(), s.spectrum.as_complex());
      std::copy_n(s.spectrum.data, plane, at);
    });
  }
  // body(scratch, plane) for each of `planes` planes, on up to `threads` threads (parallel_for uses no
  // more threads than planes).
  template <typename Body>
  void on_planes(int threads, std::size_t planes, const Body& body) const {
    core::parallel_for(threads, planes, 1, [&](std::size_t b, std::size_t e, int) {
      Lease s(*this);
      for (std::size_t p = b; p < e; ++p) body(*s, p);
    });
  }
  // A scratch buffer taken from the pool for a while, by any thread: buffers are made once and kept
  // (fresh pages are dear on this VM).
  class Lease {
   public:
    explicit Lease(const Plans& p) : plans_(p) {
      const std::lock_guard lock(p.pool_mutex);
      if (!p.pool.empty()) {
        s_ = std::move(p.pool.back());
        p.pool.pop_back();
      }
      if (!s_) s_ = std::make_unique<Scratch>(p);
    }
    ~Lease() {
      const std::lock_guard lock(plans_.pool_mutex);
      plans_.pool.push_back(std::move(s_));
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Scratch& operator*() const { return *s_; }
    Scratch* operator->() const { return s_.get(); }

   private:
    const Plans& plans_;
    std::unique_ptr<Scratch> s_;
  };
  mutable std::mutex pool_mutex;
  mutable std::vector<std::unique_ptr<Scratch>> pool;

  std::int64_t n1, n2, nzc, longest;
  fftw_plan r2c_z, c2r_z, forward_y, backward_y, forward_x, backward_x;
};

SlabFft::SlabFft(std::array<std::int64_t, 3> n, const mpi::Comm& comm, int threads)
    : n_(n), comm_(comm), threads_(std::max(threads, 1)), x_slabs_(n[0], comm.size()), y_slabs_(n[1], comm.size()) {
  for (std::int64_t s : n)
    if (s < 2) throw core::Error::usage("an FFT mesh needs at least 2 cells per side, not {}x{}x{}", n[0], n[1], n[2]);
  plans_ = std::make_unique<Plans>(n);
}

SlabFft::~SlabFft() = default;

SlabFft::Forward::Forward(const SlabFft& fft)
    : fft_(fft), xs_(static_cast<std::size_t>(fft.x_slabs_.planes(fft.comm_.rank()) * fft.n_[1] * fft.nz_complex())) {}

void SlabFft::Forward::add(std::size_t p0, std::size_t p1, const double* real, double scale) {
  const Plans& p = *fft_.plans_;
  const auto plane = static_cast<std::size_t>(p.n1 * p.n2), half = static_cast<std::size_t>(p.n1 * p.nzc);
  if (p1 * half > xs_.size()) throw core::Error::internal("SlabFft::Forward::add: planes up to {}", p1);
  const Plans::Lease s(p);
  for (std::size_t x = p0; x < p1; ++x) {  // z: real -> half spectrum
    const double* in = real + (x - p0) * plane;
    for (std::size_t i = 0; i < plane; ++i) s->real.data[i] = in[i] * scale;
    fftw_execute_dft_r2c(p.r2c_z, s->real.data, s->spectrum.as_complex());
    std::copy_n(s->spectrum.data, half, xs_.data() + x * half);
  }
}

std::vector<Complex> SlabFft::Forward::finish() && {
  const Plans& p = *fft_.plans_;
  const auto planes = static_cast<std::size_t>(fft_.x_slabs_.planes(fft_.comm_.rank()));
  p.transform(xs_, planes, static_cast<std::size_t>(fft_.n_[1]), p.forward_y, fft_.threads_);
  std::vector<Complex> ys = fft_.transpose(std::move(xs_), fft_.x_slabs_, fft_.y_slabs_);
  p.transform(ys, static_cast<std::size_t>(fft_.y_slabs_.planes(fft_.comm_.rank())),
              static_cast<std::size_t>(fft_.n_[0]), p.forward_x, fft_.threads_);
  return ys;
}

std::vector<Complex> SlabFft::forward(std::span<const double> real) const {
  const auto plane = static_cast<std::size_t>(n_[1] * n_[2]);
  const auto planes = static_cast<std::size_t>(x_slabs_.planes(comm_.rank()));
  if (real.size() != planes * plane)
    throw core::Error::internal("SlabFft::forward: {} values for {} planes", real.size(), planes);
  Forward f(*this);
  core::parallel_for(threads_, planes, 1,
                     [&](std::size_t b, std::size_t e, int) { f.add(b, e, real.data() + b * plane, 1.0); });
  return std::move(f).finish();
}

void SlabFft::backward(std::vector<Complex> ys, std::span<double> real) const {
  const auto n0 = static_cast<std::size_t>(n_[0]), n1 = static_cast<std::size_t>(n_[1]),
             n2 = static_cast<std::size_t>(n_[2]);
  const auto nzc = static_cast<std::size_t>(nz_complex());
  const auto my_ky = static_cast<std::size_t>(y_slabs_.planes(comm_.rank()));
  if (ys.size() != my_ky * n0 * nzc)
    throw core::Error::internal("SlabFft::backward: {} values for {} ky planes", ys.size(), my_ky);
  const auto planes = static_cast<std::size_t>(x_slabs_.planes(comm_.rank()));
  if (real.size() != planes * n1 * n2)
    throw core::Error::internal("SlabFft::backward: room for {} values, {} planes", real.size(), planes);
  const Plans& p = *plans_;
  p.transform(ys, my_ky, n0, p.backward_x, threads_);
  std::vector<Complex> xs = transpose(std::move(ys), y_slabs_, x_slabs_);
  p.transform(xs, planes, n1, p.backward_y, threads_);
  const double norm = 1.0 / (static_cast<double>(n0) * static_cast<double>(n1) * static_cast<double>(n2));
  p.on_planes(threads_, planes, [&](Plans::Scratch& s, std::size_t x) {  // z: half spectrum -> real
    std::copy_n(xs.data() + x * n1 * nzc, n1 * nzc, s.spectrum.data);
    fftw_execute_dft_c2r(p.c2r_z, s.spectrum.as_complex(), s.real.data);  // destroys the spectrum's copy
    double* out = real.data() + x * n1 * n2;
    for (std::size_t i = 0; i < n1 * n2; ++i) out[i] = s.real.data[i] * norm;
  });
}

std::vector<double> SlabFft::backward(std::vector<Complex> spectrum) const {
  std::vector<double> real(static_cast<std::size_t>(x_slabs_.planes(comm_.rank()) * n_[1] * n_[2]));
  backward(std::move(spectrum), real);
  return real;
}

std::vector<Complex> SlabFft::transpose(std::vector<Complex> in, const mpi::SlabDecomposition& from,
                                        const mpi::SlabDecomposition& to) const {
  const auto nzc = static_cast<std::size_t>(nz_complex());
  const int me = comm_.rank();
  const auto mine = static_cast<std::size_t>(from.planes(me));
  const auto nb = static_cast<std::size_t>(to.nx()), na = static_cast<std::size_t>(from.nx());
  const auto my_b = static_cast<std::size_t>(to.planes(me));
  if (comm_.size() == 1 && na == nb) {
    // One rank, square planes: rows (a, b) and (b, a) swap places, in the memory already touched (on
    // this VM a fresh gigabyte costs about a second of the kernel zeroing pages).
    core::parallel_for(threads_, na, 1, [&](std::size_t b0, std::size_t b1, int) {
      for (std::size_t b = b0; b < b1; ++b)
        for (std::size_t a = b + 1; a < na; ++a)
          std::swap_ranges(in.data() + (a * nb + b) * nzc, in.data() + (a * nb + b + 1) * nzc,
                           in.data() + (b * na + a) * nzc);
    });
    return in;
  }
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
  core::release(in);
  const std::vector<Complex> recv = comm_.all_to_all<Complex>(send, counts);
  core::release(send);
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
