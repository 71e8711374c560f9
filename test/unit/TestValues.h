//===- TestValues.h - Deterministic test values -----------------*- C++ -*-===//
//
// A deterministic generator of values and vectors of them, shared by the
// unit tests and the GPU bundle's builder (which must make exactly the
// tests' problems). No GoogleTest here.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_TESTVALUES_H
#define FWP_TEST_UNIT_TESTVALUES_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fwp::test {

/// Deterministic values in [-scale, scale).
class Lcg {
public:
  explicit Lcg(uint64_t seed) : state(seed * 6364136223846793005ull + 1) {}
  double next(double scale) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return scale * (static_cast<double>(state >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  }

private:
  uint64_t state;
};

/// `n` values of Lcg(seed) in [-scale, scale); each rounded to float first
/// if `roundToFloat` (what a float32 kernel or file will hold).
inline std::vector<double> randomValues(std::size_t n, uint64_t seed,
                                        double scale,
                                        bool roundToFloat = false) {
  Lcg rng(seed);
  std::vector<double> v(n);
  for (double &e : v) {
    e = rng.next(scale);
    if (roundToFloat)
      e = static_cast<float>(e);
  }
  return v;
}

/// `n` values of Lcg(seed) in [-scale, scale), as float.
inline std::vector<float> randomFloats(std::size_t n, uint64_t seed,
                                       double scale) {
  Lcg rng(seed);
  std::vector<float> v(n);
  for (float &e : v)
    e = static_cast<float>(rng.next(scale));
  return v;
}

} // namespace fwp::test

#endif // FWP_TEST_UNIT_TESTVALUES_H
