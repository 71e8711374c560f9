//===- FastWeightsAttentionTest.cpp - fwp::FastWeightsAttention -----------===//
//
// The module class against the float64 reference run on the module's own
// parameters (widened exactly from float32): forward within 1e-5 and every
// gradient within 1e-4, relative (max_i |a_i - r_i| / max_i |r_i|); an SGD
// step along -grad lowers a loss recomputed by the reference; errors;
// initialisation; dropout stored but not applied.
//
// Each test is its own process under ctest; tests sharing hyper-parameters
// compile one kernel each, so few distinct descriptions are used.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "fwp/FastWeightsAttention.h"
#include "fwp/Reference/Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

using fwp::DPFP;
using fwp::FastWeightsAttention;
using fwp::FastWeightsAttentionOptions;
using fwp::test::randomFloats;

namespace {

std::vector<double> widen(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

fwp::ref::AttentionParams widen(const FastWeightsAttention::Parameters &p) {
  return {widen(p.wQ),    widen(p.wK), widen(p.wV),
          widen(p.wBeta), widen(p.wO), widen(p.bO)};
}

fwp::ref::AttentionConfig refConfig(const FastWeightsAttention &m) {
  fwp::ref::AttentionConfig c;
  c.heads = m.heads();
  c.nu = m.phi().nu;
  c.eps = m.phi().eps;
  c.rule = m.options().rule == fwp::jit::Rule::Delta ? fwp::ref::Rule::Delta
                                                     : fwp::ref::Rule::Sum;
  return c;
}

/// max_i |a_i - r_i| / max_i |r_i| (absolute if r is all zeros).
double relativeError(const std::vector<float> &a,
                     const std::vector<double> &r) {
  EXPECT_EQ(a.size(), r.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < std::min(a.size(), r.size()); ++i) {
    double d = std::fabs(static_cast<double>(a[i]) - r[i]);
    diff = std::isnan(d) ? INFINITY : std::max(diff, d);
    scale = std::max(scale, std::fabs(r[i]));
  }
  return diff / (scale > 0 ? scale : 1.0);
}

// The shapes used by most tests: T=11 with chunks of 4 (a partial last
// chunk), d_k=8, nu=2.
constexpr int64_t kHeads = 3, kDModel = 24, kSeqLen = 11, kBatch = 2;
constexpr int64_t kCount = kSeqLen * kBatch * kDModel;

FastWeightsAttentionOptions options(fwp::jit::Rule rule, uint64_t seed) {
  FastWeightsAttentionOptions o;
  o.rule = rule;
  o.chunkSize = 4;
  o.seed = seed;
  return o;
}

FastWeightsAttention makeModule(fwp::jit::Rule rule = fwp::jit::Rule::Delta,
                                uint64_t seed = 7, double dropout = 0.1) {
  return FastWeightsAttention(kHeads, kDModel, DPFP{2, 1e-6}, dropout,
                              options(rule, seed));
}

void checkForward(fwp::jit::Rule rule) {
  FastWeightsAttention m = makeModule(rule);
  std::vector<float> x = randomFloats(kCount, 1, 1.0);
  std::vector<float> y = m.forward(x, kSeqLen, kBatch);
  std::vector<double> expected =
      fwp::ref::attention(refConfig(m), {kSeqLen, kBatch, kDModel}, widen(x),
                          widen(m.parameters()))
          .y;
  EXPECT_LE(relativeError(y, expected), 1e-5);
}

void checkBackward(fwp::jit::Rule rule) {
  FastWeightsAttention m = makeModule(rule);
  std::vector<float> x = randomFloats(kCount, 2, 1.0);
  std::vector<float> dy = randomFloats(kCount, 3, 1.0);
  m.forward(x, kSeqLen, kBatch);
  FastWeightsAttention::Gradients g = m.backward(dy);
  fwp::ref::AttentionGradients r =
      fwp::ref::attentionBackward(refConfig(m), {kSeqLen, kBatch, kDModel},
                                  widen(x), widen(m.parameters()), widen(dy));
  EXPECT_LE(relativeError(g.x, r.x), 1e-4) << "dx";
  EXPECT_LE(relativeError(g.parameters.wQ, r.wQ), 1e-4) << "dw_q";
  EXPECT_LE(relativeError(g.parameters.wK, r.wK), 1e-4) << "dw_k";
  EXPECT_LE(relativeError(g.parameters.wV, r.wV), 1e-4) << "dw_v";
  EXPECT_LE(relativeError(g.parameters.wO, r.wO), 1e-4) << "dw_o";
  EXPECT_LE(relativeError(g.parameters.bO, r.bO), 1e-4) << "db_o";
  if (rule == fwp::jit::Rule::Delta) {
    EXPECT_LE(relativeError(g.parameters.wBeta, r.wBeta), 1e-4) << "dw_beta";
  } else {
    ASSERT_EQ(g.parameters.wBeta.size(), m.parameters().wBeta.size());
    for (float v : g.parameters.wBeta)
      EXPECT_EQ(v, 0.0f) << "dw_beta must be zero for the sum rule";
  }
}

/// Mean squared error of the reference's y against `target`.
double referenceLoss(const FastWeightsAttention &m,
                     const fwp::ref::AttentionParams &p,
                     const std::vector<float> &x,
                     const std::vector<float> &target) {
  std::vector<double> y =
      fwp::ref::attention(refConfig(m), {kSeqLen, kBatch, kDModel}, widen(x), p)
          .y;
  double sum = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    sum += (y[i] - target[i]) * (y[i] - target[i]);
  return sum / static_cast<double>(y.size());
}

template <typename F> std::string messageOf(F &&f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "(nothing thrown)";
}

} // namespace

TEST(FastWeightsAttention, ForwardMatchesReferenceDelta) {
  checkForward(fwp::jit::Rule::Delta);
}

TEST(FastWeightsAttention, ForwardMatchesReferenceSum) {
  checkForward(fwp::jit::Rule::Sum);
}

TEST(FastWeightsAttention, BackwardMatchesReferenceDelta) {
  checkBackward(fwp::jit::Rule::Delta);
}

TEST(FastWeightsAttention, BackwardMatchesReferenceSum) {
  checkBackward(fwp::jit::Rule::Sum);
}

// The backward differentiates the forward that was run: changing the
// parameters in between does not change the gradients, and the gradients are
// returned, not accumulated (two calls give the same values).
TEST(FastWeightsAttention, BackwardUsesTheForwardsParameters) {
  FastWeightsAttention m = makeModule();
  std::vector<float> x = randomFloats(kCount, 4, 1.0);
  std::vector<float> dy = randomFloats(kCount, 5, 1.0);
  m.forward(x, kSeqLen, kBatch);
  FastWeightsAttention::Gradients before = m.backward(dy);
  for (float &w : m.parameter("w_k"))
    w *= 2.0f;
  FastWeightsAttention::Gradients after = m.backward(dy);
  EXPECT_EQ(before.x, after.x);
  for (const char *name : FastWeightsAttention::Parameters::names())
    EXPECT_EQ(before.parameters[name], after.parameters[name]) << name;
}

// One SGD step on L = mean((y - t)^2) along -grad: the loss, recomputed by
// the float64 reference before and after, goes down, and by about what the
// first-order expansion predicts, lr * |grad|^2.
TEST(FastWeightsAttention, SgdStepLowersReferenceLoss) {
  FastWeightsAttention m = makeModule();
  std::vector<float> x = randomFloats(kCount, 6, 1.0);
  std::vector<float> target = randomFloats(kCount, 7, 0.5);

  std::vector<float> y = m.forward(x, kSeqLen, kBatch);
  std::vector<float> dy(kCount);
  for (int64_t i = 0; i < kCount; ++i)
    dy[i] = 2.0f * (y[i] - target[i]) / static_cast<float>(kCount);
  FastWeightsAttention::Gradients g = m.backward(dy);

  double gradNorm2 = 0;
  for (const char *name : FastWeightsAttention::Parameters::names())
    for (float v : g.parameters[name])
      gradNorm2 += static_cast<double>(v) * v;
  ASSERT_GT(gradNorm2, 0.0);

  const fwp::ref::AttentionParams before = widen(m.parameters());
  const float lr = 0.05f;
  m.sgdStep(g.parameters, lr);
  const fwp::ref::AttentionParams after = widen(m.parameters());

  double lossBefore = referenceLoss(m, before, x, target);
  double lossAfter = referenceLoss(m, after, x, target);
  double predicted = lr * gradNorm2;
  EXPECT_LT(lossAfter, lossBefore);
  EXPECT_NEAR(lossBefore - lossAfter, predicted, 0.2 * predicted)
      << "before " << lossBefore << " after " << lossAfter;
}

TEST(FastWeightsAttention, BackwardWithoutForwardThrows) {
  FastWeightsAttention m = makeModule();
  std::vector<float> dy(kCount);
  EXPECT_THROW(m.backward(dy), std::logic_error);
  EXPECT_NE(messageOf([&] { m.backward(dy); }).find("without a forward"),
            std::string::npos);
}

TEST(FastWeightsAttention, WrongSizesThrow) {
  FastWeightsAttention m = makeModule();
  std::vector<float> x(kCount - 1);
  EXPECT_THROW(m.forward(x, kSeqLen, kBatch), std::invalid_argument);
  std::string message = messageOf([&] { m.forward(x, kSeqLen, kBatch); });
  EXPECT_NE(message.find("[seq_len=11, batch=2, d_model=24]"),
            std::string::npos)
      << message;
  EXPECT_THROW(m.forward({}, -1, kBatch), std::invalid_argument);
  // A failed forward keeps nothing: backward still refuses.
  EXPECT_THROW(m.backward(std::vector<float>(kCount)), std::logic_error);

  std::vector<float> good(kCount);
  m.forward(good, kSeqLen, kBatch);
  std::vector<float> dy(kCount + 1);
  EXPECT_THROW(m.backward(dy), std::invalid_argument);
  message = messageOf([&] { m.backward(dy); });
  EXPECT_NE(message.find("[seq_len=11, batch=2, d_model=24]"),
            std::string::npos)
      << message;

  // A parameter resized by the caller.
  m.parameter("b_o").push_back(0.0f);
  EXPECT_THROW(m.forward(good, kSeqLen, kBatch), std::logic_error);
  m.parameter("b_o").pop_back();

  FastWeightsAttention::Parameters bad = m.parameters();
  bad.wO.resize(3);
  EXPECT_THROW(m.sgdStep(bad, 0.1f), std::invalid_argument);
}

TEST(FastWeightsAttention, EmptyInputs) {
  FastWeightsAttention m = makeModule();
  EXPECT_TRUE(m.forward({}, 0, kBatch).empty());
  FastWeightsAttention::Gradients g = m.backward({});
  EXPECT_TRUE(g.x.empty());
  for (const char *name : FastWeightsAttention::Parameters::names()) {
    EXPECT_EQ(g.parameters[name].size(), m.parameter(name).size()) << name;
    for (float v : g.parameters[name])
      EXPECT_EQ(v, 0.0f) << name;
  }
}

TEST(FastWeightsAttention, BadConstructionThrows) {
  auto message = [](auto &&make) { return messageOf(make); };
  auto expectThrow = [&](auto &&make, const std::string &needle) {
    EXPECT_THROW(make(), std::invalid_argument) << needle;
    std::string m = message(make);
    EXPECT_NE(m.find(needle), std::string::npos) << m;
  };
  expectThrow([] { FastWeightsAttention(5, 24); }, "must divide d_model");
  expectThrow([] { FastWeightsAttention(0, 24); }, "heads must be >= 1");
  expectThrow([] { FastWeightsAttention(1, 0); }, "d_model must be >= 1");
  expectThrow([] { FastWeightsAttention(3, 24, DPFP{0}); }, "nu");
  expectThrow([] { FastWeightsAttention(3, 24, DPFP{16}); }, "[1, 15]");
  expectThrow([] { FastWeightsAttention(3, 24, DPFP{1, 0.0}); }, "eps");
  expectThrow([] { FastWeightsAttention(3, 24, DPFP{1, NAN}); }, "eps");
  expectThrow([] { FastWeightsAttention(3, 24, DPFP{}, 1.0); },
              "dropout_prob must be in [0, 1)");
  expectThrow([] { FastWeightsAttention(3, 24, DPFP{}, -0.1); },
              "dropout_prob");
  expectThrow([] { FastWeightsAttention(3, 24, DPFP{}, NAN); }, "dropout_prob");
  FastWeightsAttentionOptions o;
  o.chunkSize = 0;
  expectThrow([&] { FastWeightsAttention(3, 24, DPFP{}, 0.1, o); },
              "chunk size");
  // The extremes that are valid.
  EXPECT_NO_THROW(FastWeightsAttention(3, 24, DPFP{15}, 0.0));
  EXPECT_NO_THROW(FastWeightsAttention(1, 1, DPFP{1}, 0.999));
}

TEST(FastWeightsAttention, ParametersByName) {
  FastWeightsAttention m = makeModule();
  const auto &p = m.parameters();
  EXPECT_EQ(&m.parameter("w_q"), &p.wQ);
  EXPECT_EQ(&m.parameter("w_k"), &p.wK);
  EXPECT_EQ(&m.parameter("w_v"), &p.wV);
  EXPECT_EQ(&m.parameter("w_beta"), &p.wBeta);
  EXPECT_EQ(&m.parameter("w_o"), &p.wO);
  EXPECT_EQ(&m.parameter("b_o"), &p.bO);
  EXPECT_EQ(p.wQ.size(), static_cast<std::size_t>(kDModel * kDModel));
  EXPECT_EQ(p.wBeta.size(), static_cast<std::size_t>(kHeads * kDModel));
  EXPECT_EQ(p.bO.size(), static_cast<std::size_t>(kDModel));
  EXPECT_THROW(m.parameter("w_x"), std::invalid_argument);
  EXPECT_NE(messageOf([&] { m.parameter("w_x"); }).find("w_beta"),
            std::string::npos);
}

// nn.Linear's initialisation: U(-1/sqrt(in), 1/sqrt(in)), in = d_model, for
// every weight and the bias; bit-identical for a seed, different across
// seeds.
TEST(FastWeightsAttention, InitStatistics) {
  const int64_t dModel = 64;
  FastWeightsAttentionOptions o;
  o.seed = 123;
  FastWeightsAttention a(4, dModel, DPFP{}, 0.1, o);
  FastWeightsAttention b(4, dModel, DPFP{}, 0.1, o);
  o.seed = 124;
  FastWeightsAttention c(4, dModel, DPFP{}, 0.1, o);

  const double bound = 1.0 / std::sqrt(static_cast<double>(dModel));
  for (const char *name : FastWeightsAttention::Parameters::names()) {
    const std::vector<float> &w = a.parameter(name);
    ASSERT_FALSE(w.empty()) << name;
    double sum = 0, sum2 = 0, maxAbs = 0;
    for (float v : w) {
      sum += v;
      sum2 += static_cast<double>(v) * v;
      maxAbs = std::max(maxAbs, std::fabs(static_cast<double>(v)));
    }
    const double n = static_cast<double>(w.size());
    EXPECT_LE(maxAbs, static_cast<float>(bound)) << name;
    // U(-b, b): mean 0 (sd b/sqrt(3n)), mean square b^2/3.
    EXPECT_LE(std::fabs(sum / n), 5 * bound / std::sqrt(3 * n)) << name;
    if (w.size() >= 256) {
      EXPECT_NEAR(sum2 / n, bound * bound / 3, 0.15 * bound * bound / 3)
          << name;
      EXPECT_GT(maxAbs, 0.9 * bound) << name;
    }
    EXPECT_EQ(w, b.parameter(name)) << name << ": same seed, same values";
    EXPECT_NE(w, c.parameter(name)) << name << ": other seed, other values";
  }
  // Distinct tensors are not copies of one another.
  EXPECT_NE(a.parameters().wQ, a.parameters().wK);
  EXPECT_NE(a.parameters().wK, a.parameters().wV);
  EXPECT_NE(a.parameters().wV, a.parameters().wO);
}

// The seeds' module never applies its nn.Dropout: the output is identical
// for every dropout_prob, and forward is deterministic.
TEST(FastWeightsAttention, DropoutStoredButNotApplied) {
  FastWeightsAttention none = makeModule(fwp::jit::Rule::Delta, 7, 0.0);
  FastWeightsAttention half = makeModule(fwp::jit::Rule::Delta, 7, 0.5);
  EXPECT_EQ(none.dropoutProb(), 0.0);
  EXPECT_EQ(half.dropoutProb(), 0.5);
  EXPECT_EQ(makeModule().dropoutProb(), 0.1);
  EXPECT_EQ(FastWeightsAttention(3, 24).dropoutProb(), 0.1);
  std::vector<float> x = randomFloats(kCount, 8, 1.0);
  std::vector<float> y0 = none.forward(x, kSeqLen, kBatch);
  std::vector<float> y1 = half.forward(x, kSeqLen, kBatch);
  std::vector<float> y2 = half.forward(x, kSeqLen, kBatch);
  EXPECT_EQ(y0, y1);
  EXPECT_EQ(y1, y2);
}

// The kernel is compiled once, on first use, and shared through the JIT's
// cache by modules with the same hyper-parameters.
TEST(FastWeightsAttention, KernelCompiledLazilyAndShared) {
  // A chunk size no other test uses, so that no earlier test in this process
  // compiled the same description.
  FastWeightsAttentionOptions o = options(fwp::jit::Rule::Delta, 1);
  o.chunkSize = 5;
  const std::size_t before = fwp::jit::compileCount();
  FastWeightsAttention a(kHeads, kDModel, DPFP{2, 1e-6}, 0.1, o);
  o.seed = 2;
  FastWeightsAttention b(kHeads, kDModel, DPFP{2, 1e-6}, 0.1, o);
  EXPECT_EQ(fwp::jit::compileCount(), before) << "construction compiles";
  std::vector<float> x = randomFloats(kCount, 9, 1.0);
  a.forward(x, kSeqLen, kBatch);
  b.forward(x, kSeqLen, kBatch);
  EXPECT_EQ(fwp::jit::compileCount(), before + 1);
  EXPECT_EQ(a.kernel(), b.kernel());
  EXPECT_EQ(a.kernel()->desc().str(), a.kernelDesc().str());
}
