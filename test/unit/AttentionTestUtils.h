//===- AttentionTestUtils.h - The JIT attention tests' cases ----*- C++ -*-===//
//
// What JitForwardTest.cpp and JitBackwardTest.cpp share: a case (kernel
// description and sizes) on the backend under test (BackendUnderTest.h), the
// deterministic problem it is run on, running the compiled forward on double
// vectors, and the loop that compiles and checks a list of cases.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_ATTENTIONTESTUTILS_H
#define FWP_TEST_UNIT_ATTENTIONTESTUTILS_H

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

/// One forward or backward to check. zeroSteps are steps t whose x rows are
/// all zero (every batch row, or only row zeroBatch if it is >= 0): a zero
/// key writes nothing to the fast weights.
struct Case {
  jit::Rule rule;
  int64_t heads, dHead, nu, chunk;
  int64_t seqLen, batch;
  std::vector<int64_t> zeroSteps = {};
  int64_t zeroBatch = -1;

  jit::KernelDesc desc(jit::DType dtype) const {
    jit::KernelDesc d;
    d.rule = rule;
    d.heads = heads;
    d.dHead = dHead;
    d.nu = nu;
    d.chunkSize = chunk;
    d.dtype = dtype;
    d.backend = kBackend;
    return d;
  }

  std::string name() const {
    std::string s = rule == jit::Rule::Delta ? "delta" : "sum";
    s += " H=" + std::to_string(heads) + " dk=" + std::to_string(dHead) +
         " nu=" + std::to_string(nu) + " C=" + std::to_string(chunk) +
         " T=" + std::to_string(seqLen) + " B=" + std::to_string(batch);
    if (!zeroSteps.empty())
      s += " zero-steps=" + std::to_string(zeroSteps.size());
    return s;
  }
};

/// The small case of the tests of forward() and backward() themselves.
inline Case smallCase() { return {jit::Rule::Delta, 2, 4, 2, 8, 11, 2, {4}}; }

/// The inputs of one case, and a dy for its backward.
struct Problem {
  ref::AttentionConfig config;
  ref::AttentionShape shape;
  std::vector<double> x, dy;
  ref::AttentionParams params;
};

/// x, every weight and dy from Lcg seeds seed, seed + 1, ..., seed + 7,
/// rounded to float for a float32 kernel (so that the reference runs on
/// exactly what the kernel reads).
inline Problem makeProblem(const Case &c, jit::DType dtype, uint64_t seed) {
  auto values = [&](int64_t n, uint64_t s, double scale) {
    return randomValues(n, s, scale, dtype == jit::DType::F32);
  };
  Problem p;
  p.config.heads = c.heads;
  p.config.nu = c.nu;
  p.config.rule =
      c.rule == jit::Rule::Delta ? ref::Rule::Delta : ref::Rule::Sum;
  int64_t dm = c.heads * c.dHead;
  p.shape = {c.seqLen, c.batch, dm};
  p.x = values(c.seqLen * c.batch * dm, seed, 1.0);
  for (int64_t t : c.zeroSteps)
    for (int64_t b = 0; b < c.batch; ++b)
      if (c.zeroBatch < 0 || c.zeroBatch == b)
        std::fill_n(p.x.begin() + (t * c.batch + b) * dm, dm, 0.0);
  p.params.wQ = values(dm * dm, seed + 1, 0.5);
  p.params.wK = values(dm * dm, seed + 2, 0.5);
  p.params.wV = values(dm * dm, seed + 3, 0.5);
  p.params.wBeta = values(c.heads * dm, seed + 4, 0.5);
  p.params.wO = values(dm * dm, seed + 5, 0.5);
  p.params.bO = values(dm, seed + 6, 0.1);
  p.dy = values(c.seqLen * c.batch * dm, seed + 7, 1.0);
  return p;
}

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
    auto kernel = jit::compile(c.desc(dtype));
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
