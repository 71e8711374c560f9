//===- JitBackwardTest.cpp - The JIT-compiled backward --------------------===//
//
// CompiledAttention::backward against the float64 reference
// (fwp::ref::attentionBackward), and against finite differences of the
// compiled forward.
//
// Relative error, per gradient: max_i |g_i - gref_i| / max_i |gref_i|, with
// gref from the reference run on exactly the values the kernel gets (float32
// inputs are rounded first), so that only the kernel's arithmetic is
// measured. Bounds: 1e-4 for float32 kernels, 1e-9 for float64 ones. For the
// sum rule dwBeta must be exactly zero.
//
// The float32 bound holds for these inputs, not for every input: DPFP's
// gradient is ill-conditioned where a projection is nearly zero. For a row
// whose phi holds a single, small product (s = sum(phi) + eps small), dL/dq
// grows like eps / s^2, and its relative error is that of the product, i.e.
// of the float32 projection q = x W_q^T (about 6e-8 * sum|terms| / |q|). A q
// entry of 1e-4 that float32 gets from terms of order one, in a row whose
// gradient then dominates, costs 1e-3 relative with no error in the kernel
// (seen for d_k = 4 with some seeds). The float64 cases and the finite
// differences check the arithmetic without that amplification.
//
// The cases, their seeds and bounds are AttentionCases.h's (shared with the
// GPU bundle); each test here checks one of its lists.
//
// Finite differences: for L = sum(y * r) with r random and y the compiled
// float64 forward, dL/dtheta by central differences (the five-point
// stencil, h = 1e-4) for every element of x and of every weight, against
// the compiled backward given dy = r; bound 1e-6.
//
//===----------------------------------------------------------------------===//

#include "AttentionTestUtils.h"
#include "BackendUnderTest.h"
#include "NonFiniteInputs.h"
#include "TestUtils.h"

#include "fwp/JIT/JIT.h"
#include "fwp/Reference/Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using fwp::jit::CompiledAttention;
using fwp::jit::DType;
using fwp::jit::Rule;
using fwp::test::Case;
using fwp::test::cast;
using fwp::test::invalidArgumentMessage;
using fwp::test::makeProblem;
using fwp::test::Problem;
using fwp::test::relativeError;
using fwp::test::runForward;
using fwp::test::smallCase;

namespace {

/// The gradients in the order of CompiledAttention::backward's outputs.
constexpr const char *kGradientNames[] = {"dx",     "dwQ", "dwK", "dwV",
                                          "dwBeta", "dwO", "dbO"};

std::vector<std::vector<double>>
referenceGradients(const Problem &p, const std::vector<double> &dy) {
  fwp::ref::AttentionGradients g =
      fwp::ref::attentionBackward(p.config, p.shape, p.x, p.params, dy);
  return {g.x, g.wQ, g.wK, g.wV, g.wBeta, g.wO, g.bO};
}

/// Runs the backward of `kernel` on `p` (with `dy`) in T and returns the
/// gradients as doubles, in the order of kGradientNames.
template <typename T>
std::vector<std::vector<double>> runBackward(const CompiledAttention &kernel,
                                             const Problem &p,
                                             const std::vector<double> &dy) {
  std::vector<T> x = cast<T>(p.x), wq = cast<T>(p.params.wQ),
                 wk = cast<T>(p.params.wK), wv = cast<T>(p.params.wV),
                 wb = cast<T>(p.params.wBeta), wo = cast<T>(p.params.wO),
                 bo = cast<T>(p.params.bO), dyT = cast<T>(dy);
  // Every element must be overwritten.
  auto output = [](size_t n) { return std::vector<T>(n, T(-7)); };
  std::vector<T> dx = output(x.size()), dwq = output(wq.size()),
                 dwk = output(wk.size()), dwv = output(wv.size()),
                 dwb = output(wb.size()), dwo = output(wo.size()),
                 dbo = output(bo.size());
  kernel.backward(p.shape.seqLen, p.shape.batch, x.data(), wq.data(), wk.data(),
                  wv.data(), wb.data(), wo.data(), bo.data(), dyT.data(),
                  dx.data(), dwq.data(), dwk.data(), dwv.data(), dwb.data(),
                  dwo.data(), dbo.data());
  std::vector<std::vector<double>> out;
  for (const std::vector<T> *g : {&dx, &dwq, &dwk, &dwv, &dwb, &dwo, &dbo})
    out.emplace_back(g->begin(), g->end());
  return out;
}

std::vector<std::vector<double>> runBackward(const CompiledAttention &kernel,
                                             const Problem &p,
                                             const std::vector<double> &dy) {
  return kernel.desc().dtype == DType::F32 ? runBackward<float>(kernel, p, dy)
                                           : runBackward<double>(kernel, p, dy);
}

/// Checks every gradient of `got` against `ref`: within `bound`, and dwBeta
/// exactly zero for the sum rule. Returns the worst error; appends
/// " name error" pairs to `line`.
double compareGradients(const std::vector<std::vector<double>> &got,
                        const std::vector<std::vector<double>> &ref, Rule rule,
                        double bound, std::string &line) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const char *name = kGradientNames[i];
    if (rule == Rule::Sum && std::string(name) == "dwBeta") {
      EXPECT_TRUE(std::all_of(got[i].begin(), got[i].end(), [](double v) {
        return v == 0.0;
      })) << "dwBeta of the sum rule is not zero";
      continue;
    }
    double err = relativeError(got[i], ref[i]);
    EXPECT_LE(err, bound) << name;
    char buf[48];
    std::snprintf(buf, sizeof buf, " %s %.2g", name, err);
    line += buf;
    worst = std::max(worst, err);
  }
  return worst;
}

/// Compiles (through the cache) and checks every case against the
/// reference; reports the worst error and the compile time of each kernel
/// compiled here.
void checkCases(const std::string &test) {
  const fwp::test::CaseList &list =
      fwp::test::caseList(fwp::test::backwardCaseLists(), test);
  DType dtype = list.dtype;
  double bound = list.bound;
  fwp::test::checkEachCase(
      list.cases, dtype, list.firstSeed,
      [&](const Case &c, const CompiledAttention &kernel, const Problem &p) {
        std::string line;
        double worst =
            compareGradients(runBackward(kernel, p, p.dy),
                             referenceGradients(p, p.dy), c.rule, bound, line);
        std::printf("[ relerr   ] %s %s:%s\n",
                    dtype == DType::F32 ? "f32" : "f64", c.name().c_str(),
                    line.c_str());
        return worst;
      });
}

class BackwardTest : public fwp::test::KernelTest {};

//===----------------------------------------------------------------------===//
// Float32 against the float64 reference
//===----------------------------------------------------------------------===//

TEST_F(BackwardTest, DeltaRuleSmallChunks) {
  checkCases("DeltaRuleSmallChunks");
}

TEST_F(BackwardTest, SumRule) { checkCases("SumRule"); }

TEST_F(BackwardTest, WideHeads) { checkCases("WideHeads"); }

TEST_F(BackwardTest, ManyHeads) { checkCases("ManyHeads"); }

TEST_F(BackwardTest, DefaultChunkSize) { checkCases("DefaultChunkSize"); }

TEST_F(BackwardTest, ZeroKeySteps) { checkCases("ZeroKeySteps"); }

// NaN and infinities (NonFiniteInputs.h): dx like the forward's y; a
// weight gradient sums over every row, so only "non-finite where the
// reference is" holds for it.
TEST_F(BackwardTest, NonFiniteInputsStayNonFinite) {
  Case c = smallCase();
  auto kernel = fwp::jit::compile(c.desc(DType::F32, fwp::test::kBackend));
  auto cpuKernel =
      fwp::jit::compile(c.desc(DType::F32, fwp::jit::Backend::Cpu));
  for (const fwp::test::SpecialValue &special : fwp::test::specialValues()) {
    Problem p = makeProblem(c, DType::F32, 19);
    fwp::test::plantSpecial(p, special.value);
    auto ref = referenceGradients(p, p.dy);
    auto got = runBackward(*kernel, p, p.dy);
    auto cpu = runBackward(*cpuKernel, p, p.dy);
    fwp::test::expectSpecialKept(got[0], ref[0], p.shape.batch,
                                 /*firstReached=*/0, p.shape.dModel, 1e-4,
                                 std::string(special.name) + " dx");
    for (size_t g = 1; g < got.size(); ++g) {
      std::string what = std::string(special.name) + " " + kGradientNames[g];
      fwp::test::expectNoneVanished(got[g], ref[g], what);
      EXPECT_EQ(fwp::test::nonFiniteMask(got[g]),
                fwp::test::nonFiniteMask(cpu[g]))
          << what;
    }
  }
}

//===----------------------------------------------------------------------===//
// Float64 against the float64 reference
//===----------------------------------------------------------------------===//

TEST_F(BackwardTest, Float64MatchesReference) {
  checkCases("Float64MatchesReference");
}

//===----------------------------------------------------------------------===//
// The GPU's tiling of the dense layers, run on the host
//===----------------------------------------------------------------------===//

/// The forward's y and every gradient `kernel` computes for `p` against the
/// float64 reference, each within `bound`; the errors as a line for the log.
std::string expectMatchesReference(const fwp::jit::CompiledAttention &kernel,
                                   const Problem &p, Rule rule, double bound) {
  std::vector<double> y = fwp::test::runForwardAnyType(kernel, p);
  double forwardErr =
      relativeError(y, fwp::ref::attention(p.config, p.shape, p.x, p.params).y);
  EXPECT_LE(forwardErr, bound) << "y";
  std::string gradients;
  compareGradients(runBackward(kernel, p, p.dy), referenceGradients(p, p.dy),
                   rule, bound, gradients);
  char head[32];
  std::snprintf(head, sizeof head, "y %.2g", forwardErr);
  return head + gradients;
}

/// Each case compiled with `options` in f32 and f64, forward and backward
/// against the float64 reference (f32 within 1e-4, f64 within 1e-9).
template <std::size_t N>
void expectF32AndF64MatchReference(const Case (&cases)[N],
                                   const fwp::jit::CompileOptions &options,
                                   uint64_t seed) {
  for (DType dtype : {DType::F32, DType::F64}) {
    double bound = dtype == DType::F32 ? 1e-4 : 1e-9;
    for (const Case &c : cases) {
      SCOPED_TRACE(c.name());
      auto kernel = fwp::jit::compileUncached(
          c.desc(dtype, fwp::test::kBackend), options);
      Problem p = makeProblem(c, dtype, seed);
      std::string line = expectMatchesReference(*kernel, p, c.rule, bound);
      std::printf("[ relerr   ] %s %s: %s\n",
                  dtype == DType::F32 ? "f32" : "f64", c.name().c_str(),
                  line.c_str());
    }
  }
}

/// fwp-to-ptx lowers the GPU's forms, which CompileOptions::cpuGpuTiling
/// (fwp-to-cpu{gpu-tiling}) lowers for the host, so that they are checked
/// here without a GPU:
/// - fwp-dense-to-tiles (the projections, the gate, the output layer and
///   their gradients as kernels of static tile products): their tiles, the
///   rows past the last whole tile and the narrowed tiles. Rows T B = 133
///   (two whole tiles of 64 and 5 more); d_model 64 (two column tiles of
///   32) and 48 (tiles 16 wide); the gate's 4 or 6 outputs (tiles of 4 and
///   2 rows of dW_beta).
/// - the scan's unfused kernels (scan_prepare, scan_state, scan_state_grad,
///   scan_chunk_grad, scan_input_grad) with the GPU's value blocks of 32
///   and its state and state gradient in kernel-local tiles (on the stack
///   here, in shared memory on the GPU) that the products read transposed.
///   d_v = 64 makes two value blocks, which add their shares of dK's term
///   U dS atomically, by rows of 32 (C = 48: one piece and a rest of 16;
///   C = 16: the rest only), both rules; D = 128 local tiles of
///   16 KiB (f32) and 32 KiB (f64), so that the f64 gradient's two tiles
///   go to the workspace instead.
TEST(GpuTilingOnTheHost, ForwardAndBackwardMatchReference) {
  if (fwp::test::kBackend != fwp::jit::Backend::Cpu)
    GTEST_SKIP() << "a CPU pipeline option: the CUDA build has nothing to add";
  const Case cases[] = {{Rule::Delta, 4, 16, 1, 16, 133, 1},
                        {Rule::Delta, 6, 8, 2, 64, 19, 7},
                        {Rule::Sum, 4, 12, 1, 32, 70, 2},
                        {Rule::Delta, 1, 64, 1, 16, 40, 2},
                        {Rule::Sum, 1, 64, 1, 48, 70, 2}};
  fwp::jit::CompileOptions options;
  options.cpuGpuTiling = true;
  expectF32AndF64MatchReference(cases, options, 31);
}

/// The GPU's scan as the chunk operations' kernels (CompileOptions::
/// gpuStages: chunk_wy, chunk_states_output, the three gradients and the
/// feature maps as kernels of their own), on the emulator in the CUDA
/// build and on the host with the GPU's tiling in the CPU build: several
/// chunks a sequence with a ragged last one (T B = 133 and 70 rows),
/// D = 128 features whose tiles go to global scratch rather than shared
/// memory, two value blocks of d_v = 64, both rules.
class GpuStages : public fwp::test::KernelTest {};

TEST_F(GpuStages, ForwardAndBackwardMatchReference) {
  const Case cases[] = {{Rule::Delta, 4, 16, 1, 16, 133, 1},
                        {Rule::Sum, 4, 12, 1, 32, 70, 2},
                        {Rule::Delta, 1, 64, 1, 48, 70, 2}};
  fwp::jit::CompileOptions options;
  options.gpuStages = true;
  options.cpuGpuTiling = fwp::test::kBackend == fwp::jit::Backend::Cpu;
  expectF32AndF64MatchReference(cases, options, 37);
}

/// A long sequence on the CPU: the fused kernels' chunk loops run 64 times
/// with tiles of 64 x 128 floats on the stack, which must stay there once,
/// not once per chunk (a stack that grew with every chunk overflowed here),
/// forward and backward against the float64 reference.
TEST(CpuStack, LongSequenceInBoundedStack) {
  if (fwp::test::kBackend != fwp::jit::Backend::Cpu)
    GTEST_SKIP() << "the CPU kernels' stack: the CUDA build has nothing to add";
  const Case c{Rule::Delta, 1, 32, 2, 64, 4096, 1};
  auto kernel =
      fwp::jit::compileUncached(c.desc(DType::F32, fwp::test::kBackend), {});
  Problem p = makeProblem(c, DType::F32, 43);
  std::string line = expectMatchesReference(*kernel, p, c.rule, 1e-4);
  std::printf("[ relerr   ] f32 %s: %s\n", c.name().c_str(), line.c_str());
}

//===----------------------------------------------------------------------===//
// Finite differences of the compiled forward
//===----------------------------------------------------------------------===//

/// Central differences of L(theta) = sum(forward(theta) * r) with respect to
/// every element of x and of every weight, against the compiled backward
/// given dy = r. Elements of x in zero rows are skipped: there k = 0 sits on
/// DPFP's relu kink, where phi' ~ k^2 / eps bends too sharply (curvature of
/// order 1 / eps) for any usable step (the weights' differences leave those
/// rows at zero).
void checkFiniteDifferences(const Case &c, double bound) {
  SCOPED_TRACE(c.name());
  auto kernel = fwp::jit::compile(c.desc(DType::F64, fwp::test::kBackend));
  Problem p = makeProblem(c, DType::F64, 77);
  const std::vector<double> &r = p.dy;
  std::vector<std::vector<double>> grads = runBackward(*kernel, p, r);

  auto loss = [&](const std::vector<double> &x,
                  const fwp::ref::AttentionParams &w) {
    std::vector<double> y = runForward<double>(*kernel, x, w, p.shape);
    double total = 0;
    for (size_t i = 0; i < y.size(); ++i)
      total += y[i] * r[i];
    return total;
  };
  const int64_t dm = p.shape.dModel;
  auto inZeroRow = [&](size_t i) {
    int64_t row = static_cast<int64_t>(i) / dm;
    int64_t t = row / c.batch, b = row % c.batch;
    return std::find(c.zeroSteps.begin(), c.zeroSteps.end(), t) !=
               c.zeroSteps.end() &&
           (c.zeroBatch < 0 || c.zeroBatch == b);
  };
  const double h = 1e-4;
  std::string line;
  double worst = 0;
  // theta: x, then each weight, in the order of kGradientNames.
  std::vector<double> *thetas[] = {&p.x,         &p.params.wQ,    &p.params.wK,
                                   &p.params.wV, &p.params.wBeta, &p.params.wO,
                                   &p.params.bO};
  for (size_t g = 0; g < 7; ++g) {
    std::vector<double> &theta = *thetas[g];
    std::vector<double> fd(theta.size(), 0.0), analytic = grads[g];
    for (size_t i = 0; i < theta.size(); ++i) {
      if (g == 0 && inZeroRow(i)) {
        analytic[i] = 0.0;
        continue;
      }
      double saved = theta[i];
      auto at = [&](double offset) {
        theta[i] = saved + offset;
        return loss(p.x, p.params);
      };
      // The five-point stencil: truncation error O(h^4).
      fd[i] = (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h);
      theta[i] = saved;
    }
    if (c.rule == Rule::Sum && g == 4) {
      // The sum rule ignores w_beta: no difference, and a zero gradient.
      EXPECT_EQ(fd, std::vector<double>(fd.size(), 0.0));
      EXPECT_EQ(analytic, fd);
      continue;
    }
    double err = relativeError(analytic, fd);
    EXPECT_LE(err, bound) << kGradientNames[g];
    char buf[48];
    std::snprintf(buf, sizeof buf, " %s %.2g", kGradientNames[g], err);
    line += buf;
    worst = std::max(worst, err);
  }
  std::printf("[ fd       ] %s:%s\n", c.name().c_str(), line.c_str());
  ::testing::Test::RecordProperty("max_relative_error", std::to_string(worst));
}

constexpr double kFiniteDifferenceBound = 1e-6;

TEST_F(BackwardTest, FiniteDifferencesDeltaRule) {
  // Three chunks, the last one partial; every DPFP order.
  checkFiniteDifferences({Rule::Delta, 2, 3, 2, 2, 5, 2},
                         kFiniteDifferenceBound);
  checkFiniteDifferences({Rule::Delta, 1, 3, 3, 4, 6, 1},
                         kFiniteDifferenceBound);
  checkFiniteDifferences({Rule::Delta, 2, 4, 1, 3, 7, 2, {2, 3}, 1},
                         kFiniteDifferenceBound);
}

TEST_F(BackwardTest, FiniteDifferencesSumRule) {
  checkFiniteDifferences({Rule::Sum, 2, 3, 2, 2, 5, 2}, kFiniteDifferenceBound);
  checkFiniteDifferences({Rule::Sum, 1, 4, 1, 4, 1, 2}, kFiniteDifferenceBound);
  checkFiniteDifferences({Rule::Sum, 2, 3, 3, 3, 7, 1, {0, 6}},
                         kFiniteDifferenceBound);
}

//===----------------------------------------------------------------------===//
// backward() itself
//===----------------------------------------------------------------------===//

TEST_F(BackwardTest, LeavesInputsAlone) {
  Case c = smallCase();
  auto kernel = fwp::jit::compile(c.desc(DType::F64, fwp::test::kBackend));
  Problem p = makeProblem(c, DType::F64, 7);
  Problem copy = p;
  runBackward(*kernel, p, p.dy);
  EXPECT_EQ(p.x, copy.x);
  EXPECT_EQ(p.dy, copy.dy);
  EXPECT_EQ(p.params.wQ, copy.params.wQ);
  EXPECT_EQ(p.params.wK, copy.params.wK);
  EXPECT_EQ(p.params.wV, copy.params.wV);
  EXPECT_EQ(p.params.wBeta, copy.params.wBeta);
  EXPECT_EQ(p.params.wO, copy.params.wO);
  EXPECT_EQ(p.params.bO, copy.params.bO);
}

TEST_F(BackwardTest, ConcurrentCallsAgree) {
  Case c = smallCase();
  auto kernel = fwp::jit::compile(c.desc(DType::F32, fwp::test::kBackend));
  Problem p = makeProblem(c, DType::F32, 8);
  auto expected = runBackward(*kernel, p, p.dy);
  std::vector<std::vector<std::vector<double>>> results(8);
  std::vector<std::thread> threads;
  for (auto &r : results)
    threads.emplace_back([&] { r = runBackward(*kernel, p, p.dy); });
  for (std::thread &t : threads)
    t.join();
  for (const auto &r : results)
    EXPECT_EQ(r, expected);
}

/// prepareAll() compiles the forward and the backward side by side (no disk
/// cache: both really compile); the calls after it compile nothing and
/// match the float64 reference.
TEST_F(BackwardTest, PrepareAllCompilesBothEntryPointsAtOnce) {
  Case c = smallCase();
  fwp::jit::CompileOptions options;
  options.useDiskCache = false;
  auto kernel = fwp::jit::compileUncached(
      c.desc(DType::F32, fwp::test::kBackend), options);
  kernel->prepareAll();
  double seconds = kernel->compileSeconds();
  EXPECT_GT(seconds, 0.0);
  expectMatchesReference(*kernel, makeProblem(c, DType::F32, 9), c.rule, 1e-4);
  EXPECT_EQ(kernel->compileSeconds(), seconds) << "a call compiled again";
}

TEST_F(BackwardTest, EmptySequenceOrBatchGivesZeroWeightGradients) {
  Case c = smallCase();
  auto kernel = fwp::jit::compile(c.desc(DType::F32, fwp::test::kBackend));
  int64_t dm = c.heads * c.dHead;
  std::vector<float> dwq(dm * dm, -7), dwk(dm * dm, -7), dwv(dm * dm, -7),
      dwb(c.heads * dm, -7), dwo(dm * dm, -7), dbo(dm, -7);
  auto allZero = [](const std::vector<float> &v) {
    return std::all_of(v.begin(), v.end(), [](float e) { return e == 0; });
  };
  // Nothing is read: the inputs, dy and dx may be null.
  const float *none = nullptr;
  for (auto [seqLen, batch] : {std::pair<int64_t, int64_t>{0, 3}, {5, 0}}) {
    kernel->backward(seqLen, batch, none, none, none, none, none, none, none,
                     none, nullptr, dwq.data(), dwk.data(), dwv.data(),
                     dwb.data(), dwo.data(), dbo.data());
    for (const auto *g : {&dwq, &dwk, &dwv, &dwb, &dwo, &dbo})
      EXPECT_TRUE(allZero(*g));
    std::fill(dwq.begin(), dwq.end(), -7.0f);
  }
}

TEST_F(BackwardTest, RefusesBadArguments) {
  auto kernel =
      fwp::jit::compile(smallCase().desc(DType::F32, fwp::test::kBackend));
  std::vector<float> in(1024), out(1024);
  const float *b = in.data();
  float *o = out.data();
  EXPECT_EQ(invalidArgumentMessage([&] {
              kernel->backward(1, -2, b, b, b, b, b, b, b, b, o, o, o, o, o, o,
                               o);
            }),
            "backward: seqLen and batch must be >= 0, got seqLen = 1, batch "
            "= -2");
  EXPECT_EQ(invalidArgumentMessage([&] {
              kernel->backward(1, 1, b, b, b, b, b, b, b, nullptr, o, o, o, o,
                               o, o, o);
            }),
            "backward: buffer dy is null");
  EXPECT_EQ(invalidArgumentMessage([&] {
              kernel->backward(0, 1, b, b, b, b, b, b, b, b, o, o, o, o,
                               nullptr, o, o);
            }),
            "backward: buffer dwBeta is null");
  EXPECT_NE(invalidArgumentMessage([&] {
              kernel->backward(INT64_MAX / 2, 4, b, b, b, b, b, b, b, b, o, o,
                               o, o, o, o, o);
            }).find("overflows"),
            std::string::npos);
  std::vector<double> d(1024);
  double *dd = d.data();
  EXPECT_EQ(invalidArgumentMessage([&] {
              kernel->backward(1, 1, dd, dd, dd, dd, dd, dd, dd, dd, dd, dd, dd,
                               dd, dd, dd, dd);
            }),
            "backward: called with double buffers, but the kernel was "
            "compiled for float (f32)");
}

} // namespace
