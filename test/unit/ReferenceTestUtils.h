//===- ReferenceTestUtils.h - Helpers for the reference's tests -*- C++ -*-===//
//
// Deterministic random data, central finite differences and the error
// measure used by every Reference*Test.cpp.
//
// Error measure: relativeError(a, b) = max_i |a_i - b_i| / max(1, max_i |b_i|)
// with b the independent value (finite difference, quadratic form, hand
// value). Normalizing by the largest expected entry (floored at 1) judges a
// gradient as a whole: an entry that should be ~0 is not held to a relative
// bound it cannot meet, and big entries are not judged by absolute error.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_REFERENCETESTUTILS_H
#define FWP_TEST_UNIT_REFERENCETESTUTILS_H

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace fwp::ref::testing {

/// SplitMix64: the same numbers on every platform and standard library
/// (std::uniform_real_distribution is implementation-defined).
class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed) {}

  double uniform(double lo, double hi) {
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    const double unit = static_cast<double>(z >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * unit;
  }

  std::vector<double> fill(std::size_t n, double lo = -1.0, double hi = 1.0) {
    std::vector<double> values(n);
    for (double &value : values)
      value = uniform(lo, hi);
    return values;
  }

private:
  uint64_t state;
};

inline double innerProduct(const std::vector<double> &a,
                           const std::vector<double> &b) {
  EXPECT_EQ(a.size(), b.size());
  double total = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    total += a[i] * b[i];
  return total;
}

inline double maxAbs(const std::vector<double> &values) {
  double largest = 0.0;
  for (double value : values)
    largest = std::max(largest, std::fabs(value));
  return largest;
}

/// max|actual - expected| / max(1, max|expected|); see the file comment.
inline double relativeError(const std::vector<double> &actual,
                            const std::vector<double> &expected) {
  EXPECT_EQ(actual.size(), expected.size());
  if (actual.size() != expected.size())
    return INFINITY;
  double worst = 0.0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double diff = std::fabs(actual[i] - expected[i]);
    worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
  }
  return worst / std::max(1.0, maxAbs(expected));
}

inline bool allFinite(const std::vector<double> &values) {
  return std::all_of(values.begin(), values.end(),
                     [](double value) { return std::isfinite(value); });
}

/// dLoss/dpoint[i] ~ (loss(point + h e_i) - loss(point - h e_i)) / (2h) for
/// the indices `which` selects (all when it is null); 0 elsewhere.
inline std::vector<double> centralDifference(
    const std::function<double(const std::vector<double> &)> &loss,
    std::vector<double> point, double h,
    const std::function<bool(std::size_t)> &which = nullptr) {
  std::vector<double> grad(point.size(), 0.0);
  for (std::size_t i = 0; i < point.size(); ++i) {
    if (which && !which(i))
      continue;
    const double saved = point[i];
    point[i] = saved + h;
    const double up = loss(point);
    point[i] = saved - h;
    const double down = loss(point);
    point[i] = saved;
    grad[i] = (up - down) / (2.0 * h);
  }
  return grad;
}

/// Records an error in the XML report (--gtest_output=xml) so the measured
/// accuracy can be read off a run without extra printing.
inline void recordError(const std::string &key, double error) {
  std::ostringstream text;
  text.precision(3);
  text << std::scientific << error;
  ::testing::Test::RecordProperty(key, text.str());
}

} // namespace fwp::ref::testing

#endif // FWP_TEST_UNIT_REFERENCETESTUTILS_H
