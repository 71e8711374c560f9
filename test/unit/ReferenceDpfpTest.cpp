//===- ReferenceDpfpTest.cpp - DPFP of the float64 reference --------------===//
//
// Hand-computed feature values (checking the roll order of the seeds' code),
// the all-zero key, the gradient against finite differences, and argument
// checks.
//
//===----------------------------------------------------------------------===//

#include "fwp/Reference/Reference.h"

#include "ReferenceTestUtils.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace fwp::ref;
using namespace fwp::ref::testing;

namespace {

void expectNear(const std::vector<double> &actual,
                const std::vector<double> &expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "index " << i;
}

// k = [1, -2], d = 2: x = relu([1, -2, -1, 2]) = [1, 0, 0, 2].
// roll(x, 1)[j] = x[(j-1) mod 4] = [2, 1, 0, 0] -> x * roll = [2, 0, 0, 0].
// (The seed text's x[j+1] order would give [0, 0, 0, 2] instead.)
// sum = 2, eps = 1: phi' = [2/3, 0, 0, 0].
TEST(ReferenceDpfp, HandValuesD2Nu1) {
  expectNear(dpfp({1.0, -2.0}, 1, 1.0), {2.0 / 3.0, 0.0, 0.0, 0.0}, 1e-15);
}

// Same k, nu = 3 (the largest for d = 2):
//   i = 1: [2, 0, 0, 0]           (as above)
//   i = 2: roll = x[(j-2) mod 4] = [0, 2, 1, 0] -> [0, 0, 0, 0]
//   i = 3: roll = x[(j-3) mod 4] = [0, 0, 2, 1] -> [0, 0, 0, 2]
// sum = 4, eps = 1: 2/5 = 0.4 at indices 0 and 11.
TEST(ReferenceDpfp, HandValuesD2Nu3) {
  std::vector<double> expected(12, 0.0);
  expected[0] = 0.4;
  expected[11] = 0.4;
  expectNear(dpfp({1.0, -2.0}, 3, 1.0), expected, 1e-15);
}

// nu = 2 for d = 2 pairs each x[j] with its own negation x[j-2]: only the
// first block survives. With the default eps: 2 / (2 + 1e-6).
TEST(ReferenceDpfp, HandValuesD2Nu2DefaultEps) {
  std::vector<double> expected(8, 0.0);
  expected[0] = 2.0 / (2.0 + 1e-6);
  expectNear(dpfp({1.0, -2.0}, 2, 1e-6), expected, 1e-15);
}

// k = [1, 2, -3], d = 3: x = relu([1, 2, -3, -1, -2, 3]) = [1, 2, 0, 0, 0, 3].
//   i = 1: roll = x[(j-1) mod 6] = [3, 1, 2, 0, 0, 0] -> [3, 2, 0, 0, 0, 0]
//   i = 2: roll = x[(j-2) mod 6] = [0, 3, 1, 2, 0, 0] -> [0, 6, 0, 0, 0, 0]
// sum = 11, eps = 1: divide by 12.
TEST(ReferenceDpfp, HandValuesD3Nu2) {
  expectNear(dpfp({1.0, 2.0, -3.0}, 2, 1.0),
             {3.0 / 12, 2.0 / 12, 0, 0, 0, 0, 0, 6.0 / 12, 0, 0, 0, 0}, 1e-15);
}

// An all-zero key has phi = 0; eps keeps the division finite, so phi' = 0 and
// its gradient is 0 (no NaN).
TEST(ReferenceDpfp, ZeroKeyGivesZeroFeaturesAndGradient) {
  const std::vector<double> zero(3, 0.0);
  for (int64_t nu = 1; nu <= 5; ++nu) {
    const std::vector<double> phi = dpfp(zero, nu, 1e-6);
    EXPECT_EQ(phi, std::vector<double>(6 * nu, 0.0));
    const std::vector<double> g = Rng(nu).fill(6 * nu);
    EXPECT_EQ(dpfpBackward(zero, g, nu, 1e-6), zero);
  }
}

// Features are non-negative and sum to sum/(sum + eps) < 1.
TEST(ReferenceDpfp, FeaturesAreNonNegativeAndSumBelowOne) {
  Rng rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<double> phi = dpfp(rng.fill(4), 1 + trial % 7, 1e-6);
    double total = 0.0;
    for (double value : phi) {
      EXPECT_GE(value, 0.0);
      total += value;
    }
    EXPECT_LT(total, 1.0);
  }
}

// dpfpBackward against central differences of <g, dpfp(k)>, for every valid
// nu of d = 1..4. Keys are kept away from 0 (the relu kink) by more than h.
TEST(ReferenceDpfp, BackwardMatchesFiniteDifferences) {
  Rng rng(11);
  double worst = 0.0;
  for (std::size_t d = 1; d <= 4; ++d) {
    for (int64_t nu = 1; nu <= static_cast<int64_t>(2 * d - 1); ++nu) {
      for (double eps : {1e-6, 0.5}) {
        std::vector<double> k(d);
        for (double &value : k)
          value =
              (rng.uniform(0, 1) < 0.5 ? -1.0 : 1.0) * rng.uniform(0.1, 1.5);
        const std::vector<double> g = rng.fill(2 * d * nu);
        auto loss = [&](const std::vector<double> &key) {
          return innerProduct(g, dpfp(key, nu, eps));
        };
        const double error = relativeError(dpfpBackward(k, g, nu, eps),
                                           centralDifference(loss, k, 1e-6));
        EXPECT_LT(error, 1e-7) << "d=" << d << " nu=" << nu << " eps=" << eps;
        worst = std::max(worst, error);
      }
    }
  }
  recordError("maxRelError", worst);
}

TEST(ReferenceDpfpArgs, NuBelowOneThrows) {
  EXPECT_THROW(dpfp({1.0, 2.0}, 0, 1e-6), std::invalid_argument);
}

TEST(ReferenceDpfpArgs, NuAboveTwoDMinusOneThrows) {
  EXPECT_THROW(dpfp({1.0, 2.0}, 4, 1e-6), std::invalid_argument);
}

TEST(ReferenceDpfpArgs, EmptyKeyThrows) {
  EXPECT_THROW(dpfp({}, 1, 1e-6), std::invalid_argument);
}

TEST(ReferenceDpfpArgs, ZeroEpsThrows) {
  EXPECT_THROW(dpfp({1.0, 2.0}, 1, 0.0), std::invalid_argument);
}

TEST(ReferenceDpfpArgs, NegativeEpsThrows) {
  EXPECT_THROW(dpfp({1.0, 2.0}, 1, -1e-6), std::invalid_argument);
}

TEST(ReferenceDpfpArgs, NanEpsThrows) {
  EXPECT_THROW(dpfp({1.0, 2.0}, 1, std::nan("")), std::invalid_argument);
}

TEST(ReferenceDpfpArgs, BackwardNuOutOfRangeThrows) {
  EXPECT_THROW(dpfpBackward({1.0, 2.0}, std::vector<double>(16), 4, 1e-6),
               std::invalid_argument);
}

TEST(ReferenceDpfpArgs, BackwardZeroEpsThrows) {
  EXPECT_THROW(dpfpBackward({1.0, 2.0}, std::vector<double>(4), 1, 0.0),
               std::invalid_argument);
}

TEST(ReferenceDpfpArgs, BackwardGradientSizeMismatchThrows) {
  EXPECT_THROW(dpfpBackward({1.0, 2.0}, std::vector<double>(5), 1, 1e-6),
               std::invalid_argument);
}

} // namespace
