//===- JitForwardTest.cpp - The JIT-compiled forward vs the reference -----===//
//
// Relative error, throughout: max_i |y_i - yref_i| / max_i |yref_i|, with
// yref from the float64 reference (fwp::ref::attention) run on exactly the
// values the kernel gets (float32 inputs are rounded first), so that only
// the kernel's arithmetic is measured.
//
// The cases, their seeds and bounds are AttentionCases.h's (shared with the
// GPU bundle); each test here checks one of its lists.
//
//===----------------------------------------------------------------------===//

#include "AttentionTestUtils.h"
#include "BackendUnderTest.h"
#include "NonFiniteInputs.h"
#include "TestUtils.h"

#include "fwp/JIT/JIT.h"
#include "fwp/Reference/Reference.h"

#include <gtest/gtest.h>

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
using fwp::test::Case;
using fwp::test::invalidArgumentMessage;
using fwp::test::makeProblem;
using fwp::test::Problem;
using fwp::test::relativeError;
using fwp::test::runForward;
using fwp::test::smallCase;

namespace {

/// Compiles (through the cache) and checks every case; reports the worst
/// error and the compile time of each kernel compiled here.
void checkCases(const std::string &test) {
  const fwp::test::CaseList &list =
      fwp::test::caseList(fwp::test::forwardCaseLists(), test);
  DType dtype = list.dtype;
  double bound = list.bound;
  fwp::test::checkEachCase(
      list.cases, dtype, list.firstSeed,
      [&](const Case &c, const CompiledAttention &kernel, const Problem &p) {
        std::vector<double> ref =
            fwp::ref::attention(p.config, p.shape, p.x, p.params).y;
        std::vector<double> y = fwp::test::runForwardAnyType(kernel, p);
        double err = relativeError(y, ref);
        std::printf("[ relerr   ] %s %s: %.3g\n", fwp::rt::dtypeName(dtype),
                    c.name().c_str(), err);
        EXPECT_LE(err, bound);
        return err;
      });
}

class ForwardTest : public fwp::test::KernelTest {};

//===----------------------------------------------------------------------===//
// Float32 against the float64 reference
//===----------------------------------------------------------------------===//

TEST_F(ForwardTest, DeltaRuleSmallChunks) {
  checkCases("DeltaRuleSmallChunks");
}

TEST_F(ForwardTest, SumRule) { checkCases("SumRule"); }

TEST_F(ForwardTest, WideHeads) { checkCases("WideHeads"); }

TEST_F(ForwardTest, ManyHeads) { checkCases("ManyHeads"); }

TEST_F(ForwardTest, DefaultChunkSize) { checkCases("DefaultChunkSize"); }

TEST_F(ForwardTest, BlockInverse) { checkCases("BlockInverse"); }

TEST_F(ForwardTest, ZeroKeySteps) { checkCases("ZeroKeySteps"); }

//===----------------------------------------------------------------------===//
// Float64 against the float64 reference
//===----------------------------------------------------------------------===//

TEST_F(ForwardTest, Float64MatchesReference) {
  checkCases("Float64MatchesReference");
}

//===----------------------------------------------------------------------===//
// 16-bit storage, float32 arithmetic
//===----------------------------------------------------------------------===//

TEST_F(ForwardTest, Bfloat16Storage) { checkCases("Bfloat16Storage"); }

TEST_F(ForwardTest, Float16Storage) { checkCases("Float16Storage"); }

//===----------------------------------------------------------------------===//
// NaN and infinities (NonFiniteInputs.h)
//===----------------------------------------------------------------------===//

TEST_F(ForwardTest, NonFiniteInputsStayNonFinite) {
  Case c = smallCase();
  auto kernel = fwp::jit::compile(c.desc(DType::F32, fwp::test::kBackend));
  auto cpuKernel =
      fwp::jit::compile(c.desc(DType::F32, fwp::jit::Backend::Cpu));
  for (const fwp::test::SpecialValue &special : fwp::test::specialValues()) {
    Problem p = makeProblem(c, DType::F32, 17);
    fwp::test::plantSpecial(p, special.value);
    std::vector<double> ref =
        fwp::ref::attention(p.config, p.shape, p.x, p.params).y;
    std::vector<double> y = runForward<float>(*kernel, p);
    int64_t specialChunk = fwp::test::kSpecialStep / c.chunk * c.chunk;
    fwp::test::expectSpecialKept(y, ref, p.shape.batch, specialChunk,
                                 p.shape.dModel, 1e-5, special.name);
    // The backends agree on where the non-finite values are.
    EXPECT_EQ(fwp::test::nonFiniteMask(y),
              fwp::test::nonFiniteMask(runForward<float>(*cpuKernel, p)))
        << special.name;
  }
}

//===----------------------------------------------------------------------===//
// forward() itself
//===----------------------------------------------------------------------===//

TEST_F(ForwardTest, LeavesInputsAlone) {
  Case c = smallCase();
  auto kernel = fwp::jit::compile(c.desc(DType::F64, fwp::test::kBackend));
  Problem p = makeProblem(c, DType::F64, 7);
  Problem copy = p;
  runForward<double>(*kernel, p);
  EXPECT_EQ(p.x, copy.x);
  EXPECT_EQ(p.params.wQ, copy.params.wQ);
  EXPECT_EQ(p.params.wBeta, copy.params.wBeta);
  EXPECT_EQ(p.params.bO, copy.params.bO);
}

TEST_F(ForwardTest, ConcurrentCallsAgree) {
  Case c = smallCase();
  auto kernel = fwp::jit::compile(c.desc(DType::F32, fwp::test::kBackend));
  Problem p = makeProblem(c, DType::F32, 8);
  std::vector<double> expected = runForward<float>(*kernel, p);
  std::vector<std::vector<double>> results(8);
  std::vector<std::thread> threads;
  for (auto &r : results)
    threads.emplace_back([&] { r = runForward<float>(*kernel, p); });
  for (std::thread &t : threads)
    t.join();
  for (const auto &r : results)
    EXPECT_EQ(r, expected);
}

TEST_F(ForwardTest, EmptySequenceOrBatchDoesNothing) {
  auto kernel =
      fwp::jit::compile(smallCase().desc(DType::F32, fwp::test::kBackend));
  // Nothing is read or written: null buffers are fine.
  const float *none = nullptr;
  kernel->forward(0, 3, none, none, none, none, none, none, none, nullptr);
  kernel->forward(5, 0, none, none, none, none, none, none, none, nullptr);
}

TEST_F(ForwardTest, RefusesBadArguments) {
  auto kernel =
      fwp::jit::compile(smallCase().desc(DType::F32, fwp::test::kBackend));
  std::vector<float> buf(1024);
  const float *b = buf.data();
  EXPECT_EQ(invalidArgumentMessage([&] {
              kernel->forward(-1, 1, b, b, b, b, b, b, b, buf.data());
            }),
            "forward: seqLen and batch must be >= 0, got seqLen = -1, batch "
            "= 1");
  EXPECT_EQ(invalidArgumentMessage([&] {
              kernel->forward(1, 1, b, b, b, b, nullptr, b, b, buf.data());
            }),
            "forward: buffer wBeta is null");
  EXPECT_NE(invalidArgumentMessage([&] {
              kernel->forward(INT64_MAX / 2, 4, b, b, b, b, b, b, b,
                              buf.data());
            }).find("overflows"),
            std::string::npos);
  std::vector<double> d(1024);
  EXPECT_EQ(invalidArgumentMessage([&] {
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
  // Entry points are prepared on first use.
  EXPECT_EQ(a->compileSeconds(), 0.0);
  a->prepare(fwp::jit::EntryPoint::Forward);
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
