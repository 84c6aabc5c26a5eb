#include <phew/synth/random.hpp>

#include <cmath>
#include <numbers>

namespace phew::synth {

Rng::Rng(std::uint64_t seed, std::uint64_t component, std::uint64_t purpose) {
  // seed_seq takes 32-bit words: split the 64-bit seed so that seeds differing only in the high bits
  // still give different streams.
  std::seed_seq seq{static_cast<std::uint32_t>(seed),      static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(component), static_cast<std::uint32_t>(component >> 32),
                    static_cast<std::uint32_t>(purpose),   0x70686577u /* "phew" */};
  gen_.seed(seq);
}

double Rng::uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }

double Rng::uniform_positive() { return static_cast<double>((gen_() >> 11) + 1) * 0x1.0p-53; }

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double r = std::sqrt(-2.0 * std::log(uniform_positive()));
  const double phi = 2.0 * std::numbers::pi * uniform();
  spare_ = r * std::sin(phi);
  has_spare_ = true;
  return r * std::cos(phi);
}

std::array<double, 3> Rng::direction() {
  const double z = 2.0 * uniform() - 1.0;
  const double phi = 2.0 * std::numbers::pi * uniform();
  const double s = std::sqrt(std::max(0.0, 1.0 - z * z));
  return {s * std::cos(phi), s * std::sin(phi), z};
}

}  // namespace phew::synth
