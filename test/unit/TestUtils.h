//===- TestUtils.h - Shared helpers of the unit tests -----------*- C++ -*-===//
//
// Helpers shared by the tests of the compiled kernels, the module and the
// tools: the deterministic values of TestValues.h, and the relative error of
// a result against its reference.
//
// Relative error: max_i |got_i - ref_i| / max_i |ref_i| (the absolute error
// where ref is all zeros); infinite if got holds a NaN. (The reference's own
// tests normalize differently: see ReferenceTestUtils.h.)
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_TESTUTILS_H
#define FWP_TEST_UNIT_TESTUTILS_H

#include "TestValues.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fwp::test {

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
