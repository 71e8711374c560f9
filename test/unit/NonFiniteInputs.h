//===- NonFiniteInputs.h - NaN and infinities through a kernel --*- C++ -*-===//
//
// A NaN (quiet, as the host writes it, or negative) or an infinity in one
// element of x must come out where the float64 reference has a non-finite
// value, never as a finite number: on the GPU a NaN made by the kernel
// itself (from an infinity) once vanished in the tensor cores' tf32
// rounding. The other batch element and the chunks before the special step
// must still match the reference.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_NONFINITEINPUTS_H
#define FWP_TEST_UNIT_NONFINITEINPUTS_H

#include "AttentionTestUtils.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace fwp::test {

struct SpecialValue {
  const char *name;
  double value;
};

inline std::vector<SpecialValue> specialValues() {
  double negativeNan = -std::numeric_limits<double>::quiet_NaN();
  return {{"NaN", std::numeric_limits<double>::quiet_NaN()},
          {"negative NaN", negativeNan},
          {"+inf", std::numeric_limits<double>::infinity()},
          {"-inf", -std::numeric_limits<double>::infinity()}};
}

/// The small case with the special value at step `kSpecialStep` of batch
/// element 0. The forward's chunks take it to every step of its chunk (a
/// product of a NaN with a masked zero is NaN), not to earlier chunks; the
/// backward's state gradient takes it to every step.
constexpr int64_t kSpecialStep = 9;

inline void plantSpecial(Problem &p, double value) {
  int64_t d = p.shape.dModel;
  p.x[size_t((kSpecialStep * p.shape.batch + 0) * d + 1)] = value;
}

/// Where `values` is not finite.
inline std::vector<bool> nonFiniteMask(const std::vector<double> &values) {
  std::vector<bool> mask(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    mask[i] = !std::isfinite(values[i]);
  return mask;
}

/// Non-finite wherever the reference is.
inline void expectNoneVanished(const std::vector<double> &got,
                               const std::vector<double> &ref,
                               const std::string &what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  size_t vanished = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    vanished += !std::isfinite(ref[i]) && std::isfinite(got[i]);
  EXPECT_EQ(vanished, 0u) << what << ": " << vanished
                          << " non-finite values of the reference came out "
                             "finite";
}

/// `got` against `ref` for a [seqLen, batch, width] tensor: non-finite
/// wherever the reference is; the rows of batch element 1, and those of
/// element 0 before step `firstReached`, within `bound` of the reference.
inline void expectSpecialKept(const std::vector<double> &got,
                              const std::vector<double> &ref, int64_t batch,
                              int64_t firstReached, int64_t width, double bound,
                              const std::string &what) {
  expectNoneVanished(got, ref, what);
  std::vector<double> gotClean, refClean;
  for (size_t row = 0; row < ref.size() / size_t(width); ++row) {
    int64_t step = int64_t(row) / batch, b = int64_t(row) % batch;
    if (b == 0 && step >= firstReached)
      continue;
    gotClean.insert(gotClean.end(), got.begin() + row * width,
                    got.begin() + (row + 1) * width);
    refClean.insert(refClean.end(), ref.begin() + row * width,
                    ref.begin() + (row + 1) * width);
  }
  EXPECT_LE(relativeError(gotClean, refClean), bound)
      << what << ": the rows the special value cannot reach";
}

} // namespace fwp::test

#endif // FWP_TEST_UNIT_NONFINITEINPUTS_H
