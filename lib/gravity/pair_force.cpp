#include <phew/gravity/pair_force.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
// On x86-64 the scaled sums have an AVX kernel besides the baseline's SSE2 one, chosen at run time
// (PairForce::sum_scaled): the build itself stays baseline x86-64.
#if defined(__x86_64__)
#include <immintrin.h>
#define PHEW_PAIR_AVX 1
#endif

namespace phew::gravity {

PairForce::PairForce(double G, double softening, double r_split)
    : G_(G), eps2_(softening * softening), r_split_(r_split) {
  if (r_split_ <= 0) {
    r_cut_ = r_cut2_ = std::numeric_limits<double>::infinity();
    return;
  }
  r_cut_ = kCutInSplits * r_split_;
  r_cut2_ = r_cut_ * r_cut_;
  const double u_max = r_cut_ / (2 * r_split_);
  const double step = u_max / kTableSteps;
  per_r_ = 1 / (2 * r_split_ * step);  // r -> table position
  for (int i = 0; i <= kTableSteps + 1; ++i) {
    const double u = i * step;
    table_.push_back({std::erfc(u), std::erfc(u) + 2 * u / std::sqrt(M_PI) * std::exp(-u * u)});
  }
  for (int i = 0; i <= kTableSteps; ++i) {
    const Factors &lo = table_[static_cast<std::size_t>(i)], &hi = table_[static_cast<std::size_t>(i) + 1];
    table_f_.push_back({static_cast<float>(lo.phi), static_cast<float>(hi.phi - lo.phi), static_cast<float>(lo.acc),
                        static_cast<float>(hi.acc - lo.acc)});
  }
}

void PairForce::add_to_two(const PointMass* s, std::size_t n, const double* const x[2], double phi[2],
                           double acc[2][3]) const {
#if defined(__SSE2__)
  // Lane 0 is x[0], lane 1 x[1] (_mm_set_pd takes the high lane first).
  auto both = [](double a, double b) { return _mm_set_pd(b, a); };
  const __m128d tx = both(x[0][0], x[1][0]), ty = both(x[0][1], x[1][1]), tz = both(x[0][2], x[1][2]);
  __m128d p = both(phi[0], phi[1]);
  __m128d ax = both(acc[0][0], acc[1][0]), ay = both(acc[0][1], acc[1][1]), az = both(acc[0][2], acc[1][2]);
  const __m128d cut2 = _mm_set1_pd(r_cut2_), eps2 = _mm_set1_pd(eps2_), one = _mm_set1_pd(1.0);
  const __m128d zero = _mm_setzero_pd(), g = _mm_set1_pd(G_), per_r = _mm_set1_pd(per_r_);
  const __m128d last = _mm_set1_pd(kTableSteps);
  const bool tabulated = !table_.empty();
  for (std::size_t k = 0; k < n; ++k) {
    const __m128d rx = _mm_sub_pd(tx, _mm_set1_pd(s[k].x[0]));
    const __m128d ry = _mm_sub_pd(ty, _mm_set1_pd(s[k].x[1]));
    const __m128d rz = _mm_sub_pd(tz, _mm_set1_pd(s[k].x[2]));
    const __m128d r2 = _mm_add_pd(_mm_add_pd(_mm_mul_pd(rx, rx), _mm_mul_pd(ry, ry)), _mm_mul_pd(rz, rz));
    const __m128d q2 = _mm_add_pd(r2, eps2);
    // add() returns early when r2 > r_cut2 or q2 <= 0: such a lane adds nothing (masked to +0, which
    // leaves every sum as it was: they start at +0 and never reach -0).
    const __m128d keep = _mm_and_pd(_mm_cmpngt_pd(r2, cut2), _mm_cmpnle_pd(q2, zero));
    if (_mm_movemask_pd(keep) == 0) continue;
    const __m128d inv = _mm_div_pd(one, _mm_sqrt_pd(q2));
    __m128d fp = one, fa = one;
    if (tabulated) {
      const __m128d t = _mm_mul_pd(_mm_sqrt_pd(r2), per_r);
      // min(int(t), kTableSteps), with t clamped first so that a masked lane far beyond r_cut converts
      // in range; f = t - i from the unclamped t, as add().
      const __m128i i = _mm_cvttpd_epi32(_mm_min_pd(t, last));
      const __m128d f = _mm_sub_pd(t, _mm_cvtepi32_pd(i));
      const auto i0 = static_cast<std::size_t>(_mm_cvtsi128_si32(i));
      const auto i1 = static_cast<std::size_t>(_mm_cvtsi128_si32(_mm_shuffle_epi32(i, 1)));
      const Factors &lo0 = table_[i0], &hi0 = table_[i0 + 1], &lo1 = table_[i1], &hi1 = table_[i1 + 1];
      const __m128d lo_phi = both(lo0.phi, lo1.phi), hi_phi = both(hi0.phi, hi1.phi);
      const __m128d lo_acc = both(lo0.acc, lo1.acc), hi_acc = both(hi0.acc, hi1.acc);
      fp = _mm_add_pd(lo_phi, _mm_mul_pd(_mm_sub_pd(hi_phi, lo_phi), f));
      fa = _mm_add_pd(lo_acc, _mm_mul_pd(_mm_sub_pd(hi_acc, lo_acc), f));
    }
    const __m128d gm = _mm_mul_pd(_mm_mul_pd(g, _mm_set1_pd(s[k].m)), inv);
    p = _mm_sub_pd(p, _mm_and_pd(keep, _mm_mul_pd(gm, fp)));
    const __m128d f3 = _mm_mul_pd(_mm_mul_pd(_mm_mul_pd(gm, inv), inv), fa);
    ax = _mm_sub_pd(ax, _mm_and_pd(keep, _mm_mul_pd(f3, rx)));
    ay = _mm_sub_pd(ay, _mm_and_pd(keep, _mm_mul_pd(f3, ry)));
    az = _mm_sub_pd(az, _mm_and_pd(keep, _mm_mul_pd(f3, rz)));
  }
  _mm_storel_pd(&phi[0], p), _mm_storeh_pd(&phi[1], p);
  _mm_storel_pd(&acc[0][0], ax), _mm_storeh_pd(&acc[1][0], ax);
  _mm_storel_pd(&acc[0][1], ay), _mm_storeh_pd(&acc[1][1], ay);
  _mm_storel_pd(&acc[0][2], az), _mm_storeh_pd(&acc[1][2], az);
#else
  for (int lane = 0; lane < 2; ++lane)
    for (std::size_t k = 0; k < n; ++k) {
      const double r[3] = {x[lane][0] - s[k].x[0], x[lane][1] - s[k].x[1], x[lane][2] - s[k].x[2]};
      add(s[k].m, r, phi[lane], acc[lane]);
    }
#endif
}

namespace {

// A double in float, infinity beyond float's range (a cut-off more than ~1e19 group lengths away).
float to_float(double v) {
  return v > static_cast<double>(std::numeric_limits<float>::max()) ? std::numeric_limits<float>::infinity()
                                                                    : static_cast<float>(v);
}

// The scaled sums' units: the potential's G M / L and the acceleration's G M / L^2.
void to_units(double G, GroupScale scale, double phi[PairForce::kLanes], double acc[PairForce::kLanes][3]) {
  const double unit_phi = G * scale.mass / scale.length, unit_acc = unit_phi / scale.length;
  for (std::size_t lane = 0; lane < PairForce::kLanes; ++lane) {
    phi[lane] *= unit_phi;
    for (std::size_t d = 0; d < 3; ++d) acc[lane][d] *= unit_acc;
  }
}

}  // namespace

PairForce::Scaled PairForce::scaled(double length) const {
  return {to_float(eps2_ / (length * length)), to_float(r_cut2_ / (length * length)), to_float(per_r_ * length)};
}

void PairForce::sums_reference(const Scaled& c, const ScaledSource* s, std::size_t n, const float t[3][kLanes],
                               double phi[kLanes], double acc[kLanes][3]) const {
  const bool tabulated = !table_f_.empty();
  const auto last = static_cast<float>(kTableSteps);
  for (std::size_t lane = 0; lane < kLanes; ++lane) {
    double run_phi = 0, run_acc[3] = {0, 0, 0};
    for (std::size_t r0 = 0; r0 < n; r0 += kRun) {
      float p = 0, a[3] = {0, 0, 0};
      for (std::size_t k = r0; k < std::min(n, r0 + kRun); ++k) {
        const float r[3] = {t[0][lane] - s[k].x[0], t[1][lane] - s[k].x[1], t[2][lane] - s[k].x[2]};
        const float r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
        const float q2 = r2 + c.eps2;
        // add()'s early returns, as a mask: a lane beyond the cut, or on an unsoftened source, adds 0.
        const bool keep = !(r2 > c.cut2) && !(q2 <= 0);
        const float inv = 1.0F / std::sqrt(q2);
        float fp = 1, fa = 1;
        if (tabulated) {
          const float u = std::sqrt(r2) * c.per_r;
          const int i = static_cast<int>(u < last ? u : last);  // SSE's min: the second when unordered
          const float f = u - static_cast<float>(i);
          const FactorsF& e = table_f_[static_cast<std::size_t>(i)];
          fp = e.phi + e.dphi * f;
          fa = e.acc + e.dacc * f;
        }
        const float mi = s[k].m * inv;
        p -= keep ? mi * fp : 0.0F;
        const float f3 = mi * inv * inv * fa;
        for (std::size_t d = 0; d < 3; ++d) a[d] -= keep ? f3 * r[d] : 0.0F;
      }
      run_phi += p;
      for (std::size_t d = 0; d < 3; ++d) run_acc[d] += a[d];
    }
    phi[lane] = run_phi;
    for (std::size_t d = 0; d < 3; ++d) acc[lane][d] = run_acc[d];
  }
}

void PairForce::sum_scaled(const ScaledSource* s, std::size_t n, const float t[3][kLanes], GroupScale scale,
                           double phi[kLanes], double acc[kLanes][3], Kernel kernel) const {
  const Scaled c = scaled(scale.length);
#if defined(PHEW_PAIR_AVX)
  static const bool avx = __builtin_cpu_supports("avx");  // the CPU's and the OS's (libgcc checks both)
  if (kernel == Kernel::best && avx) {
    sums_avx(c, s, n, t, phi, acc);
    to_units(G_, scale, phi, acc);
    return;
  }
#endif
#if defined(__SSE2__)
  if (kernel != Kernel::reference) {
    sums_sse(c, s, n, t, 0, phi, acc);
    sums_sse(c, s, n, t, 4, phi, acc);
    to_units(G_, scale, phi, acc);
    return;
  }
#endif
  sums_reference(c, s, n, t, phi, acc);
  to_units(G_, scale, phi, acc);
}

#if defined(__SSE2__)
// sums_reference's steps for lanes lane0 .. lane0 + 3, one in each lane of an SSE register.
void PairForce::sums_sse(const Scaled& c, const ScaledSource* s, std::size_t n, const float t[3][kLanes],
                         std::size_t lane0, double phi[kLanes], double acc[kLanes][3]) const {
  const __m128 tx = _mm_loadu_ps(&t[0][lane0]), ty = _mm_loadu_ps(&t[1][lane0]), tz = _mm_loadu_ps(&t[2][lane0]);
  const __m128 cut2 = _mm_set1_ps(c.cut2), eps2 = _mm_set1_ps(c.eps2), per_r = _mm_set1_ps(c.per_r);
  const __m128 one = _mm_set1_ps(1.0F), zero = _mm_setzero_ps(), last = _mm_set1_ps(static_cast<float>(kTableSteps));
  const bool tabulated = !table_f_.empty();
  double run[4][4] = {};  // [phi, ax, ay, az][lane]
  for (std::size_t r0 = 0; r0 < n; r0 += kRun) {
    __m128 p = zero, ax = zero, ay = zero, az = zero;
    for (std::size_t k = r0; k < std::min(n, r0 + kRun); ++k) {
      const __m128 rx = _mm_sub_ps(tx, _mm_set1_ps(s[k].x[0]));
      const __m128 ry = _mm_sub_ps(ty, _mm_set1_ps(s[k].x[1]));
      const __m128 rz = _mm_sub_ps(tz, _mm_set1_ps(s[k].x[2]));
      const __m128 r2 = _mm_add_ps(_mm_add_ps(_mm_mul_ps(rx, rx), _mm_mul_ps(ry, ry)), _mm_mul_ps(rz, rz));
      const __m128 q2 = _mm_add_ps(r2, eps2);
      // Masked lanes add +0, which leaves every sum as it was (they start at +0 and never reach -0).
      const __m128 keep = _mm_and_ps(_mm_cmpngt_ps(r2, cut2), _mm_cmpnle_ps(q2, zero));
      if (_mm_movemask_ps(keep) == 0) continue;
      const __m128 inv = _mm_div_ps(one, _mm_sqrt_ps(q2));
      __m128 fp = one, fa = one;
      if (tabulated) {
        const __m128 u = _mm_mul_ps(_mm_sqrt_ps(r2), per_r);
        const __m128i i = _mm_cvttps_epi32(_mm_min_ps(u, last));
        const __m128 f = _mm_sub_ps(u, _mm_cvtepi32_ps(i));
        alignas(16) std::int32_t at[4];
        _mm_store_si128(reinterpret_cast<__m128i*>(at), i);
        // Each lane's entry (phi, dphi, acc, dacc), transposed into one vector per factor.
        __m128 e0 = _mm_load_ps(&table_f_[static_cast<std::size_t>(at[0])].phi);
        __m128 e1 = _mm_load_ps(&table_f_[static_cast<std::size_t>(at[1])].phi);
        __m128 e2 = _mm_load_ps(&table_f_[static_cast<std::size_t>(at[2])].phi);
        __m128 e3 = _mm_load_ps(&table_f_[static_cast<std::size_t>(at[3])].phi);
        _MM_TRANSPOSE4_PS(e0, e1, e2, e3);
        fp = _mm_add_ps(e0, _mm_mul_ps(e1, f));
        fa = _mm_add_ps(e2, _mm_mul_ps(e3, f));
      }
      const __m128 mi = _mm_mul_ps(_mm_set1_ps(s[k].m), inv);
      p = _mm_sub_ps(p, _mm_and_ps(keep, _mm_mul_ps(mi, fp)));
      const __m128 f3 = _mm_mul_ps(_mm_mul_ps(_mm_mul_ps(mi, inv), inv), fa);
      ax = _mm_sub_ps(ax, _mm_and_ps(keep, _mm_mul_ps(f3, rx)));
      ay = _mm_sub_ps(ay, _mm_and_ps(keep, _mm_mul_ps(f3, ry)));
      az = _mm_sub_ps(az, _mm_and_ps(keep, _mm_mul_ps(f3, rz)));
    }
    alignas(16) float out[4][4];
    _mm_store_ps(out[0], p), _mm_store_ps(out[1], ax), _mm_store_ps(out[2], ay), _mm_store_ps(out[3], az);
    for (std::size_t q = 0; q < 4; ++q)
      for (std::size_t lane = 0; lane < 4; ++lane) run[q][lane] += out[q][lane];
  }
  for (std::size_t lane = 0; lane < 4; ++lane) {
    phi[lane0 + lane] = run[0][lane];
    for (std::size_t d = 0; d < 3; ++d) acc[lane0 + lane][d] = run[d + 1][lane];
  }
}
#endif

#if defined(PHEW_PAIR_AVX)
// The same steps in the eight lanes of an AVX register.
__attribute__((target("avx"))) void PairForce::sums_avx(const Scaled& c, const ScaledSource* s, std::size_t n,
                                                        const float t[3][kLanes], double phi[kLanes],
                                                        double acc[kLanes][3]) const {
  const __m256 tx = _mm256_loadu_ps(t[0]), ty = _mm256_loadu_ps(t[1]), tz = _mm256_loadu_ps(t[2]);
  const __m256 cut2 = _mm256_set1_ps(c.cut2), eps2 = _mm256_set1_ps(c.eps2), per_r = _mm256_set1_ps(c.per_r);
  const __m256 one = _mm256_set1_ps(1.0F), zero = _mm256_setzero_ps();
  const __m256 last = _mm256_set1_ps(static_cast<float>(kTableSteps));
  const bool tabulated = !table_f_.empty();
  double run[4][kLanes] = {};  // [phi, ax, ay, az][lane]
  for (std::size_t r0 = 0; r0 < n; r0 += kRun) {
    __m256 p = zero, ax = zero, ay = zero, az = zero;
    for (std::size_t k = r0; k < std::min(n, r0 + kRun); ++k) {
      const __m256 rx = _mm256_sub_ps(tx, _mm256_set1_ps(s[k].x[0]));
      const __m256 ry = _mm256_sub_ps(ty, _mm256_set1_ps(s[k].x[1]));
      const __m256 rz = _mm256_sub_ps(tz, _mm256_set1_ps(s[k].x[2]));
      const __m256 r2 =
          _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(rx, rx), _mm256_mul_ps(ry, ry)), _mm256_mul_ps(rz, rz));
      const __m256 q2 = _mm256_add_ps(r2, eps2);
      // SSE2's cmpngt and cmpnle are these predicates (true when unordered).
      const __m256 keep = _mm256_and_ps(_mm256_cmp_ps(r2, cut2, _CMP_NGT_US), _mm256_cmp_ps(q2, zero, _CMP_NLE_US));
      if (_mm256_movemask_ps(keep) == 0) continue;
      const __m256 inv = _mm256_div_ps(one, _mm256_sqrt_ps(q2));
      __m256 fp = one, fa = one;
      if (tabulated) {
        const __m256 u = _mm256_mul_ps(_mm256_sqrt_ps(r2), per_r);
        const __m256i i = _mm256_cvttps_epi32(_mm256_min_ps(u, last));
        const __m256 f = _mm256_sub_ps(u, _mm256_cvtepi32_ps(i));
        alignas(32) std::int32_t at[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(at), i);
        // Lanes k and k + 4 side by side (a lambda would not inherit the AVX target), then the 4 x 4
        // transpose within each half.
        __m256 v[4];
        for (std::size_t lane = 0; lane < 4; ++lane)
          v[lane] = _mm256_insertf128_ps(
              _mm256_castps128_ps256(_mm_load_ps(&table_f_[static_cast<std::size_t>(at[lane])].phi)),
              _mm_load_ps(&table_f_[static_cast<std::size_t>(at[lane + 4])].phi), 1);
        const __m256 v0 = v[0], v1 = v[1], v2 = v[2], v3 = v[3];
        const __m256 lo01 = _mm256_unpacklo_ps(v0, v1), lo23 = _mm256_unpacklo_ps(v2, v3);
        const __m256 hi01 = _mm256_unpackhi_ps(v0, v1), hi23 = _mm256_unpackhi_ps(v2, v3);
        const __m256 e_phi = _mm256_shuffle_ps(lo01, lo23, _MM_SHUFFLE(1, 0, 1, 0));
        const __m256 e_dphi = _mm256_shuffle_ps(lo01, lo23, _MM_SHUFFLE(3, 2, 3, 2));
        const __m256 e_acc = _mm256_shuffle_ps(hi01, hi23, _MM_SHUFFLE(1, 0, 1, 0));
        const __m256 e_dacc = _mm256_shuffle_ps(hi01, hi23, _MM_SHUFFLE(3, 2, 3, 2));
        fp = _mm256_add_ps(e_phi, _mm256_mul_ps(e_dphi, f));
        fa = _mm256_add_ps(e_acc, _mm256_mul_ps(e_dacc, f));
      }
      const __m256 mi = _mm256_mul_ps(_mm256_set1_ps(s[k].m), inv);
      p = _mm256_sub_ps(p, _mm256_and_ps(keep, _mm256_mul_ps(mi, fp)));
      const __m256 f3 = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(mi, inv), inv), fa);
      ax = _mm256_sub_ps(ax, _mm256_and_ps(keep, _mm256_mul_ps(f3, rx)));
      ay = _mm256_sub_ps(ay, _mm256_and_ps(keep, _mm256_mul_ps(f3, ry)));
      az = _mm256_sub_ps(az, _mm256_and_ps(keep, _mm256_mul_ps(f3, rz)));
    }
    alignas(32) float out[4][kLanes];
    _mm256_store_ps(out[0], p), _mm256_store_ps(out[1], ax), _mm256_store_ps(out[2], ay), _mm256_store_ps(out[3], az);
    for (std::size_t q = 0; q < 4; ++q)
      for (std::size_t lane = 0; lane < kLanes; ++lane) run[q][lane] += out[q][lane];
  }
  for (std::size_t lane = 0; lane < kLanes; ++lane) {
    phi[lane] = run[0][lane];
    for (std::size_t d = 0; d < 3; ++d) acc[lane][d] = run[d + 1][lane];
  }
}
#endif

}  // namespace phew::gravity
