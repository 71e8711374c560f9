//===- CpuScanGradTest.cpp - Compiled fwp.scan(_grad) vs the reference ----===//
//
// One fwp.scan and one fwp.scan_grad, JIT-compiled alone through fwp-to-cpu
// (lib/JIT/ScanKernelForTesting.h), against fwp::ref::scan and
// fwp::ref::scanBackward in float64. This checks the chunked kernels of
// lib/Transforms/ScanForward.cpp and ScanBackward.cpp directly, without the
// projections and the output layer of the module around them.
//
// Relative error, per output: max_i |g_i - gref_i| / max_i |gref_i|. Bounds:
// 1e-10 in float64, 1e-5 in float32. The float64 dq and dk of small d
// (d_in = 2) reach 1e-11: their gradients nearly cancel, and the reference
// forms DPFP's backward as a difference of nearly equal terms.
//
// With DPFP fused into the scans, the kernels get raw q and k and the
// reference gets dpfp(q), dpfp(k); the reference's feature gradients are
// taken back through fwp::ref::dpfpBackward. Unfused, both get the same
// DPFP features (realistic keys: non-negative, summing to at most 1).
//
// Cases sharing a compiled scan (rule, DPFP, sizes, chunk, optional
// operands) sit together: T, B and H are dynamic, so one compilation serves
// every sequence length, batch and head count.
//
//===----------------------------------------------------------------------===//

#include "ScanKernelForTesting.h"
#include "TestUtils.h"

#include "fwp/Reference/Reference.h"
#include "fwp/Runtime/ElementType.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using fwp::jit::DType;
using fwp::jit::Rule;
using fwp::jit::testing::CompiledScan;
using fwp::jit::testing::ScanKernelDesc;
using fwp::test::randomValues;
using fwp::test::relativeError;

namespace {

/// Sizes of one run of a compiled scan. zeroSteps are steps whose keys are
/// all zero in every (batch, head) row, or only in row (zeroBatch,
/// zeroHead) if zeroBatch >= 0; a zero key writes nothing.
struct Run {
  int64_t seqLen, batch, heads;
  std::vector<int64_t> zeroSteps = {};
  int64_t zeroBatch = -1, zeroHead = 0;
  /// Gives every raw q and k row alternating signs, + - + - ...: with
  /// nu = 1, DPFP then has a single nonzero product, x[0] x[2d-1].
  bool singleProduct = false;

  std::string name() const {
    std::string s = "T=" + std::to_string(seqLen) +
                    " B=" + std::to_string(batch) +
                    " H=" + std::to_string(heads);
    if (!zeroSteps.empty())
      s += " zero-key-steps=" + std::to_string(zeroSteps.size());
    if (singleProduct)
      s += " single-product";
    return s;
  }
};

std::string describe(const ScanKernelDesc &d) {
  std::string s = std::string(fwp::dtypeName(d.dtype)) + " " + ruleName(d.rule);
  s += d.nu > 0 ? " dpfp nu=" + std::to_string(d.nu) : " features";
  s += " d_in=" + std::to_string(d.dInput) +
       " d_v=" + std::to_string(d.dValue) + " C=" + std::to_string(d.chunkSize);
  if (d.initial)
    s += " initial";
  if (d.dFinalState)
    s += " d_final";
  return s;
}

/// `v` as a buffer of `dtype` holds it.
double roundTo(DType dtype, double v) {
  switch (dtype) {
  case DType::F32:
    return static_cast<float>(v);
  case DType::BF16:
    return fwp::rt::fromBf16(fwp::rt::toBf16(static_cast<float>(v)));
  case DType::F16:
    return fwp::rt::fromF16(fwp::rt::toF16(static_cast<float>(v)));
  default:
    return v;
  }
}

/// `values` rounded to `dtype`, so that the reference reads exactly what
/// the kernel does.
std::vector<double> rounded(DType dtype, std::vector<double> values) {
  for (double &v : values)
    v = roundTo(dtype, v);
  return values;
}

/// Everything one run reads, and the reference's answers.
struct Problem {
  fwp::ref::ScanShape shape;
  // What the kernel reads: q, k raw (fused DPFP) or features.
  std::vector<double> q, k, v, beta, initial, dy, dFinal;
  fwp::ref::ScanOutputs ref;
  fwp::ref::ScanGradients refGrad; // q, k with respect to what the kernel read
};

/// Applies `f` to every [*, width] row of `in`, giving [*, outWidth] rows.
template <typename F>
std::vector<double> mapRows(const std::vector<double> &in, size_t width,
                            size_t outWidth, F f) {
  std::vector<double> out;
  out.reserve(in.size() / width * outWidth);
  for (size_t r = 0; r < in.size() / width; ++r) {
    std::vector<double> row(in.begin() + r * width,
                            in.begin() + (r + 1) * width);
    std::vector<double> mapped = f(r, row);
    EXPECT_EQ(mapped.size(), outWidth);
    out.insert(out.end(), mapped.begin(), mapped.end());
  }
  return out;
}

Problem makeProblem(const ScanKernelDesc &d, const Run &run, uint64_t seed) {
  Problem p;
  fwp::ref::Rule rule =
      d.rule == Rule::Delta ? fwp::ref::Rule::Delta : fwp::ref::Rule::Sum;
  size_t rows = run.seqLen * run.batch * run.heads;
  // Raw vectors: of the kernel's width when fused, of a width that gives
  // features of dInput values (dInput = 2 * raw * nu) when not.
  int64_t rawNu = d.nu > 0 ? d.nu : 1;
  int64_t raw = d.nu > 0 ? d.dInput : d.dInput / 2;
  EXPECT_EQ(d.nu > 0 || d.dInput % 2 == 0, true);
  auto values = [&](size_t n, uint64_t s, double scale) {
    return rounded(d.dtype, randomValues(n, s, scale));
  };
  std::vector<double> rawQ = values(rows * raw, seed, 1.0);
  std::vector<double> rawK = values(rows * raw, seed + 1, 1.0);
  for (int64_t t : run.zeroSteps)
    for (int64_t b = 0; b < run.batch; ++b)
      for (int64_t h = 0; h < run.heads; ++h)
        if (run.zeroBatch < 0 || (run.zeroBatch == b && run.zeroHead == h))
          std::fill_n(rawK.begin() +
                          ((t * run.batch + b) * run.heads + h) * raw,
                      raw, 0.0);
  if (run.singleProduct)
    for (std::vector<double> *rawRows : {&rawQ, &rawK})
      for (size_t i = 0; i < rawRows->size(); ++i)
        (*rawRows)[i] = (i % raw) % 2 == 0 ? std::abs((*rawRows)[i])
                                           : -std::abs((*rawRows)[i]);
  int64_t dFeature = 2 * raw * rawNu;
  auto features = [&](size_t, const std::vector<double> &row) {
    return fwp::ref::dpfp(row, rawNu, d.eps);
  };
  std::vector<double> qf = mapRows(rawQ, raw, dFeature, features);
  std::vector<double> kf = mapRows(rawK, raw, dFeature, features);
  if (d.nu == 0) {
    qf = rounded(d.dtype, qf);
    kf = rounded(d.dtype, kf);
  }
  p.q = d.nu > 0 ? rawQ : qf;
  p.k = d.nu > 0 ? rawK : kf;

  p.shape = {run.seqLen, run.batch, run.heads, dFeature, d.dValue};
  p.v = values(rows * d.dValue, seed + 2, 1.0);
  if (d.rule == Rule::Delta) {
    p.beta = randomValues(rows, seed + 3, 3.0);
    for (double &b : p.beta)
      b = roundTo(d.dtype, 1.0 / (1.0 + std::exp(-b)));
  }
  size_t states = run.batch * run.heads * d.dValue * dFeature;
  if (d.initial)
    p.initial = values(states, seed + 4, 1.0);
  p.dy = values(rows * d.dValue, seed + 5, 1.0);
  if (d.dFinalState)
    p.dFinal = values(states, seed + 6, 1.0);

  fwp::ref::ScanInputs in{qf, kf, p.v, p.beta, p.initial};
  p.ref = fwp::ref::scan(rule, p.shape, in);
  p.refGrad = fwp::ref::scanBackward(rule, p.shape, in, p.dy, p.dFinal);
  if (p.refGrad.initialState.empty())
    p.refGrad.initialState.assign(states, 0.0);
  if (d.nu > 0) {
    auto back = [&](const std::vector<double> &rawRows,
                    const std::vector<double> &featureGrad) {
      return mapRows(
          rawRows, raw, raw, [&](size_t r, const std::vector<double> &row) {
            std::vector<double> g(featureGrad.begin() + r * dFeature,
                                  featureGrad.begin() + (r + 1) * dFeature);
            return fwp::ref::dpfpBackward(row, g, d.nu, d.eps);
          });
    };
    p.refGrad.q = back(rawQ, p.refGrad.q);
    p.refGrad.k = back(rawK, p.refGrad.k);
  }
  return p;
}

/// How a kernel's buffers hold their elements: as T (float, double) or as
/// the bits of a 16-bit float.
template <typename T> struct Storage {
  static T store(double v) { return static_cast<T>(v); }
  static double load(T v) { return v; }
};
struct Bf16 {
  static uint16_t store(double v) {
    return fwp::rt::toBf16(static_cast<float>(v));
  }
  static double load(uint16_t v) { return fwp::rt::fromBf16(v); }
};
struct F16 {
  static uint16_t store(double v) {
    return fwp::rt::toF16(static_cast<float>(v));
  }
  static double load(uint16_t v) { return fwp::rt::fromF16(v); }
};

/// Runs `kernel` on `p` with buffers of T (held as `Held` says) and returns
/// every output as doubles, in the order y, final state, dq, dk, dv, dbeta
/// (delta only), d_initial.
template <typename T, typename Held = Storage<T>>
std::vector<std::vector<double>> runKernel(const CompiledScan &kernel,
                                           const ScanKernelDesc &d,
                                           const Run &run, const Problem &p) {
  auto cast = [](const std::vector<double> &v) {
    std::vector<T> held;
    for (double e : v)
      held.push_back(Held::store(e));
    return held;
  };
  auto data = [](std::vector<T> &v) { return v.empty() ? nullptr : v.data(); };
  // Outputs start at a value that must be overwritten.
  auto output = [](size_t n) { return std::vector<T>(n, Held::store(-7)); };
  size_t rows = run.seqLen * run.batch * run.heads;
  size_t states = run.batch * run.heads * d.dValue * p.shape.dFeature;
  std::vector<T> q = cast(p.q), k = cast(p.k), v = cast(p.v),
                 beta = cast(p.beta), initial = cast(p.initial),
                 dy = cast(p.dy), dFinal = cast(p.dFinal);
  std::vector<T> y = output(rows * d.dValue), finalState = output(states);
  kernel.forward(run.seqLen, run.batch, run.heads, q.data(), k.data(), v.data(),
                 data(beta), data(initial), y.data(), finalState.data());
  std::vector<T> dq = output(q.size()), dk = output(k.size()),
                 dv = output(v.size()), dbeta = output(beta.size()),
                 dInitial = output(states);
  kernel.backward(run.seqLen, run.batch, run.heads, q.data(), k.data(),
                  v.data(), data(beta), data(initial), dy.data(), data(dFinal),
                  dq.data(), dk.data(), dv.data(), data(dbeta),
                  dInitial.data());
  std::vector<std::vector<double>> out;
  std::vector<const std::vector<T> *> outputs = {&y, &finalState, &dq, &dk,
                                                 &dv};
  if (d.rule == Rule::Delta)
    outputs.push_back(&dbeta);
  outputs.push_back(&dInitial);
  for (const std::vector<T> *o : outputs) {
    out.emplace_back();
    for (T e : *o)
      out.back().push_back(Held::load(e));
  }
  return out;
}

/// Compiles `d` once and checks every run; prints each error.
void checkRuns(const ScanKernelDesc &d, const std::vector<Run> &runs,
               double bound) {
  SCOPED_TRACE(describe(d));
  std::unique_ptr<CompiledScan> kernel = fwp::jit::testing::compileScan(d);
  std::printf("[ compile  ] %s: %.3f s\n", describe(d).c_str(),
              kernel->compileSeconds);
  double worst = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run &run = runs[i];
    SCOPED_TRACE(run.name());
    Problem p = makeProblem(d, run, 1000 + 17 * i);
    std::vector<std::vector<double>> got;
    switch (d.dtype) {
    case DType::F32:
      got = runKernel<float>(*kernel, d, run, p);
      break;
    case DType::BF16:
      got = runKernel<uint16_t, Bf16>(*kernel, d, run, p);
      break;
    case DType::F16:
      got = runKernel<uint16_t, F16>(*kernel, d, run, p);
      break;
    default:
      got = runKernel<double>(*kernel, d, run, p);
    }
    std::vector<std::pair<const char *, const std::vector<double> *>> refs = {
        {"y", &p.ref.y},
        {"final_state", &p.ref.finalState},
        {"dq", &p.refGrad.q},
        {"dk", &p.refGrad.k},
        {"dv", &p.refGrad.v}};
    if (d.rule == Rule::Delta)
      refs.push_back({"dbeta", &p.refGrad.beta});
    refs.push_back({"d_initial", &p.refGrad.initialState});
    std::string line;
    for (size_t o = 0; o < refs.size(); ++o) {
      double err = relativeError(got[o], *refs[o].second);
      EXPECT_LE(err, bound) << refs[o].first;
      char buf[64];
      std::snprintf(buf, sizeof buf, " %s %.2g", refs[o].first, err);
      line += buf;
      worst = std::max(worst, err);
    }
    std::printf("[ relerr   ] %s %s:%s\n", describe(d).c_str(),
                run.name().c_str(), line.c_str());
  }
  ::testing::Test::RecordProperty("max_relative_error", std::to_string(worst));
}

ScanKernelDesc desc(Rule rule, int64_t nu, int64_t dInput, int64_t dValue,
                    int64_t chunk, bool initial, bool dFinal) {
  ScanKernelDesc d;
  d.rule = rule;
  d.nu = nu;
  d.dInput = dInput;
  d.dValue = dValue;
  d.chunkSize = chunk;
  d.initial = initial;
  d.dFinalState = dFinal;
  return d;
}

constexpr double kF64Bound = 1e-10;

// C = 4: T = 1, T < C, T = C, T not a multiple of C (11), several chunks.
const std::vector<Run> kLengths = {
    {1, 1, 1}, {3, 2, 1}, {4, 1, 2}, {11, 2, 3}, {19, 3, 2}};

// Zero keys at the start, on chunk boundaries, inside chunks, at the end;
// in every row or in one (batch, head) only.
const std::vector<Run> kZeroKeys = {{11, 2, 2, {0, 3, 4, 5, 10}},
                                    {11, 2, 3, {1, 2, 7}, 1, 2},
                                    {3, 1, 1, {0, 1, 2}}};

std::vector<Run> allRuns() {
  std::vector<Run> runs = kLengths;
  runs.insert(runs.end(), kZeroKeys.begin(), kZeroKeys.end());
  return runs;
}

//===----------------------------------------------------------------------===//
// Delta rule
//===----------------------------------------------------------------------===//

TEST(CpuScanGradTest, DeltaDpfpNu1) {
  checkRuns(desc(Rule::Delta, 1, 4, 3, 4, false, false), allRuns(), kF64Bound);
}

TEST(CpuScanGradTest, DeltaDpfpNu2InitialAndFinal) {
  checkRuns(desc(Rule::Delta, 2, 3, 5, 4, true, true), allRuns(), kF64Bound);
}

TEST(CpuScanGradTest, DeltaDpfpNu3Initial) {
  checkRuns(desc(Rule::Delta, 3, 3, 2, 4, true, false), kLengths, kF64Bound);
}

TEST(CpuScanGradTest, DeltaDpfpNu2FinalOnly) {
  checkRuns(desc(Rule::Delta, 2, 2, 3, 4, false, true), kLengths, kF64Bound);
}

TEST(CpuScanGradTest, DeltaFeatures) {
  checkRuns(desc(Rule::Delta, 0, 8, 3, 4, false, false), allRuns(), kF64Bound);
}

TEST(CpuScanGradTest, DeltaFeaturesInitialAndFinal) {
  checkRuns(desc(Rule::Delta, 0, 6, 4, 4, true, true), allRuns(), kF64Bound);
}

// One step per chunk, and one chunk longer than every sequence.
TEST(CpuScanGradTest, DeltaChunkSizes) {
  checkRuns(desc(Rule::Delta, 2, 2, 3, 1, true, true), kLengths, kF64Bound);
  checkRuns(desc(Rule::Delta, 1, 3, 2, 64, true, true), kLengths, kF64Bound);
}

// Values wider than the features, chunks narrower than both; and a wide
// head over many chunks.
TEST(CpuScanGradTest, DeltaShapes) {
  checkRuns(desc(Rule::Delta, 0, 4, 7, 3, true, true), kLengths, kF64Bound);
  checkRuns(desc(Rule::Delta, 1, 16, 16, 8, true, true),
            {{35, 2, 2}, {8, 1, 1}, {13, 1, 3, {0, 8, 9}}}, kF64Bound);
}

// The CPU pipeline's blocking: C = 64 (A by 16 x 16 blocks, products by
// causal row blocks of 16), whole chunks beside a partial one, and 128 value
// columns in two value blocks of 64 (scan_state, scan_state_grad).
TEST(CpuScanGradTest, DeltaBlocked) {
  checkRuns(desc(Rule::Delta, 1, 4, 128, 64, true, true),
            {{130, 1, 2, {3, 64, 100}}, {64, 2, 1}}, kF64Bound);
}

//===----------------------------------------------------------------------===//
// Sum rule
//===----------------------------------------------------------------------===//

TEST(CpuScanGradTest, SumDpfpNu1) {
  checkRuns(desc(Rule::Sum, 1, 4, 3, 4, false, false), allRuns(), kF64Bound);
}

TEST(CpuScanGradTest, SumDpfpNu2InitialAndFinal) {
  checkRuns(desc(Rule::Sum, 2, 3, 5, 4, true, true), allRuns(), kF64Bound);
}

TEST(CpuScanGradTest, SumDpfpNu3Final) {
  checkRuns(desc(Rule::Sum, 3, 3, 2, 4, false, true), kLengths, kF64Bound);
}

TEST(CpuScanGradTest, SumFeatures) {
  checkRuns(desc(Rule::Sum, 0, 8, 3, 4, true, false), allRuns(), kF64Bound);
}

TEST(CpuScanGradTest, SumChunkSizes) {
  checkRuns(desc(Rule::Sum, 1, 3, 2, 1, true, true), kLengths, kF64Bound);
  checkRuns(desc(Rule::Sum, 0, 4, 2, 64, true, true), kLengths, kF64Bound);
}

TEST(CpuScanGradTest, SumShapes) {
  checkRuns(desc(Rule::Sum, 0, 4, 7, 3, true, true), kLengths, kF64Bound);
  checkRuns(desc(Rule::Sum, 1, 16, 16, 8, false, true),
            {{35, 2, 2}, {8, 1, 1}, {13, 1, 3, {0, 8, 9}}}, kF64Bound);
}

TEST(CpuScanGradTest, SumBlocked) {
  checkRuns(desc(Rule::Sum, 1, 4, 128, 64, true, true),
            {{130, 1, 2, {3, 64, 100}}, {64, 2, 1}}, kF64Bound);
}

//===----------------------------------------------------------------------===//
// Float32
//===----------------------------------------------------------------------===//

// DPFP's backward where a single product is nonzero: dL/dphi' then is
// g eps / s^2, which must not be formed as the difference of two terms that
// agree to all but log10(s / eps) digits (float32 kernels were off by up to
// 1e-2). The kernels read the same raw q and k as the reference, so nothing
// else limits the accuracy.
TEST(CpuScanGradTest, Float32SingleProducts) {
  for (Rule rule : {Rule::Delta, Rule::Sum}) {
    ScanKernelDesc d = desc(rule, 1, 4, 4, 4, false, false);
    d.dtype = DType::F32;
    checkRuns(d,
              {{1, 1, 1, {}, -1, 0, true},
               {11, 3, 4, {}, -1, 0, true},
               {19, 2, 3, {4, 8}, -1, 0, true},
               {11, 3, 4}},
              1e-5);
  }
}

TEST(CpuScanGradTest, Float32) {
  for (Rule rule : {Rule::Delta, Rule::Sum}) {
    ScanKernelDesc d = desc(rule, 2, 4, 4, 4, true, true);
    d.dtype = DType::F32;
    checkRuns(d, {{11, 2, 2, {5}}, {19, 1, 3}}, 1e-5);
  }
}

//===----------------------------------------------------------------------===//
// 16-bit storage
//===----------------------------------------------------------------------===//

// bf16 and f16 inputs and outputs, float32 arithmetic: the reference runs on
// the rounded inputs, and each output is rounded once from float32, so it is
// within half a unit in the last place (2^-8 of the largest for bf16's 8
// significant bits, 2^-11 for f16's 11) plus the float32 bound. Intermediates
// rounded to 16 bits would miss it by far. Both rules, with and without
// DPFP (the delta rule's key gradients then summed in f32 and rounded once),
// initial and final states, chunks of 4 and the blocked C = 64.
TEST(CpuScanGradTest, SixteenBitStorage) {
  for (auto [dtype, unit] :
       {std::pair{DType::BF16, 1.0 / 256}, std::pair{DType::F16, 1.0 / 2048}}) {
    double bound = unit + 1.01e-5;
    ScanKernelDesc delta = desc(Rule::Delta, 2, 3, 5, 4, true, true);
    ScanKernelDesc sum = desc(Rule::Sum, 0, 6, 4, 4, true, true);
    for (ScanKernelDesc *d : {&delta, &sum}) {
      d->dtype = dtype;
      checkRuns(*d, {{11, 2, 2, {5}}, {19, 1, 3}}, bound);
    }
  }
  ScanKernelDesc features = desc(Rule::Delta, 0, 8, 128, 64, false, true);
  features.dtype = DType::BF16;
  checkRuns(features, {{130, 1, 2, {3, 64, 100}}}, 1.0 / 256 + 1.01e-5);
}

} // namespace

// fwp.dpfp maps that are not fused into a scan are lowered on their own
// (fwp-lower-dpfp): against the reference's DPFP, row by row, zero rows
// included.
TEST(DpfpAloneTest, MatchesReferenceRowByRow) {
  for (int64_t d : {1, 2, 3, 5})
    for (int64_t nu = 1; nu <= std::min<int64_t>(3, 2 * d - 1); ++nu) {
      SCOPED_TRACE("d=" + std::to_string(d) + " nu=" + std::to_string(nu));
      double eps = 1e-3;
      auto kernel = fwp::jit::testing::compileDpfp(d, nu, eps, DType::F64);
      int64_t rows = 7, dFeature = 2 * d * nu;
      std::vector<double> k =
          fwp::test::randomValues(rows * d, 40 + d * 10 + nu, 1.0);
      std::fill_n(k.begin() + 3 * d, d, 0.0); // a zero key: phi' = 0
      std::vector<double> features(rows * dFeature, -7.0);
      kernel->run(rows, k.data(), features.data());
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<double> row(k.begin() + r * d, k.begin() + (r + 1) * d);
        std::vector<double> expected = fwp::ref::dpfp(row, nu, eps);
        for (int64_t f = 0; f < dFeature; ++f)
          EXPECT_NEAR(features[r * dFeature + f], expected[f], 1e-14)
              << "row " << r << " feature " << f;
      }
    }
}
