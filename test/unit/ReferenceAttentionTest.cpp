//===- ReferenceAttentionTest.cpp - FastWeightsAttention reference --------===//
//
// The whole module against a separate transcription of the seeds' forward
// (paper-form delta update, quadratic causal attention for the sum rule),
// every gradient against central finite differences, all-zero keys, and the
// argument checks.
//
//===----------------------------------------------------------------------===//

#include "fwp/Reference/Reference.h"

#include "ReferenceTestUtils.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

using namespace fwp::ref;
using namespace fwp::ref::testing;

namespace {

std::size_t sz(int64_t value) { return static_cast<std::size_t>(value); }

constexpr int64_t kModel = 6; // divisible by 1, 2 and 3 heads

struct Problem {
  AttentionConfig config;
  AttentionShape shape;
  std::vector<double> x, initialState;
  AttentionParams params;

  std::size_t dHead() const { return sz(shape.dModel / config.heads); }
  std::size_t dFeature() const { return 2 * dHead() * sz(config.nu); }
  std::size_t stateCount() const {
    return sz(shape.batch * config.heads) * dHead() * dFeature();
  }
  std::size_t rows() const { return sz(shape.seqLen * shape.batch); }
};

/// One x row whose projected queries and keys have no component within
/// 0.15 of zero (rejection sampling). Finite differences need this: DPFP
/// has a relu kink at 0, and for small heads (dHead = 2, nu = 1 leaves one
/// product |k_0 k_1|) phi' = phi / (sum(phi) + eps) turns steep when a
/// component is small, so central differences lose accuracy there.
std::vector<double> awayFromKinks(const AttentionParams &params, Rng &rng) {
  const std::size_t M = sz(kModel);
  for (;;) {
    const std::vector<double> x = rng.fill(M);
    bool clear = true;
    for (const std::vector<double> *w : {&params.wQ, &params.wK}) {
      for (std::size_t o = 0; o < M; ++o) {
        double component = 0.0;
        for (std::size_t i = 0; i < M; ++i)
          component += (*w)[o * M + i] * x[i];
        clear = clear && std::fabs(component) >= 0.15;
      }
    }
    if (clear)
      return x;
  }
}

Problem randomProblem(Rule rule, int64_t nu, int64_t heads, int64_t seqLen,
                      int64_t batch, bool withInitial, uint64_t seed) {
  Rng rng(seed);
  Problem p;
  p.config = AttentionConfig{heads, nu, 1e-6, rule};
  p.shape = AttentionShape{seqLen, batch, kModel};
  const std::size_t square = sz(kModel * kModel);
  p.params.wQ = rng.fill(square, -0.6, 0.6);
  p.params.wK = rng.fill(square, -0.6, 0.6);
  p.params.wV = rng.fill(square, -0.6, 0.6);
  for (std::size_t r = 0; r < p.rows(); ++r) {
    const std::vector<double> row = awayFromKinks(p.params, rng);
    p.x.insert(p.x.end(), row.begin(), row.end());
  }
  p.params.wBeta = rng.fill(sz(heads * kModel), -0.6, 0.6);
  p.params.wO = rng.fill(square, -0.6, 0.6);
  p.params.bO = rng.fill(sz(kModel));
  if (withInitial)
    p.initialState = rng.fill(p.stateCount());
  return p;
}

AttentionOutputs run(const Problem &p) {
  return attention(p.config, p.shape, p.x, p.params, p.initialState);
}

//===----------------------------------------------------------------------===//
// Independent transcription of the seeds' forward.
//===----------------------------------------------------------------------===//

/// out[t][b][o] = sum_i w[o][i] in[t][b][i], written with explicit row and
/// column indices of nn.Linear's [out, in] weight.
std::vector<double> project(const std::vector<double> &in, std::size_t rows,
                            const std::vector<double> &w, std::size_t outSize) {
  const std::size_t inSize = sz(kModel);
  std::vector<double> out(rows * outSize, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < outSize; ++o)
      for (std::size_t i = 0; i < inSize; ++i)
        out[r * outSize + o] += in[r * inSize + i] * w[o * inSize + i];
  return out;
}

/// The module as the seeds describe it. Delta rule: per step, vbar = W K,
/// v_new = beta v + (1 - beta) vbar, W <- W - vbar K^T + v_new K^T. Sum rule:
/// y_t = S_0 Q_t + sum_{s<=t} v_s <K_s, Q_t>, with no state at all.
AttentionOutputs seedForward(const Problem &p) {
  const std::size_t T = sz(p.shape.seqLen), B = sz(p.shape.batch),
                    H = sz(p.config.heads), dh = p.dHead(), D = p.dFeature(),
                    rows = p.rows(), M = sz(kModel);
  const std::vector<double> q = project(p.x, rows, p.params.wQ, M);
  const std::vector<double> k = project(p.x, rows, p.params.wK, M);
  const std::vector<double> v = project(p.x, rows, p.params.wV, M);
  std::vector<double> beta;
  if (p.config.rule == Rule::Delta)
    beta = project(p.x, rows, p.params.wBeta, H);
  auto features = [&](const std::vector<double> &raw, std::size_t r,
                      std::size_t h) {
    const auto begin = raw.begin() + r * M + h * dh;
    return dpfp(std::vector<double>(begin, begin + dh), p.config.nu,
                p.config.eps);
  };
  auto initial = [&](std::size_t b, std::size_t h, std::size_t i,
                     std::size_t c) {
    return p.initialState.empty()
               ? 0.0
               : p.initialState[((b * H + h) * dh + i) * D + c];
  };

  std::vector<double> heads(rows * M, 0.0);
  AttentionOutputs out{{}, std::vector<double>(p.stateCount(), 0.0)};
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      double *W = &out.finalState[(b * H + h) * dh * D];
      for (std::size_t i = 0; i < dh; ++i)
        for (std::size_t c = 0; c < D; ++c)
          W[i * D + c] = initial(b, h, i, c);
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t r = t * B + b;
        const std::vector<double> Q = features(q, r, h), K = features(k, r, h);
        const double *value = &v[r * M + h * dh];
        double *y = &heads[r * M + h * dh];
        if (p.config.rule == Rule::Sum) {
          for (std::size_t i = 0; i < dh; ++i)
            for (std::size_t c = 0; c < D; ++c)
              y[i] += initial(b, h, i, c) * Q[c];
          for (std::size_t s = 0; s <= t; ++s) {
            const std::vector<double> Ks = features(k, s * B + b, h);
            double score = 0.0;
            for (std::size_t c = 0; c < D; ++c)
              score += Ks[c] * Q[c];
            for (std::size_t i = 0; i < dh; ++i)
              y[i] += v[(s * B + b) * M + h * dh + i] * score;
          }
          for (std::size_t i = 0; i < dh; ++i)
            for (std::size_t c = 0; c < D; ++c)
              W[i * D + c] += value[i] * K[c];
          continue;
        }
        const double gate = 1.0 / (1.0 + std::exp(-beta[r * H + h]));
        for (std::size_t i = 0; i < dh; ++i) {
          double vbar = 0.0;
          for (std::size_t c = 0; c < D; ++c)
            vbar += W[i * D + c] * K[c];
          const double vNew = gate * value[i] + (1.0 - gate) * vbar;
          for (std::size_t c = 0; c < D; ++c)
            W[i * D + c] += -vbar * K[c] + vNew * K[c];
          for (std::size_t c = 0; c < D; ++c)
            y[i] += W[i * D + c] * Q[c];
        }
      }
    }
  }
  out.y = project(heads, rows, p.params.wO, M);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < M; ++o)
      out.y[r * M + o] += p.params.bO[o];
  return out;
}

using ForwardCase = std::tuple<Rule, int64_t /*nu*/, int64_t /*heads*/>;

class ReferenceAttentionForward : public ::testing::TestWithParam<ForwardCase> {
};

// Sum rule: this is the seeds' equivalence check (recurrence == causal
// linear attention) at module level.
TEST_P(ReferenceAttentionForward, MatchesSeedTranscription) {
  // Plain variables, not a structured binding: C++17 lambdas cannot
  // capture those.
  const Rule rule = std::get<0>(GetParam());
  const int64_t nu = std::get<1>(GetParam()), heads = std::get<2>(GetParam());
  for (bool withInitial : {false, true}) {
    const Problem p = randomProblem(rule, nu, heads, 7, 2, withInitial,
                                    1000 + 10 * nu + heads);
    const AttentionOutputs out = run(p);
    const AttentionOutputs expected = seedForward(p);
    const double yError = relativeError(out.y, expected.y);
    EXPECT_LT(yError, 1e-12);
    EXPECT_LT(relativeError(out.finalState, expected.finalState), 1e-12);
    recordError(withInitial ? "yErrorWithInitial" : "yError", yError);
  }
}

std::string ruleTestName(Rule rule) {
  return rule == Rule::Delta ? "Delta" : "Sum";
}

/// Test name of a (rule, nu, heads) case.
std::string caseName(
    const ::testing::TestParamInfo<std::tuple<Rule, int64_t, int64_t>> &param) {
  return ruleTestName(std::get<0>(param.param)) + "Nu" +
         std::to_string(std::get<1>(param.param)) + "Heads" +
         std::to_string(std::get<2>(param.param));
}

std::string ruleCaseName(const ::testing::TestParamInfo<Rule> &param) {
  return ruleTestName(param.param);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ReferenceAttentionForward,
    ::testing::Combine(::testing::Values(Rule::Delta, Rule::Sum),
                       ::testing::Values<int64_t>(1, 2, 3),
                       ::testing::Values<int64_t>(1, 2, 3)),
    caseName);

// The sum rule has no gate: wBeta may be omitted, and its gradient is then
// empty too.
TEST(ReferenceAttention, SumRuleWithoutGateWeights) {
  Problem p = randomProblem(Rule::Sum, 2, 2, 5, 1, false, 77);
  const AttentionOutputs withGate = run(p);
  p.params.wBeta.clear();
  EXPECT_EQ(run(p).y, withGate.y);
  const std::vector<double> dy(p.rows() * sz(kModel), 1.0);
  EXPECT_TRUE(
      attentionBackward(p.config, p.shape, p.x, p.params, dy).wBeta.empty());
}

//===----------------------------------------------------------------------===//
// Gradients against central finite differences.
//===----------------------------------------------------------------------===//

/// Loss L = <dy, y> + <dFinal, finalState>; its gradient is exactly what
/// attentionBackward returns for (dy, dFinal).
struct LossSetup {
  Problem problem;
  std::vector<double> dy, dFinal;

  double loss(const Problem &p) const {
    const AttentionOutputs out = run(p);
    return innerProduct(dy, out.y) +
           (dFinal.empty() ? 0.0 : innerProduct(dFinal, out.finalState));
  }
  AttentionGradients gradients() const {
    const Problem &p = problem;
    return attentionBackward(p.config, p.shape, p.x, p.params, dy,
                             p.initialState, dFinal);
  }
  /// dL/d(field) by central differences, with h = 1e-5: the loss is smooth
  /// away from the relu kinks, which random data stays far from.
  std::vector<double>
  finiteDifference(std::vector<double> Problem::*field,
                   const std::function<bool(std::size_t)> &which = nullptr) {
    auto perturbed = [&, field](const std::vector<double> &value) {
      Problem p = problem;
      p.*field = value;
      return loss(p);
    };
    return centralDifference(perturbed, problem.*field, 1e-5, which);
  }
  std::vector<double>
  finiteDifference(std::vector<double> AttentionParams::*field) {
    auto perturbed = [&, field](const std::vector<double> &value) {
      Problem p = problem;
      p.params.*field = value;
      return loss(p);
    };
    return centralDifference(perturbed, problem.params.*field, 1e-5);
  }
};

/// (rule, nu, heads). Derived from them so that all combinations appear:
/// seqLen 5 or 7 (odd), batch 1 or 2, with or without initial state and
/// final-state gradient, with or without a zero-key step (x_t = 0).
using GradientCase = std::tuple<Rule, int64_t, int64_t>;

class ReferenceAttentionGradient
    : public ::testing::TestWithParam<GradientCase> {};

TEST_P(ReferenceAttentionGradient, MatchesFiniteDifferences) {
  // Plain variables, not a structured binding: C++17 lambdas cannot
  // capture those.
  const Rule rule = std::get<0>(GetParam());
  const int64_t nu = std::get<1>(GetParam()), heads = std::get<2>(GetParam());
  const int64_t seqLen = (nu + heads) % 2 == 0 ? 7 : 5;
  const int64_t batch = nu == 1 ? 1 : 2;
  const bool withStates = (nu + heads) % 2 == 1 || heads == 3;
  const bool zeroStep = heads != 2;
  LossSetup setup{randomProblem(rule, nu, heads, seqLen, batch, withStates,
                                2000 + 10 * nu + heads),
                  {},
                  {}};
  Problem &p = setup.problem;
  Rng rng(3000 + 10 * nu + heads);
  setup.dy = rng.fill(p.rows() * sz(kModel));
  if (withStates)
    setup.dFinal = rng.fill(p.stateCount());

  // x_t = 0 at step 2 of batch 0 makes every head's key (and query and
  // value) there exactly zero, whatever the weights are.
  const std::size_t zeroRow = 2 * sz(batch), M = sz(kModel);
  auto inZeroRow = [&](std::size_t i) { return zeroStep && i / M == zeroRow; };
  if (zeroStep)
    for (std::size_t i = 0; i < M; ++i)
      p.x[zeroRow * M + i] = 0.0;

  const AttentionGradients grads = setup.gradients();
  double worst = 0.0;
  auto check = [&](const char *name, const std::vector<double> &analytic,
                   const std::vector<double> &numeric) {
    ASSERT_TRUE(allFinite(analytic)) << name;
    const double error = relativeError(analytic, numeric);
    EXPECT_LT(error, 1e-7) << name;
    worst = std::max(worst, error);
  };
  check("wQ", grads.wQ, setup.finiteDifference(&AttentionParams::wQ));
  check("wK", grads.wK, setup.finiteDifference(&AttentionParams::wK));
  check("wV", grads.wV, setup.finiteDifference(&AttentionParams::wV));
  check("wO", grads.wO, setup.finiteDifference(&AttentionParams::wO));
  check("bO", grads.bO, setup.finiteDifference(&AttentionParams::bO));
  check("wBeta", grads.wBeta, setup.finiteDifference(&AttentionParams::wBeta));
  // An empty initial state is the zero state: differentiate there.
  if (!withStates)
    p.initialState.assign(p.stateCount(), 0.0);
  check("initialState", grads.initialState,
        setup.finiteDifference(&Problem::initialState));

  // x: finite differences everywhere except the zero row (see below).
  std::vector<double> dx = grads.x;
  for (std::size_t i = 0; i < dx.size(); ++i)
    if (inZeroRow(i))
      dx[i] = 0.0;
  check("x", dx, setup.finiteDifference(&Problem::x, [&](std::size_t i) {
    return !inZeroRow(i);
  }));
  recordError("maxRelError", worst);

  // At x_t = 0 every path from x_t to the loss is at least quadratic (phi is
  // a product of two relus; v and beta only act through K_t = 0), so the
  // gradient is exactly 0. Central differences cannot confirm that to 1e-7:
  // the two sides of the relu kink have different curvatures, of size 1/eps,
  // giving an O(h / eps) error. Instead check that the loss change is
  // quadratic in h: shrinking h tenfold shrinks it about a hundredfold.
  if (!zeroStep)
    return;
  const double base = setup.loss(p);
  for (std::size_t i = zeroRow * M; i < (zeroRow + 1) * M; ++i) {
    EXPECT_EQ(grads.x[i], 0.0) << "x index " << i;
    for (double sign : {1.0, -1.0}) {
      Problem moved = p;
      moved.x[i] = sign * 1e-4;
      const double big = std::fabs(setup.loss(moved) - base);
      moved.x[i] = sign * 1e-5;
      const double small = std::fabs(setup.loss(moved) - base);
      EXPECT_LE(small, big / 50.0 + 1e-13) << "x index " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ReferenceAttentionGradient,
    ::testing::Combine(::testing::Values(Rule::Delta, Rule::Sum),
                       ::testing::Values<int64_t>(1, 2, 3),
                       ::testing::Values<int64_t>(1, 2, 3)),
    caseName);

//===----------------------------------------------------------------------===//
// All-zero keys at module level.
//===----------------------------------------------------------------------===//

class ReferenceAttentionZeroKey : public ::testing::TestWithParam<Rule> {};

// With x_t = 0 for every batch entry, step t writes nothing: the final state
// after t + 1 steps equals the one after t steps, and nothing is NaN.
TEST_P(ReferenceAttentionZeroKey, StepWritesNothing) {
  Problem p = randomProblem(GetParam(), 2, 3, 5, 2, true, 55);
  const std::size_t M = sz(kModel), zeroStep = 3;
  for (std::size_t i = zeroStep * 2 * M; i < (zeroStep + 1) * 2 * M; ++i)
    p.x[i] = 0.0;
  const AttentionOutputs full = run(p);
  ASSERT_TRUE(allFinite(full.y) && allFinite(full.finalState));

  auto prefixState = [&](std::size_t steps) {
    Problem cut = p;
    cut.shape.seqLen = static_cast<int64_t>(steps);
    cut.x.resize(steps * 2 * M);
    return run(cut).finalState;
  };
  EXPECT_EQ(prefixState(zeroStep), prefixState(zeroStep + 1));
}

INSTANTIATE_TEST_SUITE_P(Rules, ReferenceAttentionZeroKey,
                         ::testing::Values(Rule::Delta, Rule::Sum),
                         ruleCaseName);

//===----------------------------------------------------------------------===//
// Argument checks: one per check.
//===----------------------------------------------------------------------===//

class ReferenceAttentionArgs : public ::testing::Test {
protected:
  Problem p = randomProblem(Rule::Delta, 2, 2, 3, 2, true, 9);

  void expectForwardThrows() { EXPECT_THROW(run(p), std::invalid_argument); }
  std::vector<double> validDy() const {
    return std::vector<double>(p.rows() * sz(kModel), 0.5);
  }
};

TEST_F(ReferenceAttentionArgs, ValidProblemDoesNotThrow) {
  EXPECT_NO_THROW(run(p));
  EXPECT_NO_THROW(attentionBackward(p.config, p.shape, p.x, p.params, validDy(),
                                    p.initialState));
}

TEST_F(ReferenceAttentionArgs, ZeroHeadsThrows) {
  p.config.heads = 0;
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, HeadsNotDividingModelThrows) {
  p.config.heads = 4; // 6 % 4 != 0
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, NuBelowOneThrows) {
  p.config.nu = 0;
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, NuAboveTwoDHeadMinusOneThrows) {
  p.config.nu = 6; // dHead = 3: nu <= 5
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, ZeroEpsThrows) {
  p.config.eps = 0.0;
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, NegativeEpsThrows) {
  p.config.eps = -1e-6;
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, NegativeSeqLenThrows) {
  p.shape.seqLen = -1;
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, InputSizeMismatchThrows) {
  p.x.pop_back();
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, QueryWeightSizeMismatchThrows) {
  p.params.wQ.pop_back();
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, KeyWeightSizeMismatchThrows) {
  p.params.wK.push_back(0.0);
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, ValueWeightSizeMismatchThrows) {
  p.params.wV.pop_back();
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, GateWeightSizeMismatchThrows) {
  p.params.wBeta.pop_back();
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, MissingGateWeightForDeltaRuleThrows) {
  p.params.wBeta.clear();
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, OutputWeightSizeMismatchThrows) {
  p.params.wO.pop_back();
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, OutputBiasSizeMismatchThrows) {
  p.params.bO.pop_back();
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, InitialStateSizeMismatchThrows) {
  p.initialState.pop_back();
  expectForwardThrows();
}

TEST_F(ReferenceAttentionArgs, BackwardOutputGradientSizeMismatchThrows) {
  std::vector<double> dy = validDy();
  dy.pop_back();
  EXPECT_THROW(
      attentionBackward(p.config, p.shape, p.x, p.params, dy, p.initialState),
      std::invalid_argument);
}

TEST_F(ReferenceAttentionArgs, BackwardFinalStateGradientSizeMismatchThrows) {
  const std::vector<double> dFinal(p.stateCount() + 1);
  EXPECT_THROW(attentionBackward(p.config, p.shape, p.x, p.params, validDy(),
                                 p.initialState, dFinal),
               std::invalid_argument);
}

TEST_F(ReferenceAttentionArgs, BackwardValidatesParametersToo) {
  p.params.wO.pop_back();
  EXPECT_THROW(attentionBackward(p.config, p.shape, p.x, p.params, validDy(),
                                 p.initialState),
               std::invalid_argument);
}

} // namespace
