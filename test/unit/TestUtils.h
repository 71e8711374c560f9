//===- TestUtils.h - Shared helpers of the unit tests -----------*- C++ -*-===//
//
// Helpers shared by the tests of the compiled kernels, the module and the
// tools: a deterministic generator of values, vectors of them, and the
// relative error of a result against its reference.
//
// Relative error: max_i |got_i - ref_i| / max_i |ref_i| (the absolute error
// where ref is all zeros); infinite if got holds a NaN. (The reference's own
// tests normalize differently: see ReferenceTestUtils.h.)
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_TESTUTILS_H
#define FWP_TEST_UNIT_TESTUTILS_H

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

/// max_i |got_i - ref_i| / max_i |ref_i|; see the file comment.
inline double relativeError(const std::vector<double> &got,
                            const std::vector<double> &ref) {
  EXPECT_EQ(got.size(), ref.size());
  double maxDiff = 0, maxRef = 0;
  for (std::size_t i = 0; i < got.size() && i < ref.size(); ++i) {
    if (std::isnan(got[i]))
      return INFINITY;
    maxDiff = std::max(maxDiff, std::abs(got[i] - ref[i]));
    maxRef = std::max(maxRef, std::abs(ref[i]));
  }
  return maxRef > 0 ? maxDiff / maxRef : maxDiff;
}

} // namespace fwp::test

#endif // FWP_TEST_UNIT_TESTUTILS_H
