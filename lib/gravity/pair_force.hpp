// The softened pair interaction of the gravity trees (forest.hpp), and its sums over many sources at
// once: in double precision at one or two points (Forest::accumulate), and in single precision at
// eight points (the group walks of voters and unbind, where these sums are most of the time).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace phew::gravity {

// A source as the pair sums see it: a particle, or a tree node's monopole.
struct PointMass {
  double x[3];
  double m;
};

// A source as the single-precision sums see it: its offset from a group's centre in units of the
// group's length scale, and its mass in units of the group's mass scale (GroupScale).
struct ScaledSource {
  float x[3];
  float m;
};

// The scales of one group's sums, both powers of two (so that scaling by them is exact): `length` at
// least the largest offset of a source or target from the centre and at least the softening, `mass` at
// least the heaviest source. Every scaled quantity is then within float's range, whatever the units.
struct GroupScale {
  double length = 1, mass = 1;
};

// The softened pair interaction, optionally only its short-range part. Plummer softening: the potential
// of a point mass at distance r is -G m / sqrt(r^2 + eps^2) (times erfc(r / 2 r_s) for the short range,
// tabulated; zero beyond r_cut).
class PairForce {
 public:
  PairForce(double G, double softening, double r_split = 0);
  static constexpr int kTableSteps = 4096;     // linear interpolation in u = r / 2 r_s: error ~1e-8
  static constexpr double kCutInSplits = 4.5;  // r_cut = 4.5 r_s (Gadget's choice: erfc(2.25) = 1.5e-3)

  bool short_range() const { return r_split_ > 0; }
  double r_cut() const { return r_cut_; }  // infinity for the whole force
  double softening() const { return std::sqrt(eps2_); }
  // Adds the potential and acceleration at offset r (target - source) from mass m.
  void add(double m, const double r[3], double& phi, double acc[3]) const;
  // add() of each of the n sources in turn at two targets x[0] and x[1] (the same one twice is fine).
  // The targets share the instructions, one in each lane of a vector register: the square roots and
  // the division, whose unit bounds the pair sums, then serve two targets at once. The operations and
  // their order are add()'s, lane by lane, so the sums are the same bits as add()'s wherever the
  // compiler fuses no multiply-add into either (none in the default x86-64 build).
  void add_to_two(const PointMass* sources, std::size_t n, const double* const x[2], double phi[2],
                  double acc[2][3]) const;

  // The potential and acceleration at eight targets (kLanes) from n scaled sources, in single
  // precision: target `lane` at (t[0][lane], t[1][lane], t[2][lane]), scaled as the sources by `scale`
  // (the same target in several lanes is fine). Each pair term as add()'s, in float; each lane's terms
  // summed in float over runs of kRun sources, the runs' sums added in double; the result times
  // G M / L (potential) and G M / L^2 (acceleration), in double. Float halves the bytes of a vector
  // lane, and its square roots and divisions are faster than double's: these sums, most of voters'
  // computed potential, take about 0.6 of the time of double's four AVX lanes (bench/README.md,
  // "Single-precision pair sums"). Their error: float places a pair to about 1e-7 L, so a term is
  // precise to about 1e-7 L / r (a few 1e-5 for the nearest pairs of a group), and the runs add about
  // 1e-6 of a sum; a tree's own error is about 3e-3.
  // Eight lanes of AVX where the CPU has them, else two halves of four SSE2 lanes, else (not x86-64)
  // the plain C++ reference: the same bits in every case, since each lane sums alone, in the same order,
  // with operations that round alike everywhere (no multiply-add is fused: AVX alone has none). `kernel`
  // picks one for the tests (a kernel the build or the CPU lacks falls back to the next).
  static constexpr std::size_t kLanes = 8;
  static constexpr std::size_t kRun = 32;
  enum class Kernel { best, sse2, reference };
  void sum_scaled(const ScaledSource* sources, std::size_t n, const float t[3][kLanes], GroupScale scale,
                  double phi[kLanes], double acc[kLanes][3], Kernel kernel = Kernel::best) const;

 private:
  struct Factors {
    double phi, acc;  // erfc(u) and erfc(u) + 2u/sqrt(pi) exp(-u^2), u = r / 2 r_s
  };
  // The constants of the scaled sums for a length scale: eps^2, r_cut^2 and the table's entries per
  // unit of r, all in units of that length.
  struct Scaled {
    float eps2, cut2, per_r;
  };
  Scaled scaled(double length) const;
  // The float sums of kLanes lanes, before the units: in plain C++, in SSE2 (four lanes at `lane0`) and
  // in AVX.
  void sums_reference(const Scaled& c, const ScaledSource* s, std::size_t n, const float t[3][kLanes],
                      double phi[kLanes], double acc[kLanes][3]) const;
  void sums_sse(const Scaled& c, const ScaledSource* s, std::size_t n, const float t[3][kLanes], std::size_t lane0,
                double phi[kLanes], double acc[kLanes][3]) const;
  void sums_avx(const Scaled& c, const ScaledSource* s, std::size_t n, const float t[3][kLanes], double phi[kLanes],
                double acc[kLanes][3]) const;

  double G_, eps2_, r_split_, r_cut_, r_cut2_;
  double per_r_ = 0;  // table entries per unit of r
  // A table entry for the scaled sums: the factors at its start and their steps to the next entry, in
  // float, so that one 16-byte load gives a lane all four.
  struct alignas(16) FactorsF {
    float phi, dphi, acc, dacc;
  };
  std::vector<Factors> table_;  // empty for the whole force
  std::vector<FactorsF> table_f_;
};

inline void PairForce::add(double m, const double r[3], double& phi, double acc[3]) const {
  const double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
  if (r2 > r_cut2_) return;
  const double q2 = r2 + eps2_;
  if (q2 <= 0) return;  // a target on an unsoftened source: no self-force
  const double inv = 1 / std::sqrt(q2);
  double fp = 1, fa = 1;
  if (!table_.empty()) {
    const double t = std::sqrt(r2) * per_r_;
    const auto i = std::min(static_cast<int>(t), kTableSteps);
    const double f = t - i;
    const Factors& lo = table_[static_cast<std::size_t>(i)];
    const Factors& hi = table_[static_cast<std::size_t>(i) + 1];
    fp = lo.phi + (hi.phi - lo.phi) * f;
    fa = lo.acc + (hi.acc - lo.acc) * f;
  }
  const double gm = G_ * m * inv;
  phi -= gm * fp;
  const double s = gm * inv * inv * fa;
  for (int d = 0; d < 3; ++d) acc[d] -= s * r[d];
}

}  // namespace phew::gravity
