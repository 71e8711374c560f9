//===- AttentionCases.h - The attention tests' cases ------------*- C++ -*-===//
//
// The cases of the compiled forward and backward tests (JitForwardTest.cpp,
// JitBackwardTest.cpp), the deterministic problem each is run on, and the
// bound each is held to. One list for every consumer: the tests on the CPU,
// the same tests built for CUDA, and the GPU bundle (test/gpu-bundle), which
// compiles every case ahead of time and ships its expected outputs to a
// machine with a GPU. No GoogleTest here.
//
// The cases cover every value of each axis (sequence length against the
// chunk size: T = 1, T < C, T a multiple of C, T not a multiple, T = 4C+3;
// d_k in {4, 16, 64}; nu in {1, 2, 3}; heads 1..8; batch 1..3; both rules;
// zero-key steps) without running the cross product. Cases sharing a kernel
// description sit in the same list so that, each test being its own process
// under ctest, the cache compiles it once.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TEST_UNIT_ATTENTIONCASES_H
#define FWP_TEST_UNIT_ATTENTIONCASES_H

#include "TestValues.h"

#include "fwp/JIT/JIT.h"
#include "fwp/Reference/Reference.h"

#include <algorithm>
#include <cstdint>
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

  jit::KernelDesc desc(jit::DType dtype, jit::Backend backend) const {
    jit::KernelDesc d;
    d.rule = rule;
    d.heads = heads;
    d.dHead = dHead;
    d.nu = nu;
    d.chunkSize = chunk;
    d.dtype = dtype;
    d.backend = backend;
    return d;
  }

  std::string name() const {
    std::string s = ruleName(rule);
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

/// `v` rounded to what a buffer of `dtype` holds.
inline double roundTo(jit::DType dtype, double v) {
  switch (dtype) {
  case jit::DType::F32:
    return static_cast<float>(v);
  case jit::DType::F64:
    return v;
  case jit::DType::BF16:
    return rt::fromBf16(rt::toBf16(static_cast<float>(v)));
  case jit::DType::F16:
    return rt::fromF16(rt::toF16(static_cast<float>(v)));
  }
  return v;
}

/// x, every weight and dy from Lcg seeds seed, seed + 1, ..., seed + 7,
/// rounded to the kernel's element type (so that the reference runs on
/// exactly what the kernel reads).
inline Problem makeProblem(const Case &c, jit::DType dtype, uint64_t seed) {
  auto values = [&](int64_t n, uint64_t s, double scale) {
    std::vector<double> v = randomValues(n, s, scale);
    for (double &e : v)
      e = roundTo(dtype, e);
    return v;
  };
  Problem p;
  p.config.heads = c.heads;
  p.config.nu = c.nu;
  p.config.rule = c.rule;
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

/// The cases of one test: their element type, the bound on the relative
/// error (TestUtils.h) and the seed of the first case's problem (case i
/// gets firstSeed + 10 * i).
struct CaseList {
  std::string test;
  jit::DType dtype;
  double bound;
  uint64_t firstSeed;
  std::vector<Case> cases;
};

/// Bounds on the relative error against the float64 reference. The forward
/// of a float32 kernel is within 1e-5; its gradients within 1e-4 (DPFP's
/// gradient amplifies the rounding of the projections: JitBackwardTest.cpp).
constexpr double kForwardF32Bound = 1e-5;
constexpr double kForwardF64Bound = 1e-10;
constexpr double kBackwardF32Bound = 1e-4;
/// 16-bit storage: the kernel computes in float32 (within kForwardF32Bound
/// of the reference on the same, already rounded, inputs) and rounds each
/// output once to nearest: at most half a unit in the last place, 2^-8 of
/// |y| for bf16 (8 significant bits) and 2^-11 for f16 (11 bits). So the
/// error is within u + (1 + u) kForwardF32Bound of max |y|.
constexpr double kForwardBf16Bound = 1.0 / 256 + 1.01 * kForwardF32Bound;
constexpr double kForwardF16Bound = 1.0 / 2048 + 1.01 * kForwardF32Bound;
constexpr double kBackwardF64Bound = 1e-9;

inline const std::vector<CaseList> &forwardCaseLists() {
  using jit::DType;
  using jit::Rule;
  constexpr uint64_t seed = 100;
  // bf16 and f16 storage: both rules, T = 1, T < C, T not a multiple of C,
  // nu 1 to 3, several heads, zero keys, the default chunk.
  static const std::vector<Case> sixteenBitCases = {
      {Rule::Delta, 1, 4, 1, 8, 1, 1},
      {Rule::Delta, 2, 16, 2, 8, 7, 1},
      {Rule::Delta, 3, 4, 3, 8, 35, 2, {0, 8, 34}},
      {Rule::Sum, 4, 4, 2, 16, 67, 2},
      {Rule::Delta, 4, 16, 2, 64, 259, 2},
      {Rule::Sum, 2, 64, 1, 64, 130, 3}};
  static const std::vector<CaseList> lists = {
      // C = 8: T = 1, T < C, T a multiple of C, T not a multiple, T = 4C + 3.
      {"DeltaRuleSmallChunks",
       DType::F32,
       kForwardF32Bound,
       seed,
       {{Rule::Delta, 1, 4, 1, 8, 1, 1},
        {Rule::Delta, 1, 4, 1, 8, 5, 2},
        {Rule::Delta, 1, 4, 1, 8, 16, 2},
        {Rule::Delta, 1, 4, 1, 8, 13, 3},
        {Rule::Delta, 1, 4, 1, 8, 35, 1},
        {Rule::Delta, 2, 16, 2, 8, 1, 3},
        {Rule::Delta, 2, 16, 2, 8, 7, 1},
        {Rule::Delta, 2, 16, 2, 8, 20, 2},
        {Rule::Delta, 2, 16, 2, 8, 35, 3},
        {Rule::Delta, 3, 4, 3, 8, 35, 2},
        {Rule::Delta, 3, 4, 3, 8, 3, 2}}},
      {"SumRule",
       DType::F32,
       kForwardF32Bound,
       seed,
       {{Rule::Sum, 4, 4, 2, 16, 1, 2},
        {Rule::Sum, 4, 4, 2, 16, 9, 3},
        {Rule::Sum, 4, 4, 2, 16, 40, 1},
        {Rule::Sum, 4, 4, 2, 16, 67, 2},
        {Rule::Sum, 5, 16, 3, 8, 35, 1},
        {Rule::Sum, 5, 16, 3, 8, 6, 3},
        {Rule::Sum, 1, 64, 1, 16, 67, 2},
        {Rule::Sum, 1, 64, 1, 16, 1, 1},
        {Rule::Sum, 7, 4, 1, 8, 35, 2}}},
      {"WideHeads",
       DType::F32,
       kForwardF32Bound,
       seed,
       {{Rule::Delta, 1, 64, 3, 16, 67, 1},
        {Rule::Delta, 1, 64, 3, 16, 5, 2},
        {Rule::Delta, 1, 64, 3, 16, 30, 3},
        {Rule::Delta, 2, 64, 2, 16, 17, 2}}},
      {"ManyHeads",
       DType::F32,
       kForwardF32Bound,
       seed,
       {{Rule::Delta, 8, 4, 2, 16, 67, 3},
        {Rule::Delta, 8, 4, 2, 16, 1, 1},
        {Rule::Delta, 8, 4, 2, 16, 33, 2},
        {Rule::Delta, 6, 16, 1, 16, 50, 2}}},
      // The default chunk size, 64.
      {"DefaultChunkSize",
       DType::F32,
       kForwardF32Bound,
       seed,
       {{Rule::Delta, 4, 16, 2, 64, 1, 1},
        {Rule::Delta, 4, 16, 2, 64, 40, 2},
        {Rule::Delta, 4, 16, 2, 64, 100, 1},
        {Rule::Delta, 4, 16, 2, 64, 259, 2},
        {Rule::Sum, 2, 64, 1, 64, 259, 1},
        {Rule::Sum, 2, 64, 1, 64, 130, 3}}},
      // A by 16 x 16 blocks: two blocks (C = 32) and three (C = 48), T not
      // a multiple of C, zero keys inside the blocks.
      {"BlockInverse",
       DType::F32,
       kForwardF32Bound,
       seed,
       {{Rule::Delta, 2, 16, 2, 32, 70, 2},
        {Rule::Delta, 3, 4, 3, 48, 100, 1, {5, 47, 48}},
        {Rule::Delta, 1, 64, 1, 32, 33, 3}}},
      // All-zero x rows give zero keys: such a step must write nothing. Zero
      // steps at the start, on chunk boundaries, inside chunks and at the
      // end; for every batch row or for one only.
      {"ZeroKeySteps",
       DType::F32,
       kForwardF32Bound,
       seed,
       {{Rule::Delta, 2, 4, 2, 8, 35, 2, {0, 7, 8, 9, 20, 34}},
        {Rule::Delta, 2, 4, 2, 8, 12, 3, {1, 2, 3, 4, 5}, 1},
        {Rule::Sum, 2, 4, 2, 8, 19, 2, {0, 8, 18}, 0},
        {Rule::Delta, 2, 4, 2, 8, 3, 1, {0, 1, 2}}}},
      {"Bfloat16Storage", DType::BF16, kForwardBf16Bound, seed,
       sixteenBitCases},
      {"Float16Storage", DType::F16, kForwardF16Bound, seed, sixteenBitCases},
      {"Float64MatchesReference",
       DType::F64,
       kForwardF64Bound,
       seed,
       {{Rule::Delta, 2, 4, 3, 8, 35, 2, {3, 8, 34}},
        {Rule::Delta, 2, 4, 3, 8, 1, 1},
        {Rule::Sum, 3, 16, 1, 16, 67, 3},
        {Rule::Delta, 1, 64, 2, 64, 259, 1},
        {Rule::Delta, 1, 64, 2, 64, 10, 2}}},
  };
  return lists;
}

inline const std::vector<CaseList> &backwardCaseLists() {
  using jit::DType;
  using jit::Rule;
  constexpr uint64_t seed = 300;
  static const std::vector<CaseList> lists = {
      // C = 8: T = 1, T < C, T a multiple of C, T not a multiple, T = 4C + 3.
      {"DeltaRuleSmallChunks",
       DType::F32,
       kBackwardF32Bound,
       seed,
       {{Rule::Delta, 1, 4, 1, 8, 1, 1},
        {Rule::Delta, 1, 4, 1, 8, 5, 2},
        {Rule::Delta, 1, 4, 1, 8, 16, 2},
        {Rule::Delta, 1, 4, 1, 8, 13, 3},
        {Rule::Delta, 1, 4, 1, 8, 35, 1},
        {Rule::Delta, 2, 16, 2, 8, 1, 3},
        {Rule::Delta, 2, 16, 2, 8, 7, 1},
        {Rule::Delta, 2, 16, 2, 8, 35, 2},
        {Rule::Delta, 3, 4, 3, 8, 35, 2},
        {Rule::Delta, 3, 4, 3, 8, 3, 3}}},
      {"SumRule",
       DType::F32,
       kBackwardF32Bound,
       seed,
       {{Rule::Sum, 4, 4, 2, 16, 1, 2},
        {Rule::Sum, 4, 4, 2, 16, 9, 3},
        {Rule::Sum, 4, 4, 2, 16, 67, 1},
        {Rule::Sum, 5, 16, 3, 8, 35, 1},
        {Rule::Sum, 5, 16, 3, 8, 6, 2},
        {Rule::Sum, 1, 64, 1, 16, 67, 2},
        {Rule::Sum, 1, 64, 1, 16, 1, 1}}},
      {"WideHeads",
       DType::F32,
       kBackwardF32Bound,
       seed,
       {{Rule::Delta, 1, 64, 3, 16, 67, 1},
        {Rule::Delta, 1, 64, 3, 16, 5, 2},
        {Rule::Delta, 2, 64, 2, 16, 17, 1}}},
      {"ManyHeads",
       DType::F32,
       kBackwardF32Bound,
       seed,
       {{Rule::Delta, 8, 4, 2, 16, 67, 3},
        {Rule::Delta, 8, 4, 2, 16, 1, 1},
        {Rule::Delta, 8, 4, 2, 16, 32, 2},
        {Rule::Delta, 6, 16, 1, 16, 50, 2},
        {Rule::Sum, 7, 4, 1, 8, 35, 2}}},
      // The default chunk size, 64.
      {"DefaultChunkSize",
       DType::F32,
       kBackwardF32Bound,
       seed,
       {{Rule::Delta, 4, 16, 2, 64, 1, 1},
        {Rule::Delta, 4, 16, 2, 64, 40, 2},
        {Rule::Delta, 4, 16, 2, 64, 259, 1}}},
      // All-zero x rows give zero keys: such a step writes nothing. Zero
      // steps at the start, on chunk boundaries, inside chunks and at the
      // end; for every batch row or for one only.
      {"ZeroKeySteps",
       DType::F32,
       kBackwardF32Bound,
       seed,
       {{Rule::Delta, 2, 4, 2, 8, 35, 2, {0, 7, 8, 9, 20, 34}},
        {Rule::Delta, 2, 4, 2, 8, 12, 3, {1, 2, 3, 4, 5}, 1},
        {Rule::Sum, 2, 4, 2, 8, 19, 2, {0, 8, 18}, 0},
        {Rule::Delta, 2, 4, 2, 8, 3, 1, {0, 1, 2}}}},
      {"Float64MatchesReference",
       DType::F64,
       kBackwardF64Bound,
       seed,
       {{Rule::Delta, 2, 4, 3, 8, 35, 2, {3, 8, 34}},
        {Rule::Delta, 2, 4, 3, 8, 1, 1},
        {Rule::Sum, 3, 16, 1, 16, 67, 3},
        {Rule::Sum, 3, 16, 1, 16, 5, 1, {2}},
        {Rule::Delta, 1, 64, 2, 64, 259, 1},
        {Rule::Delta, 1, 64, 2, 64, 10, 2}}},
  };
  return lists;
}

/// The list named `test` of `lists`; throws std::out_of_range if none is.
inline const CaseList &caseList(const std::vector<CaseList> &lists,
                                const std::string &test) {
  for (const CaseList &list : lists)
    if (list.test == test)
      return list;
  throw std::out_of_range("no case list named " + test);
}

} // namespace fwp::test

#endif // FWP_TEST_UNIT_ATTENTIONCASES_H
