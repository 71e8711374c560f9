//===- Random.h - A portable stream of random numbers -----------*- C++ -*-===//
//
// splitmix64: the same numbers on every platform and standard library (the
// standard distributions are not specified bit-exactly), for parameter
// initialisation and for the inputs of demos and benchmarks.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_SUPPORT_RANDOM_H
#define FWP_SUPPORT_RANDOM_H

#include <cmath>
#include <cstdint>

namespace fwp {

class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state(seed) {}

  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, 1), 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  /// Uniform in [-bound, bound).
  double uniform(double bound) { return bound * (2.0 * unit() - 1.0); }

  /// Standard normal, by Box-Muller (two draws per value).
  double normal() {
    double u1 = unit() + 0x1.0p-53; // (0, 1]: log stays finite
    double u2 = unit();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

private:
  uint64_t state;
};

} // namespace fwp

#endif // FWP_SUPPORT_RANDOM_H
