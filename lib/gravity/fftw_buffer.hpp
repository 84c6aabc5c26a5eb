// An FFTW-allocated buffer: aligned as FFTW's plans expect, so that a plan, and the bytes it computes,
// do not depend on where malloc put the data. Used by the potential's slab FFT and by synth's
// Zel'dovich boxes (both plan with FFTW_ESTIMATE only).
#pragma once

#include <phew/core/error.hpp>

#include <fftw3.h>

#include <algorithm>
#include <cstddef>

namespace phew::gravity {

template <typename T>
struct FftwBuffer {
  explicit FftwBuffer(std::size_t n) : data(static_cast<T*>(fftw_malloc(sizeof(T) * std::max<std::size_t>(n, 1)))) {
    if (!data) throw core::Error::internal("out of memory for an FFT buffer of {} values", n);
  }
  ~FftwBuffer() { fftw_free(data); }
  FftwBuffer(const FftwBuffer&) = delete;
  FftwBuffer& operator=(const FftwBuffer&) = delete;

  // The same memory as FFTW's complex type (a real buffer in the padded r2c layout, or std::complex).
  fftw_complex* as_complex() const { return reinterpret_cast<fftw_complex*>(data); }

  T* data;
};

}  // namespace phew::gravity
