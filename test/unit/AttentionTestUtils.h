//===- AttentionTestUtils.h - The JIT attention tests' cases ----*- C++ -*-===//
//
// What JitForwardTest.cpp and JitBackwardTest.cpp share besides their cases
// (AttentionCases.h): running the compiled forward on double vectors, and
// the loop that compiles and checks a list of cases on the backend under
// test (BackendUnderTest.h).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_ATTENTIONTESTUTILS_H
#define FWP_TEST_UNIT_ATTENTIONTESTUTILS_H

#include "AttentionCases.h"
#include "BackendUnderTest.h"
#include "TestUtils.h"

#include "fwp/JIT/JIT.h"
#include "fwp/Reference/Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace fwp::test {

template <typename T> std::vector<T> cast(const std::vector<double> &v) {
  return std::vector<T>(v.begin(), v.end());
}

/// Runs the forward of `kernel` on x and `w` in T (float or double) and
/// returns y as doubles.
template <typename T>
std::vector<double>
runForward(const jit::CompiledAttention &kernel, const std::vector<double> &x,
           const ref::AttentionParams &w, const ref::AttentionShape &shape) {
  std::vector<T> xT = cast<T>(x), wq = cast<T>(w.wQ), wk = cast<T>(w.wK),
                 wv = cast<T>(w.wV), wb = cast<T>(w.wBeta), wo = cast<T>(w.wO),
                 bo = cast<T>(w.bO);
  std::vector<T> y(x.size(), T(-7)); // every element must be overwritten
  kernel.forward(shape.seqLen, shape.batch, xT.data(), wq.data(), wk.data(),
                 wv.data(), wb.data(), wo.data(), bo.data(), y.data());
  return std::vector<double>(y.begin(), y.end());
}

template <typename T>
std::vector<double> runForward(const jit::CompiledAttention &kernel,
                               const Problem &p) {
  return runForward<T>(kernel, p.x, p.params, p.shape);
}

/// The forward of a kernel of any element type, through the untyped entry
/// point for bf16 and f16 (buffers of their bit patterns).
inline std::vector<double>
runForwardAnyType(const jit::CompiledAttention &kernel, const Problem &p) {
  jit::DType dtype = kernel.desc().dtype;
  if (dtype == jit::DType::F32)
    return runForward<float>(kernel, p);
  if (dtype == jit::DType::F64)
    return runForward<double>(kernel, p);
  auto bits = [&](const std::vector<double> &values) {
    std::vector<uint16_t> out(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      out[i] = dtype == jit::DType::BF16
                   ? rt::toBf16(static_cast<float>(values[i]))
                   : rt::toF16(static_cast<float>(values[i]));
    return out;
  };
  const ref::AttentionParams &w = p.params;
  std::vector<uint16_t> x = bits(p.x), wq = bits(w.wQ), wk = bits(w.wK),
                        wv = bits(w.wV), wb = bits(w.wBeta), wo = bits(w.wO),
                        bo = bits(w.bO);
  std::vector<uint16_t> y(x.size(), 0x7fc1); // a NaN: must be overwritten
  kernel.forward(p.shape.seqLen, p.shape.batch,
                 static_cast<const void *>(x.data()), wq.data(), wk.data(),
                 wv.data(), wb.data(), wo.data(), bo.data(),
                 static_cast<void *>(y.data()));
  std::vector<double> out(y.size());
  for (size_t i = 0; i < y.size(); ++i)
    out[i] = dtype == jit::DType::BF16 ? rt::fromBf16(y[i]) : rt::fromF16(y[i]);
  return out;
}

/// For each of `cases` in turn: compiles its kernel for `dtype` (through the
/// cache; prints the compile time of each kernel the first time it comes
/// up), makes its problem with seed firstSeed + 10 * (its index), and calls
/// check(case, kernel, problem), which checks it and returns its worst
/// error. Records the worst of all as the test's max_relative_error.
template <typename Check>
void checkEachCase(const std::vector<Case> &cases, jit::DType dtype,
                   uint64_t firstSeed, Check check) {
  std::set<const jit::CompiledAttention *> reported;
  double worst = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    SCOPED_TRACE(c.name());
    auto kernel = jit::compile(c.desc(dtype, kBackend));
    if (reported.insert(kernel.get()).second)
      std::printf("[ compile  ] %s: %.3f s\n", kernel->desc().str().c_str(),
                  kernel->compileSeconds());
    Problem p = makeProblem(c, dtype, firstSeed + 10 * i);
    worst = std::max(worst, check(c, *kernel, p));
  }
  ::testing::Test::RecordProperty("max_relative_error", std::to_string(worst));
}

/// The message of the std::invalid_argument that `call` throws, or
/// "(no exception)".
template <typename Call> std::string invalidArgumentMessage(Call &&call) {
  try {
    call();
  } catch (const std::invalid_argument &e) {
    return std::string(e.what());
  }
  return std::string("(no exception)");
}

} // namespace fwp::test

#endif // FWP_TEST_UNIT_ATTENTIONTESTUTILS_H
