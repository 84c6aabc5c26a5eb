// Deterministic random numbers for synthetic snapshots. The generator is std::mt19937_64 (whose
// output sequence the C++ standard fixes) seeded through std::seed_seq (also fixed), and the
// transforms to uniform, normal and isotropic deviates are our own: std::uniform_real_distribution
// and std::normal_distribution are implementation-defined, so using them would make the bytes of a
// snapshot depend on the C++ library.
#pragma once

#include <array>
#include <cstdint>
#include <random>

namespace phew::synth {

class Rng {
 public:
  // An independent stream for (seed, component, purpose): adding or changing one component of a
  // scene leaves the particles of the others unchanged.
  Rng(std::uint64_t seed, std::uint64_t component, std::uint64_t purpose);

  std::uint64_t bits() { return gen_(); }
  double uniform();                   // [0, 1), 53 random bits
  double uniform_positive();          // (0, 1]
  double normal();                    // standard normal (Box-Muller; the second deviate is kept for the next call)
  std::array<double, 3> direction();  // isotropic unit vector

 private:
  std::mt19937_64 gen_;
  bool has_spare_ = false;
  double spare_ = 0;
};

// What a stream is used for (the `purpose` of Rng).
enum Stream : std::uint64_t { kRadius = 1, kVelocity = 2, kDirection = 3, kNoise = 4, kUniform = 5 };

}  // namespace phew::synth
