// A distributed 3-D real FFT on x-slabs that gives the same bits on any number of ranks.
//
// FFTW-MPI plans its local transforms for the local slab shape, so the arithmetic (and the last bits
// of the result) can change with the rank count. Here every 1-D line, whichever rank holds it, goes
// through the same FFTW plan on the same aligned buffer, and the ranks only move data between the
// passes (x-slabs for the z and y passes, y-slabs for the x pass): the transform is a fixed function
// of the input, independent of the decomposition. Threads share a rank's planes the same way.
#pragma once

#include <phew/mpi/comm.hpp>
#include <phew/mpi/slab.hpp>

#include <array>
#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace phew::gravity {

class SlabFft {
 public:
  // A real mesh of shape n (x slowest), x-planes distributed over the communicator's ranks as
  // SlabDecomposition(n[0], size); its spectrum [n0][n1][n2/2+1] is distributed by y (ky) as
  // SlabDecomposition(n[1], size), laid out [ky][kx][kz]. Each pass runs on up to `threads` threads
  // of this rank, a plane each. Collective (plans are made on every rank).
  SlabFft(std::array<std::int64_t, 3> n, const mpi::Comm& comm, int threads = 1);
  ~SlabFft();
  SlabFft(const SlabFft&) = delete;
  SlabFft& operator=(const SlabFft&) = delete;

  const mpi::SlabDecomposition& x_slabs() const { return x_slabs_; }
  const mpi::SlabDecomposition& y_slabs() const { return y_slabs_; }
  std::int64_t nz_complex() const { return n_[2] / 2 + 1; }

  // This rank's real planes [planes][n1][n2] -> this rank's spectrum [ky_local][n0][n2/2+1]
  // (unnormalised, FFTW's sign convention: exp(-i k x) forward). Collective.
  std::vector<std::complex<double>> forward(std::span<const double> real) const;

  // The same transform fed a run of planes at a time, as a deposit's PlaneSink hands them over: each
  // plane's first pass runs as it arrives, so the real mesh is never whole. Every plane of this rank
  // must be added once, in any order, from any thread; then finish() (collective) gives forward()'s
  // spectrum, bit for bit.
  class Forward {
   public:
    explicit Forward(const SlabFft& fft);
    // Planes [p0, p1) of this rank (counted from its first), [p1 - p0][n1][n2], each value times `scale`.
    void add(std::size_t p0, std::size_t p1, const double* real, double scale);
    std::vector<std::complex<double>> finish() &&;

   private:
    const SlabFft& fft_;
    std::vector<std::complex<double>> xs_;  // [planes][n1][n2/2+1]
  };
  // The inverse, divided by n0 n1 n2, so that backward(forward(f)) == f up to rounding, into `real`
  // (this rank's planes [planes][n1][n2]). Collective.
  void backward(std::vector<std::complex<double>> spectrum, std::span<double> real) const;
  std::vector<double> backward(std::vector<std::complex<double>> spectrum) const;

 private:
  struct Plans;
  // [a][b][kz] with a distributed by `from` -> [b][a][kz] with b distributed by `to`: x-slabs [x][ky][kz]
  // to y-slabs [ky][x][kz] and back (in place on one rank when the planes are square). Collective.
  std::vector<std::complex<double>> transpose(std::vector<std::complex<double>> in, const mpi::SlabDecomposition& from,
                                              const mpi::SlabDecomposition& to) const;

  std::array<std::int64_t, 3> n_;
  const mpi::Comm& comm_;
  int threads_;
  mpi::SlabDecomposition x_slabs_, y_slabs_;
  std::unique_ptr<Plans> plans_;
};

}  // namespace phew::gravity
