//===- CpuBackendTest.cpp - The JIT-compiled CPU forward vs the reference -===//
//
// Relative error, throughout: max_i |y_i - yref_i| / max_i |yref_i|, with
// yref from the float64 reference (fwp::ref::attention) run on exactly the
// values the kernel gets (float32 inputs are rounded first), so that only
// the kernel's arithmetic is measured.
//
// The cases cover every value of each axis (sequence length against the
// chunk size, d_k, nu, heads, batch, rule, zero-key steps) without running
// the cross product. Cases sharing a kernel description sit in the same test
// so that, each test being its own process under ctest, the cache compiles
// it once.
//
//===----------------------------------------------------------------------===//

#include "BackendUnderTest.h"

#include "fwp/JIT/JIT.h"
#include "fwp/Reference/Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

using fwp::jit::CompiledAttention;
using fwp::jit::DType;
using fwp::jit::KernelDesc;
using fwp::jit::Rule;

namespace {

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

/// One forward to check. zeroSteps are steps t whose x rows are all zero
/// (every batch row, or only row zeroBatch if it is >= 0): a zero key
/// writes nothing to the fast weights.
struct Case {
  Rule rule;
  int64_t heads, dHead, nu, chunk;
  int64_t seqLen, batch;
  std::vector<int64_t> zeroSteps = {};
  int64_t zeroBatch = -1;

  KernelDesc desc(DType dtype) const {
    KernelDesc d;
    d.rule = rule;
    d.heads = heads;
    d.dHead = dHead;
    d.nu = nu;
    d.chunkSize = chunk;
    d.dtype = dtype;
    d.backend = fwp::test::kBackend;
    return d;
  }

  std::string name() const {
    std::string s = rule == Rule::Delta ? "delta" : "sum";
    s += " H=" + std::to_string(heads) + " dk=" + std::to_string(dHead) +
         " nu=" + std::to_string(nu) + " C=" + std::to_string(chunk) +
         " T=" + std::to_string(seqLen) + " B=" + std::to_string(batch);
    if (!zeroSteps.empty())
      s += " zero-steps=" + std::to_string(zeroSteps.size());
    return s;
  }
};

struct Problem {
  fwp::ref::AttentionConfig config;
  fwp::ref::AttentionShape shape;
  std::vector<double> x;
  fwp::ref::AttentionParams params;
};

std::vector<double> randomValues(int64_t n, uint64_t seed, double scale,
                                 DType dtype) {
  Lcg rng(seed);
  std::vector<double> v(n);
  for (double &e : v) {
    e = rng.next(scale);
    if (dtype == DType::F32)
      e = static_cast<float>(e); // what the float32 kernel will read
  }
  return v;
}

Problem makeProblem(const Case &c, DType dtype, uint64_t seed) {
  Problem p;
  p.config.heads = c.heads;
  p.config.nu = c.nu;
  p.config.rule =
      c.rule == Rule::Delta ? fwp::ref::Rule::Delta : fwp::ref::Rule::Sum;
  int64_t dm = c.heads * c.dHead;
  p.shape = {c.seqLen, c.batch, dm};
  p.x = randomValues(c.seqLen * c.batch * dm, seed, 1.0, dtype);
  for (int64_t t : c.zeroSteps)
    for (int64_t b = 0; b < c.batch; ++b)
      if (c.zeroBatch < 0 || c.zeroBatch == b)
        std::fill_n(p.x.begin() + (t * c.batch + b) * dm, dm, 0.0);
  p.params.wQ = randomValues(dm * dm, seed + 1, 0.5, dtype);
  p.params.wK = randomValues(dm * dm, seed + 2, 0.5, dtype);
  p.params.wV = randomValues(dm * dm, seed + 3, 0.5, dtype);
  p.params.wBeta = randomValues(c.heads * dm, seed + 4, 0.5, dtype);
  p.params.wO = randomValues(dm * dm, seed + 5, 0.5, dtype);
  p.params.bO = randomValues(dm, seed + 6, 0.1, dtype);
  return p;
}

/// Runs `kernel` on `p` in T (float or double) and returns y as doubles.
template <typename T>
std::vector<double> runKernel(const CompiledAttention &kernel,
                              const Problem &p) {
  auto cast = [](const std::vector<double> &v) {
    return std::vector<T>(v.begin(), v.end());
  };
  std::vector<T> x = cast(p.x), wq = cast(p.params.wQ), wk = cast(p.params.wK),
                 wv = cast(p.params.wV), wb = cast(p.params.wBeta),
                 wo = cast(p.params.wO), bo = cast(p.params.bO);
  std::vector<T> y(p.x.size(), T(-7)); // every element must be overwritten
  kernel.forward(p.shape.seqLen, p.shape.batch, x.data(), wq.data(), wk.data(),
                 wv.data(), wb.data(), wo.data(), bo.data(), y.data());
  return std::vector<double>(y.begin(), y.end());
}

double relativeError(const std::vector<double> &y,
                     const std::vector<double> &ref) {
  EXPECT_EQ(y.size(), ref.size());
  double maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < y.size() && i < ref.size(); ++i) {
    maxDiff = std::max(maxDiff, std::abs(y[i] - ref[i]));
    maxRef = std::max(maxRef, std::abs(ref[i]));
    if (std::isnan(y[i]))
      return INFINITY;
  }
  return maxRef > 0 ? maxDiff / maxRef : maxDiff;
}

/// Compiles (through the cache) and checks every case; reports the worst
/// error and the compile time of each kernel compiled here.
void checkCases(const std::vector<Case> &cases, DType dtype, double bound) {
  std::set<const CompiledAttention *> reported;
  double worst = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    SCOPED_TRACE(c.name());
    auto kernel = fwp::jit::compile(c.desc(dtype));
    if (reported.insert(kernel.get()).second)
      std::printf("[ compile  ] %s: %.3f s\n", kernel->desc().str().c_str(),
                  kernel->compileSeconds());
    Problem p = makeProblem(c, dtype, 100 + 10 * i);
    std::vector<double> ref =
        fwp::ref::attention(p.config, p.shape, p.x, p.params).y;
    std::vector<double> y = dtype == DType::F32 ? runKernel<float>(*kernel, p)
                                                : runKernel<double>(*kernel, p);
    double err = relativeError(y, ref);
    std::printf("[ relerr   ] %s %s: %.3g\n",
                dtype == DType::F32 ? "f32" : "f64", c.name().c_str(), err);
    EXPECT_LE(err, bound);
    worst = std::max(worst, err);
  }
  ::testing::Test::RecordProperty("max_relative_error", std::to_string(worst));
}

constexpr double kF32Bound = 1e-5;
constexpr double kF64Bound = 1e-10;

class ForwardTest : public fwp::test::KernelTest {};

//===----------------------------------------------------------------------===//
// Float32 against the float64 reference
//===----------------------------------------------------------------------===//

// C = 8: T = 1, T < C, T a multiple of C, T not a multiple, T = 4C + 3.
TEST_F(ForwardTest, DeltaRuleSmallChunks) {
  checkCases({{Rule::Delta, 1, 4, 1, 8, 1, 1},
              {Rule::Delta, 1, 4, 1, 8, 5, 2},
              {Rule::Delta, 1, 4, 1, 8, 16, 2},
              {Rule::Delta, 1, 4, 1, 8, 13, 3},
              {Rule::Delta, 1, 4, 1, 8, 35, 1},
              {Rule::Delta, 2, 16, 2, 8, 1, 3},
              {Rule::Delta, 2, 16, 2, 8, 7, 1},
              {Rule::Delta, 2, 16, 2, 8, 20, 2},
              {Rule::Delta, 2, 16, 2, 8, 35, 3},
              {Rule::Delta, 3, 4, 3, 8, 35, 2},
              {Rule::Delta, 3, 4, 3, 8, 3, 2}},
             DType::F32, kF32Bound);
}

TEST_F(ForwardTest, SumRule) {
  checkCases({{Rule::Sum, 4, 4, 2, 16, 1, 2},
              {Rule::Sum, 4, 4, 2, 16, 9, 3},
              {Rule::Sum, 4, 4, 2, 16, 40, 1},
              {Rule::Sum, 4, 4, 2, 16, 67, 2},
              {Rule::Sum, 5, 16, 3, 8, 35, 1},
              {Rule::Sum, 5, 16, 3, 8, 6, 3},
              {Rule::Sum, 1, 64, 1, 16, 67, 2},
              {Rule::Sum, 1, 64, 1, 16, 1, 1},
              {Rule::Sum, 7, 4, 1, 8, 35, 2}},
             DType::F32, kF32Bound);
}

TEST_F(ForwardTest, WideHeads) {
  checkCases({{Rule::Delta, 1, 64, 3, 16, 67, 1},
              {Rule::Delta, 1, 64, 3, 16, 5, 2},
              {Rule::Delta, 1, 64, 3, 16, 30, 3},
              {Rule::Delta, 2, 64, 2, 16, 17, 2}},
             DType::F32, kF32Bound);
}

TEST_F(ForwardTest, ManyHeads) {
  checkCases({{Rule::Delta, 8, 4, 2, 16, 67, 3},
              {Rule::Delta, 8, 4, 2, 16, 1, 1},
              {Rule::Delta, 8, 4, 2, 16, 33, 2},
              {Rule::Delta, 6, 16, 1, 16, 50, 2}},
             DType::F32, kF32Bound);
}

// The default chunk size, 64.
TEST_F(ForwardTest, DefaultChunkSize) {
  checkCases({{Rule::Delta, 4, 16, 2, 64, 1, 1},
              {Rule::Delta, 4, 16, 2, 64, 40, 2},
              {Rule::Delta, 4, 16, 2, 64, 100, 1},
              {Rule::Delta, 4, 16, 2, 64, 259, 2},
              {Rule::Sum, 2, 64, 1, 64, 259, 1},
              {Rule::Sum, 2, 64, 1, 64, 130, 3}},
             DType::F32, kF32Bound);
}

// All-zero x rows give zero keys: such a step must write nothing. Zero steps
// at the start, on chunk boundaries, inside chunks and at the end; for every
// batch row or for one only.
TEST_F(ForwardTest, ZeroKeySteps) {
  checkCases({{Rule::Delta, 2, 4, 2, 8, 35, 2, {0, 7, 8, 9, 20, 34}},
              {Rule::Delta, 2, 4, 2, 8, 12, 3, {1, 2, 3, 4, 5}, 1},
              {Rule::Sum, 2, 4, 2, 8, 19, 2, {0, 8, 18}, 0},
              {Rule::Delta, 2, 4, 2, 8, 3, 1, {0, 1, 2}}},
             DType::F32, kF32Bound);
}

//===----------------------------------------------------------------------===//
// Float64 against the float64 reference
//===----------------------------------------------------------------------===//

TEST_F(ForwardTest, Float64MatchesReference) {
  checkCases({{Rule::Delta, 2, 4, 3, 8, 35, 2, {3, 8, 34}},
              {Rule::Delta, 2, 4, 3, 8, 1, 1},
              {Rule::Sum, 3, 16, 1, 16, 67, 3},
              {Rule::Delta, 1, 64, 2, 64, 259, 1},
              {Rule::Delta, 1, 64, 2, 64, 10, 2}},
             DType::F64, kF64Bound);
}

//===----------------------------------------------------------------------===//
// forward() itself
//===----------------------------------------------------------------------===//

Case smallCase() { return {Rule::Delta, 2, 4, 2, 8, 11, 2, {4}}; }

TEST_F(ForwardTest, LeavesInputsAlone) {
  Case c = smallCase();
  auto kernel = fwp::jit::compile(c.desc(DType::F64));
  Problem p = makeProblem(c, DType::F64, 7);
  Problem copy = p;
  runKernel<double>(*kernel, p);
  EXPECT_EQ(p.x, copy.x);
  EXPECT_EQ(p.params.wQ, copy.params.wQ);
  EXPECT_EQ(p.params.wBeta, copy.params.wBeta);
  EXPECT_EQ(p.params.bO, copy.params.bO);
}

TEST_F(ForwardTest, ConcurrentCallsAgree) {
  Case c = smallCase();
  auto kernel = fwp::jit::compile(c.desc(DType::F32));
  Problem p = makeProblem(c, DType::F32, 8);
  std::vector<double> expected = runKernel<float>(*kernel, p);
  std::vector<std::vector<double>> results(8);
  std::vector<std::thread> threads;
  for (auto &r : results)
    threads.emplace_back([&] { r = runKernel<float>(*kernel, p); });
  for (std::thread &t : threads)
    t.join();
  for (const auto &r : results)
    EXPECT_EQ(r, expected);
}

TEST_F(ForwardTest, EmptySequenceOrBatchDoesNothing) {
  auto kernel = fwp::jit::compile(smallCase().desc(DType::F32));
  // Nothing is read or written: null buffers are fine.
  const float *none = nullptr;
  kernel->forward(0, 3, none, none, none, none, none, none, none, nullptr);
  kernel->forward(5, 0, none, none, none, none, none, none, none, nullptr);
}

TEST_F(ForwardTest, RefusesBadArguments) {
  auto kernel = fwp::jit::compile(smallCase().desc(DType::F32));
  std::vector<float> buf(1024);
  const float *b = buf.data();
  auto message = [&](auto &&call) {
    try {
      call();
    } catch (const std::invalid_argument &e) {
      return std::string(e.what());
    }
    return std::string("(no exception)");
  };
  EXPECT_EQ(
      message([&] { kernel->forward(-1, 1, b, b, b, b, b, b, b, buf.data()); }),
      "forward: seqLen and batch must be >= 0, got seqLen = -1, batch "
      "= 1");
  EXPECT_EQ(message([&] {
              kernel->forward(1, 1, b, b, b, b, nullptr, b, b, buf.data());
            }),
            "forward: buffer wBeta is null");
  EXPECT_NE(message([&] {
              kernel->forward(INT64_MAX / 2, 4, b, b, b, b, b, b, b,
                              buf.data());
            }).find("overflows"),
            std::string::npos);
  std::vector<double> d(1024);
  EXPECT_EQ(message([&] {
              kernel->forward(1, 1, d.data(), d.data(), d.data(), d.data(),
                              d.data(), d.data(), d.data(), d.data());
            }),
            "forward: called with double buffers, but the kernel was "
            "compiled for float (f32)");
}

#ifndef FWP_TEST_CUDA // backend-independent: run once, in the CPU build

//===----------------------------------------------------------------------===//
// compile() and its cache
//===----------------------------------------------------------------------===//

/// A description nothing in this process compiled before: a fresh eps makes
/// it unique, so compileCount() deltas are exact even when every test runs
/// in one process, repeatedly (--gtest_repeat).
KernelDesc freshDesc() {
  static std::atomic<int> serial{0};
  KernelDesc d;
  d.heads = 2;
  d.dHead = 4;
  d.chunkSize = 4;
  d.eps = 1e-3 + 1e-6 * ++serial;
  return d;
}

TEST(CompileCacheTest, SameDescriptionFromEightThreadsCompilesOnce) {
  KernelDesc desc = freshDesc();
  size_t before = fwp::jit::compileCount();
  std::vector<std::shared_ptr<const CompiledAttention>> got(8);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (auto &g : got)
    threads.emplace_back([&] {
      // Start together, so that the requests really overlap.
      ++ready;
      while (ready.load() < 8)
        std::this_thread::yield();
      g = fwp::jit::compile(desc);
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(fwp::jit::compileCount(), before + 1);
  for (const auto &g : got) {
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g.get(), got[0].get());
  }
  // Later requests hit the cache too.
  EXPECT_EQ(fwp::jit::compile(desc).get(), got[0].get());
  EXPECT_EQ(fwp::jit::compileCount(), before + 1);
}

TEST(CompileCacheTest, DifferentDescriptionsCompileSeparately) {
  KernelDesc base = freshDesc();
  std::vector<KernelDesc> descs = {freshDesc(), base, base};
  descs[1].rule = Rule::Sum;
  descs[2].dtype = DType::F64;
  size_t before = fwp::jit::compileCount();
  std::vector<std::shared_ptr<const CompiledAttention>> got(descs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < descs.size(); ++i)
    threads.emplace_back([&, i] { got[i] = fwp::jit::compile(descs[i]); });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(fwp::jit::compileCount(), before + descs.size());
  std::set<const CompiledAttention *> distinct;
  for (size_t i = 0; i < descs.size(); ++i) {
    distinct.insert(got[i].get());
    EXPECT_EQ(got[i]->desc().str(), descs[i].str());
    EXPECT_EQ(fwp::jit::compile(descs[i]).get(), got[i].get());
  }
  EXPECT_EQ(distinct.size(), descs.size());
  EXPECT_EQ(fwp::jit::compileCount(), before + descs.size());
}

TEST(CompileCacheTest, CompileUncachedAlwaysCompiles) {
  KernelDesc desc = freshDesc();
  size_t before = fwp::jit::compileCount();
  auto a = fwp::jit::compileUncached(desc);
  auto b = fwp::jit::compileUncached(desc);
  EXPECT_NE(a.get(), b.get());
  EXPECT_EQ(fwp::jit::compileCount(), before + 2);
  EXPECT_GT(a->compileSeconds(), 0.0);
}

TEST(KernelDescTest, StrNamesEveryField) {
  KernelDesc d;
  d.heads = 4;
  d.dHead = 8;
  d.nu = 2;
  EXPECT_EQ(d.str(), "cpu f32 delta heads=4 d_head=8 nu=2 eps=1e-06 chunk=64");
  d.rule = Rule::Sum;
  d.dtype = DType::F64;
  d.eps = 0.1;
  d.chunkSize = 16;
  d.backend = fwp::jit::Backend::Cuda;
  EXPECT_EQ(d.str(), "cuda f64 sum heads=4 d_head=8 nu=2 eps=0.1 chunk=16");
  // eps reads back exactly: nearby values are different keys.
  KernelDesc e = d;
  e.eps = std::nextafter(0.1, 1.0);
  EXPECT_NE(e.str(), d.str());
}

std::string compileError(const KernelDesc &d) {
  try {
    fwp::jit::compile(d);
  } catch (const std::invalid_argument &e) {
    return std::string("invalid_argument: ") + e.what();
  } catch (const std::runtime_error &e) {
    return std::string("runtime_error: ") + e.what();
  }
  return "(no exception)";
}

TEST(KernelDescTest, InvalidDescriptionsThrowClearly) {
  size_t before = fwp::jit::compileCount();
  auto with = [](auto change) {
    KernelDesc d;
    d.heads = 2;
    d.dHead = 4;
    change(d);
    return d;
  };
  const std::string prefix = "invalid_argument: invalid kernel description: ";
  EXPECT_EQ(compileError(with([](KernelDesc &d) { d.heads = 0; })),
            prefix + "heads must be >= 1, got 0");
  EXPECT_EQ(compileError(with([](KernelDesc &d) { d.dHead = -3; })),
            prefix + "dHead must be >= 1, got -3");
  EXPECT_EQ(compileError(with([](KernelDesc &d) { d.nu = 0; })),
            prefix + "nu must be in [1, 2*dHead-1] = [1, 7], got 0");
  EXPECT_EQ(compileError(with([](KernelDesc &d) { d.nu = 8; })),
            prefix + "nu must be in [1, 2*dHead-1] = [1, 7], got 8");
  EXPECT_EQ(compileError(with([](KernelDesc &d) { d.eps = 0; })),
            prefix + "eps must be finite and > 0, got 0");
  EXPECT_EQ(compileError(with([](KernelDesc &d) { d.eps = NAN; })),
            prefix + "eps must be finite and > 0, got nan");
  EXPECT_EQ(compileError(with([](KernelDesc &d) { d.eps = INFINITY; })),
            prefix + "eps must be finite and > 0, got inf");
  EXPECT_EQ(compileError(with([](KernelDesc &d) { d.chunkSize = 0; })),
            prefix + "chunkSize must be in [1, 4096], got 0");
  EXPECT_EQ(compileError(with([](KernelDesc &d) { d.chunkSize = 4097; })),
            prefix + "chunkSize must be in [1, 4096], got 4097");
  EXPECT_EQ(compileError(with([](KernelDesc &d) { d.heads = INT64_MAX / 2; })),
            prefix + "heads = 4611686018427387903, dHead = 4, nu = 1 give "
                     "sizes that overflow 64-bit indices");
  EXPECT_EQ(
      compileError(with([](KernelDesc &d) { d.rule = static_cast<Rule>(7); })),
      prefix + "rule, dtype or backend is not one of its enumerators");
  // Refusals compile nothing and cache nothing.
  EXPECT_EQ(fwp::jit::compileCount(), before);
}

#endif // FWP_TEST_CUDA

} // namespace
