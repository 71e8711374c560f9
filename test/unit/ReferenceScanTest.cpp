//===- ReferenceScanTest.cpp - Fast-weight scan of the reference ----------===//
//
// The scan against hand-computed steps, against causal linear attention
// computed quadratically (sum rule), against the seed's update written
// another way and the chunked form of the math doc (delta rule), all-zero
// keys, and every gradient against central finite differences.
//
//===----------------------------------------------------------------------===//

#include "fwp/Reference/Reference.h"

#include "ReferenceTestUtils.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <tuple>

using namespace fwp::ref;
using namespace fwp::ref::testing;

namespace {

std::size_t sz(int64_t value) { return static_cast<std::size_t>(value); }

std::size_t rowsOf(const ScanShape &s) {
  return sz(s.seqLen * s.batch * s.heads);
}
std::size_t statesOf(const ScanShape &s) {
  return sz(s.batch * s.heads * s.dValue * s.dFeature);
}

/// Random scan inputs shaped like the real ones: non-negative feature rows
/// of sum ~1 (as DPFP gives), values in [-1, 1], gates in (0, 1).
ScanInputs randomInputs(Rule rule, const ScanShape &s, bool withInitial,
                        Rng &rng) {
  const double featureMax = 2.0 / static_cast<double>(s.dFeature);
  ScanInputs in;
  in.q = rng.fill(rowsOf(s) * sz(s.dFeature), 0.0, featureMax);
  in.k = rng.fill(rowsOf(s) * sz(s.dFeature), 0.0, featureMax);
  in.v = rng.fill(rowsOf(s) * sz(s.dValue));
  if (rule == Rule::Delta)
    in.beta = rng.fill(rowsOf(s), 0.05, 0.95);
  if (withInitial)
    in.initialState = rng.fill(statesOf(s));
  return in;
}

/// Zeroes the key of (t, b, h).
void zeroKey(const ScanShape &s, ScanInputs &in, int64_t t, int64_t b,
             int64_t h) {
  const std::size_t offset = sz(((t * s.batch + b) * s.heads + h) * s.dFeature);
  std::fill(in.k.begin() + offset, in.k.begin() + offset + sz(s.dFeature), 0.0);
}

/// The first `steps` steps of a scan (inputs are time-major).
ScanInputs prefix(const ScanShape &s, const ScanInputs &in, int64_t steps) {
  const std::size_t rows = sz(steps * s.batch * s.heads);
  auto head = [](const std::vector<double> &all, std::size_t n) {
    return all.empty() ? all
                       : std::vector<double>(all.begin(), all.begin() + n);
  };
  return ScanInputs{
      head(in.q, rows * sz(s.dFeature)), head(in.k, rows * sz(s.dFeature)),
      head(in.v, rows * sz(s.dValue)), head(in.beta, rows), in.initialState};
}

//===----------------------------------------------------------------------===//
// Hand-computed steps.
//===----------------------------------------------------------------------===//

// T = 2, D = 2, d_v = 1, W_0 = 0.
//   step 1: K = [1, 0], v = 2, beta = 0.5, Q = [1, 1]
//     delta: vbar = 0, W_1 = 0.5 * (2 - 0) * [1, 0] = [1, 0]; y = 1
//     sum:   W_1 = 2 * [1, 0] = [2, 0];                       y = 2
//   step 2: K = [0.5, 0.5], v = 3, beta = 1, Q = [0, 1]
//     delta: vbar = W_1 K = 0.5, W_2 = [1, 0] + 2.5 * [0.5, 0.5]
//            = [2.25, 1.25]; y = 1.25
//     sum:   W_2 = [2, 0] + 3 * [0.5, 0.5] = [3.5, 1.5];      y = 1.5
ScanInputs handInputs() {
  return ScanInputs{{1, 1, 0, 1}, {1, 0, 0.5, 0.5}, {2, 3}, {0.5, 1.0}, {}};
}
const ScanShape handShape{2, 1, 1, 2, 1};

TEST(ReferenceScan, DeltaRuleHandValues) {
  const ScanOutputs out = scan(Rule::Delta, handShape, handInputs());
  EXPECT_EQ(out.y, (std::vector<double>{1.0, 1.25}));
  EXPECT_EQ(out.finalState, (std::vector<double>{2.25, 1.25}));
}

TEST(ReferenceScan, SumRuleHandValues) {
  ScanInputs in = handInputs();
  in.beta.clear(); // the sum rule has no gate
  const ScanOutputs out = scan(Rule::Sum, handShape, in);
  EXPECT_EQ(out.y, (std::vector<double>{2.0, 1.5}));
  EXPECT_EQ(out.finalState, (std::vector<double>{3.5, 1.5}));
}

// The sum rule ignores beta when one is given.
TEST(ReferenceScan, SumRuleIgnoresBeta) {
  ScanInputs in = handInputs();
  const ScanOutputs withBeta = scan(Rule::Sum, handShape, in);
  in.beta.clear();
  EXPECT_EQ(withBeta.y, scan(Rule::Sum, handShape, in).y);
}

//===----------------------------------------------------------------------===//
// Independent forward computations.
//===----------------------------------------------------------------------===//

/// The seeds' equivalence: y_t = S_0 Q_t + sum_{s<=t} v_s <K_s, Q_t> and
/// W_T = S_0 + sum_s v_s K_s^T, computed quadratically with no state.
ScanOutputs causalLinearAttention(const ScanShape &s, const ScanInputs &in) {
  const std::size_t T = sz(s.seqLen), B = sz(s.batch), H = sz(s.heads),
                    D = sz(s.dFeature), V = sz(s.dValue);
  auto row = [&](std::size_t t, std::size_t b, std::size_t h) {
    return (t * B + b) * H + h;
  };
  ScanOutputs out{std::vector<double>(rowsOf(s) * V, 0.0),
                  std::vector<double>(statesOf(s), 0.0)};
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t state = (b * H + h) * V * D;
      for (std::size_t t = 0; t < T; ++t) {
        const double *query = &in.q[row(t, b, h) * D];
        double *y = &out.y[row(t, b, h) * V];
        for (std::size_t r = 0; r < V && !in.initialState.empty(); ++r)
          for (std::size_t c = 0; c < D; ++c)
            y[r] += in.initialState[state + r * D + c] * query[c];
        for (std::size_t src = 0; src <= t; ++src) {
          double score = 0.0;
          for (std::size_t c = 0; c < D; ++c)
            score += in.k[row(src, b, h) * D + c] * query[c];
          for (std::size_t r = 0; r < V; ++r)
            y[r] += in.v[row(src, b, h) * V + r] * score;
        }
      }
      for (std::size_t r = 0; r < V; ++r) {
        for (std::size_t c = 0; c < D; ++c) {
          double w = in.initialState.empty()
                         ? 0.0
                         : in.initialState[state + r * D + c];
          for (std::size_t t = 0; t < T; ++t)
            w += in.v[row(t, b, h) * V + r] * in.k[row(t, b, h) * D + c];
          out.finalState[state + r * D + c] = w;
        }
      }
    }
  }
  return out;
}

TEST(ReferenceScan, SumRuleEqualsCausalLinearAttention) {
  Rng rng(21);
  for (bool withInitial : {false, true}) {
    const ScanShape s{9, 2, 3, 8, 3};
    const ScanInputs in = randomInputs(Rule::Sum, s, withInitial, rng);
    const ScanOutputs out = scan(Rule::Sum, s, in);
    const ScanOutputs expected = causalLinearAttention(s, in);
    const double yError = relativeError(out.y, expected.y);
    const double stateError =
        relativeError(out.finalState, expected.finalState);
    EXPECT_LT(yError, 1e-12);
    EXPECT_LT(stateError, 1e-12);
    recordError(withInitial ? "yErrorWithInitial" : "yError", yError);
  }
}

// Same check with real DPFP features of random keys and queries.
TEST(ReferenceScan, SumRuleEqualsCausalLinearAttentionOnDpfpFeatures) {
  Rng rng(22);
  const int64_t dHead = 3, nu = 2;
  const ScanShape s{7, 2, 2, 2 * dHead * nu, dHead};
  ScanInputs in;
  for (std::size_t n = 0; n < rowsOf(s); ++n) {
    const std::vector<double> q = dpfp(rng.fill(dHead), nu, 1e-6);
    const std::vector<double> k = dpfp(rng.fill(dHead), nu, 1e-6);
    in.q.insert(in.q.end(), q.begin(), q.end());
    in.k.insert(in.k.end(), k.begin(), k.end());
  }
  in.v = rng.fill(rowsOf(s) * dHead);
  in.initialState = rng.fill(statesOf(s));
  const ScanOutputs out = scan(Rule::Sum, s, in);
  const ScanOutputs expected = causalLinearAttention(s, in);
  EXPECT_LT(relativeError(out.y, expected.y), 1e-12);
  EXPECT_LT(relativeError(out.finalState, expected.finalState), 1e-12);
}

/// The delta rule as the paper writes it: retrieve vbar = W K, interpolate
/// v_new = beta v + (1 - beta) vbar, then replace the old binding:
/// W <- W - vbar K^T + v_new K^T. Algebraically the reference's update.
ScanOutputs deltaRuleAsInPaper(const ScanShape &s, const ScanInputs &in) {
  const std::size_t T = sz(s.seqLen), BH = sz(s.batch * s.heads),
                    D = sz(s.dFeature), V = sz(s.dValue);
  ScanOutputs out{std::vector<double>(rowsOf(s) * V, 0.0),
                  in.initialState.empty() ? std::vector<double>(statesOf(s))
                                          : in.initialState};
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t bh = 0; bh < BH; ++bh) {
      const std::size_t row = t * BH + bh;
      double *w = &out.finalState[bh * V * D];
      const double beta = in.beta[row];
      for (std::size_t r = 0; r < V; ++r) {
        double vbar = 0.0;
        for (std::size_t c = 0; c < D; ++c)
          vbar += w[r * D + c] * in.k[row * D + c];
        const double vNew = beta * in.v[row * V + r] + (1.0 - beta) * vbar;
        for (std::size_t c = 0; c < D; ++c)
          w[r * D + c] += (vNew - vbar) * in.k[row * D + c];
        for (std::size_t c = 0; c < D; ++c)
          out.y[row * V + r] += w[r * D + c] * in.q[row * D + c];
      }
    }
  }
  return out;
}

TEST(ReferenceScan, DeltaRuleEqualsPaperForm) {
  Rng rng(23);
  const ScanShape s{7, 2, 3, 6, 4};
  const ScanInputs in = randomInputs(Rule::Delta, s, true, rng);
  const ScanOutputs out = scan(Rule::Delta, s, in);
  const ScanOutputs expected = deltaRuleAsInPaper(s, in);
  EXPECT_LT(relativeError(out.y, expected.y), 1e-12);
  EXPECT_LT(relativeError(out.finalState, expected.finalState), 1e-12);
}

/// The chunked delta rule of delta-rule-math.md section 4 for one (b, h):
/// M = diag(b) stril(K K^T); (I + M) Wt = diag(b) K, (I + M) Ut = diag(b) V
/// by forward substitution; U = Ut - Wt S^T; Y = Q S^T + tril(Q K^T) U;
/// S' = S + U^T K.
ScanOutputs chunkedDeltaRule(const ScanShape &s, const ScanInputs &in,
                             std::size_t chunk) {
  const std::size_t T = sz(s.seqLen), BH = sz(s.batch * s.heads),
                    D = sz(s.dFeature), V = sz(s.dValue);
  ScanOutputs out{std::vector<double>(rowsOf(s) * V, 0.0),
                  in.initialState.empty() ? std::vector<double>(statesOf(s))
                                          : in.initialState};
  auto dotRows = [&](const double *a, const double *b) {
    double total = 0.0;
    for (std::size_t c = 0; c < D; ++c)
      total += a[c] * b[c];
    return total;
  };
  for (std::size_t bh = 0; bh < BH; ++bh) {
    double *S = &out.finalState[bh * V * D];
    for (std::size_t start = 0; start < T; start += chunk) {
      const std::size_t C = std::min(chunk, T - start);
      auto K = [&](std::size_t i) {
        return &in.k[((start + i) * BH + bh) * D];
      };
      auto Q = [&](std::size_t i) {
        return &in.q[((start + i) * BH + bh) * D];
      };
      auto Vv = [&](std::size_t i) {
        return &in.v[((start + i) * BH + bh) * V];
      };
      auto b = [&](std::size_t i) { return in.beta[(start + i) * BH + bh]; };
      std::vector<double> Wt(C * D), Ut(C * V);
      for (std::size_t i = 0; i < C; ++i) {
        for (std::size_t c = 0; c < D; ++c)
          Wt[i * D + c] = b(i) * K(i)[c];
        for (std::size_t r = 0; r < V; ++r)
          Ut[i * V + r] = b(i) * Vv(i)[r];
        for (std::size_t j = 0; j < i; ++j) {
          const double m = b(i) * dotRows(K(i), K(j));
          for (std::size_t c = 0; c < D; ++c)
            Wt[i * D + c] -= m * Wt[j * D + c];
          for (std::size_t r = 0; r < V; ++r)
            Ut[i * V + r] -= m * Ut[j * V + r];
        }
      }
      std::vector<double> U(C * V);
      for (std::size_t i = 0; i < C; ++i)
        for (std::size_t r = 0; r < V; ++r)
          U[i * V + r] = Ut[i * V + r] - dotRows(S + r * D, &Wt[i * D]);
      for (std::size_t i = 0; i < C; ++i) {
        double *y = &out.y[((start + i) * BH + bh) * V];
        for (std::size_t r = 0; r < V; ++r) {
          y[r] = dotRows(S + r * D, Q(i));
          for (std::size_t j = 0; j <= i; ++j)
            y[r] += dotRows(Q(i), K(j)) * U[j * V + r];
        }
      }
      for (std::size_t i = 0; i < C; ++i)
        for (std::size_t r = 0; r < V; ++r)
          for (std::size_t c = 0; c < D; ++c)
            S[r * D + c] += U[i * V + r] * K(i)[c];
    }
  }
  return out;
}

TEST(ReferenceScan, DeltaRuleEqualsChunkedForm) {
  Rng rng(24);
  const ScanShape s{7, 2, 2, 6, 3};
  const ScanInputs in = randomInputs(Rule::Delta, s, true, rng);
  const ScanOutputs out = scan(Rule::Delta, s, in);
  for (std::size_t chunk : {1, 3, 4, 7, 16}) {
    const ScanOutputs expected = chunkedDeltaRule(s, in, chunk);
    EXPECT_LT(relativeError(out.y, expected.y), 1e-12) << "chunk " << chunk;
    EXPECT_LT(relativeError(out.finalState, expected.finalState), 1e-12)
        << "chunk " << chunk;
  }
}

//===----------------------------------------------------------------------===//
// All-zero keys.
//===----------------------------------------------------------------------===//

class ReferenceScanZeroKey : public ::testing::TestWithParam<Rule> {};

// A step whose key is all zero writes nothing: the state after it is
// bit-identical to the state before it, and its output is that state read
// with the step's query.
TEST_P(ReferenceScanZeroKey, StepWritesNothing) {
  const Rule rule = GetParam();
  Rng rng(31);
  const ScanShape s{5, 2, 2, 6, 3};
  const int64_t zeroStep = 2;
  ScanInputs in = randomInputs(rule, s, true, rng);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      zeroKey(s, in, zeroStep, b, h);

  const ScanOutputs full = scan(rule, s, in);
  ASSERT_TRUE(allFinite(full.y));
  ASSERT_TRUE(allFinite(full.finalState));

  ScanShape before = s, through = s;
  before.seqLen = zeroStep;
  through.seqLen = zeroStep + 1;
  const ScanOutputs outBefore = scan(rule, before, prefix(s, in, zeroStep));
  const ScanOutputs outThrough =
      scan(rule, through, prefix(s, in, zeroStep + 1));
  EXPECT_EQ(outBefore.finalState, outThrough.finalState);

  const std::size_t D = sz(s.dFeature), V = sz(s.dValue);
  for (std::size_t bh = 0; bh < sz(s.batch * s.heads); ++bh) {
    const std::size_t row = sz(zeroStep * s.batch * s.heads) + bh;
    for (std::size_t r = 0; r < V; ++r) {
      double expected = 0.0;
      for (std::size_t c = 0; c < D; ++c)
        expected +=
            outBefore.finalState[bh * V * D + r * D + c] * in.q[row * D + c];
      EXPECT_NEAR(full.y[row * V + r], expected, 1e-15);
    }
  }
}

std::string ruleCaseName(const ::testing::TestParamInfo<Rule> &param) {
  return param.param == Rule::Delta ? "Delta" : "Sum";
}

INSTANTIATE_TEST_SUITE_P(Rules, ReferenceScanZeroKey,
                         ::testing::Values(Rule::Delta, Rule::Sum),
                         ruleCaseName);

//===----------------------------------------------------------------------===//
// Gradients against central finite differences.
//===----------------------------------------------------------------------===//

/// Variants of one gradient check: optional initial state, optional final
/// state gradient, optional all-zero keys.
enum class Variant {
  Plain,
  WithStates,
  WithStatesAndZeroKeys,
  ZeroKeysNoInitial
};

using GradientCase = std::tuple<Rule, int64_t /*heads*/, Variant>;

class ReferenceScanGradient : public ::testing::TestWithParam<GradientCase> {};

// Loss L = <dy, y> + <dFinal, finalState>, so dL/d(input) is exactly what
// scanBackward returns for (dy, dFinal). h = 1e-5: the scan is a polynomial
// of low degree in each input, central differences are accurate to ~1e-10.
TEST_P(ReferenceScanGradient, MatchesFiniteDifferences) {
  // Plain variables, not a structured binding: C++17 lambdas cannot
  // capture those.
  const Rule rule = std::get<0>(GetParam());
  const int64_t heads = std::get<1>(GetParam());
  const Variant variant = std::get<2>(GetParam());
  const bool withInitial = variant == Variant::WithStates ||
                           variant == Variant::WithStatesAndZeroKeys;
  const bool withDFinal = variant != Variant::Plain;
  const bool zeroKeys = variant == Variant::WithStatesAndZeroKeys ||
                        variant == Variant::ZeroKeysNoInitial;
  // Odd lengths, batch 1 or 2, feature and value widths that differ.
  const ScanShape s{heads == 2 ? 5 : 7, heads == 1 ? 1 : 2, heads,
                    2 + 2 * heads, 3};
  Rng rng(100 + 10 * heads + static_cast<int>(variant));
  ScanInputs in = randomInputs(rule, s, withInitial, rng);
  if (zeroKeys) {
    zeroKey(s, in, 0, 0, 0);
    zeroKey(s, in, 3, s.batch - 1, s.heads - 1);
    zeroKey(s, in, s.seqLen - 1, 0, s.heads - 1);
  }
  const std::vector<double> dy = rng.fill(rowsOf(s) * sz(s.dValue));
  const std::vector<double> dFinal =
      withDFinal ? rng.fill(statesOf(s)) : std::vector<double>();

  const ScanGradients grads = scanBackward(rule, s, in, dy, dFinal);
  ASSERT_TRUE(allFinite(grads.q) && allFinite(grads.k) && allFinite(grads.v) &&
              allFinite(grads.beta) && allFinite(grads.initialState));

  auto lossWith = [&](std::vector<double> ScanInputs::*field) {
    return [&, field](const std::vector<double> &value) {
      ScanInputs perturbed = in;
      perturbed.*field = value;
      const ScanOutputs out = scan(rule, s, perturbed);
      return innerProduct(dy, out.y) +
             (dFinal.empty() ? 0.0 : innerProduct(dFinal, out.finalState));
    };
  };
  auto check = [&](const char *name, std::vector<double> ScanInputs::*field,
                   const std::vector<double> &at,
                   const std::vector<double> &analytic) {
    const double error =
        relativeError(analytic, centralDifference(lossWith(field), at, 1e-5));
    EXPECT_LT(error, 1e-7) << name;
    recordError(std::string(name) + "RelError", error);
  };
  check("q", &ScanInputs::q, in.q, grads.q);
  check("k", &ScanInputs::k, in.k, grads.k);
  check("v", &ScanInputs::v, in.v, grads.v);
  if (rule == Rule::Delta)
    check("beta", &ScanInputs::beta, in.beta, grads.beta);
  else
    EXPECT_TRUE(grads.beta.empty());
  // An empty initial state is the zero state: differentiate there.
  const std::vector<double> initial =
      withInitial ? in.initialState : std::vector<double>(statesOf(s), 0.0);
  check("initialState", &ScanInputs::initialState, initial, grads.initialState);
}

std::string
gradientCaseName(const ::testing::TestParamInfo<GradientCase> &param) {
  const Rule rule = std::get<0>(param.param);
  const int64_t heads = std::get<1>(param.param);
  const Variant variant = std::get<2>(param.param);
  static const char *const variants[] = {
      "Plain", "WithStates", "WithStatesAndZeroKeys", "ZeroKeysNoInitial"};
  return std::string(rule == Rule::Delta ? "Delta" : "Sum") + "Heads" +
         std::to_string(heads) + variants[static_cast<int>(variant)];
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ReferenceScanGradient,
    ::testing::Combine(::testing::Values(Rule::Delta, Rule::Sum),
                       ::testing::Values<int64_t>(1, 2, 3),
                       ::testing::Values(Variant::Plain, Variant::WithStates,
                                         Variant::WithStatesAndZeroKeys,
                                         Variant::ZeroKeysNoInitial)),
    gradientCaseName);

//===----------------------------------------------------------------------===//
// Argument checks.
//===----------------------------------------------------------------------===//

const ScanShape argShape{3, 2, 2, 4, 3};

ScanInputs validInputs(Rule rule = Rule::Delta) {
  Rng rng(5);
  return randomInputs(rule, argShape, true, rng);
}

TEST(ReferenceScanArgs, ValidInputsDoNotThrow) {
  EXPECT_NO_THROW(scan(Rule::Delta, argShape, validInputs()));
  EXPECT_NO_THROW(scan(Rule::Sum, argShape, validInputs(Rule::Sum)));
}

TEST(ReferenceScanArgs, NegativeSizeThrows) {
  ScanShape s = argShape;
  s.seqLen = -1;
  EXPECT_THROW(scan(Rule::Delta, s, validInputs()), std::invalid_argument);
}

TEST(ReferenceScanArgs, QuerySizeMismatchThrows) {
  ScanInputs in = validInputs();
  in.q.pop_back();
  EXPECT_THROW(scan(Rule::Delta, argShape, in), std::invalid_argument);
}

TEST(ReferenceScanArgs, KeySizeMismatchThrows) {
  ScanInputs in = validInputs();
  in.k.push_back(0.0);
  EXPECT_THROW(scan(Rule::Delta, argShape, in), std::invalid_argument);
}

TEST(ReferenceScanArgs, ValueSizeMismatchThrows) {
  ScanInputs in = validInputs();
  in.v.pop_back();
  EXPECT_THROW(scan(Rule::Delta, argShape, in), std::invalid_argument);
}

TEST(ReferenceScanArgs, MissingBetaForDeltaRuleThrows) {
  ScanInputs in = validInputs();
  in.beta.clear();
  EXPECT_THROW(scan(Rule::Delta, argShape, in), std::invalid_argument);
}

TEST(ReferenceScanArgs, WrongSizedBetaForSumRuleThrows) {
  ScanInputs in = validInputs();
  in.beta.pop_back();
  EXPECT_THROW(scan(Rule::Sum, argShape, in), std::invalid_argument);
}

TEST(ReferenceScanArgs, InitialStateSizeMismatchThrows) {
  ScanInputs in = validInputs();
  in.initialState.pop_back();
  EXPECT_THROW(scan(Rule::Delta, argShape, in), std::invalid_argument);
}

TEST(ReferenceScanArgs, BackwardOutputGradientSizeMismatchThrows) {
  const std::vector<double> dy(rowsOf(argShape) * sz(argShape.dValue) + 1);
  EXPECT_THROW(scanBackward(Rule::Delta, argShape, validInputs(), dy, {}),
               std::invalid_argument);
}

TEST(ReferenceScanArgs, BackwardFinalStateGradientSizeMismatchThrows) {
  const std::vector<double> dy(rowsOf(argShape) * sz(argShape.dValue));
  const std::vector<double> dFinal(statesOf(argShape) - 1);
  EXPECT_THROW(scanBackward(Rule::Delta, argShape, validInputs(), dy, dFinal),
               std::invalid_argument);
}

TEST(ReferenceScanArgs, BackwardValidatesInputsToo) {
  ScanInputs in = validInputs();
  in.v.pop_back();
  const std::vector<double> dy(rowsOf(argShape) * sz(argShape.dValue));
  EXPECT_THROW(scanBackward(Rule::Delta, argShape, in, dy, {}),
               std::invalid_argument);
}

} // namespace
