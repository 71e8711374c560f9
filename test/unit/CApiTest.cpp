//===- CApiTest.cpp - fwp's C ABI (fwp/CApi.h) ----------------------------===//
//
// The C ABI linked as its users load it (libfwp.so): every failure is a
// status and a message, never an exception or a crash; a run through it
// matches the float64 reference.
//
//===----------------------------------------------------------------------===//

#include "fwp/CApi.h"
#include "fwp/Reference/Reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

std::string lastError() { return fwp_last_error(); }

TEST(CApiTest, Version) { EXPECT_EQ(fwp_capi_version(), FWP_CAPI_VERSION); }

TEST(CApiTest, InvalidDescriptionsNameTheField) {
  struct Case {
    const char *backend, *dtype, *rule;
    int64_t heads, dHead, nu;
    double eps;
    const char *expected;
  } cases[] = {
      {"tpu", "f32", "delta", 2, 4, 1, 1e-6, "backend 'tpu'"},
      {nullptr, "f32", "delta", 2, 4, 1, 1e-6, "backend NULL"},
      {"cpu", "int8", "delta", 2, 4, 1, 1e-6, "dtype 'int8'"},
      {"cpu", "f32", "hebb", 2, 4, 1, 1e-6, "rule 'hebb'"},
      {"cpu", "f32", "delta", 0, 4, 1, 1e-6, "heads"},
      {"cpu", "f32", "delta", 2, 4, 8, 1e-6, "nu"},
      {"cpu", "f32", "delta", 2, 4, 1, -1.0, "eps"},
  };
  for (const Case &c : cases) {
    fwp_attention *a = fwp_attention_create(c.backend, c.dtype, c.rule, c.heads,
                                            c.dHead, c.nu, c.eps, 0);
    EXPECT_EQ(a, nullptr) << c.expected;
    EXPECT_NE(lastError().find(c.expected), std::string::npos)
        << "message: " << lastError();
    EXPECT_EQ(lastError().rfind("fwp_attention_create: ", 0), 0u);
  }
}

TEST(CApiTest, NullModuleAndBuffersAreErrors) {
  float x = 0;
  EXPECT_NE(
      fwp_attention_forward(nullptr, 1, 1, &x, &x, &x, &x, &x, &x, &x, &x), 0);
  EXPECT_NE(lastError().find("NULL"), std::string::npos) << lastError();

  fwp_attention *a =
      fwp_attention_create("cpu", "f32", "delta", 1, 2, 1, 1e-6, 0);
  ASSERT_NE(a, nullptr) << lastError();
  EXPECT_NE(fwp_attention_forward(a, 3, 1, nullptr, &x, &x, &x, &x, &x, &x, &x),
            0);
  EXPECT_NE(lastError().find("x"), std::string::npos) << lastError();
  EXPECT_NE(fwp_attention_forward(a, -1, 1, &x, &x, &x, &x, &x, &x, &x, &x), 0);
  fwp_attention_destroy(a);
  fwp_attention_destroy(nullptr); // allowed, as free(NULL)
}

TEST(CApiTest, ForwardMatchesTheReference) {
  const int64_t steps = 70, batch = 2, heads = 2, dHead = 4;
  const int64_t dm = heads * dHead;
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  auto random = [&](size_t n) {
    std::vector<double> v(n);
    for (double &e : v)
      e = normal(rng) * 0.5;
    return v;
  };
  fwp::ref::AttentionParams p{random(dm * dm), random(dm * dm),
                              random(dm * dm), random(heads * dm),
                              random(dm * dm), random(dm)};
  std::vector<double> x = random(steps * batch * dm);
  fwp::ref::AttentionConfig config;
  config.heads = heads;
  config.nu = 2;
  std::vector<double> expected =
      fwp::ref::attention(config, {steps, batch, dm}, x, p).y;

  fwp_attention *a =
      fwp_attention_create("cpu", "f64", "delta", heads, dHead, 2, 1e-6, 0);
  ASSERT_NE(a, nullptr) << lastError();
  EXPECT_NE(std::string(fwp_attention_describe(a)).find("f64 delta"),
            std::string::npos);
  std::vector<double> y(x.size());
  ASSERT_EQ(fwp_attention_forward(a, steps, batch, x.data(), p.wQ.data(),
                                  p.wK.data(), p.wV.data(), p.wBeta.data(),
                                  p.wO.data(), p.bO.data(), y.data()),
            0)
      << lastError();
  double worst = 0, scale = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    worst = std::max(worst, std::fabs(y[i] - expected[i]));
    scale = std::max(scale, std::fabs(expected[i]));
  }
  EXPECT_LT(worst / scale, 1e-12);
  fwp_attention_destroy(a);
}

// The cached scan stays alive until the process exits, which must not crash
// (an earlier form, on an execution engine, did in static destructors).
TEST(CApiTest, ScanMatchesTheReference) {
  const int64_t steps = 40, batch = 2, heads = 3, d = 4, dValue = 5;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto random = [&](size_t n, double scale) {
    std::vector<double> v(n);
    for (double &e : v)
      e = unit(rng) * scale;
    return v;
  };
  fwp::ref::ScanShape shape{steps, batch, heads, d, dValue};
  size_t rows = steps * batch * heads, states = batch * heads * dValue * d;
  fwp::ref::ScanInputs in{random(rows * d, 0.25), random(rows * d, 0.25),
                          random(rows * dValue, 1.0), random(rows, 1.0),
                          random(states, 1.0)};
  fwp::ref::ScanOutputs expected =
      fwp::ref::scan(fwp::ref::Rule::Delta, shape, in);

  fwp_scan *s = fwp_scan_create("cpu", "f64", "delta", d, dValue, 0, 1e-6, 16);
  ASSERT_NE(s, nullptr) << lastError();
  std::vector<double> y(rows * dValue), finalState(states);
  ASSERT_EQ(fwp_scan_forward(s, steps, batch, heads, in.q.data(), in.k.data(),
                             in.v.data(), in.beta.data(),
                             in.initialState.data(), y.data(),
                             finalState.data()),
            0)
      << lastError();
  auto worst = [](const std::vector<double> &a, const std::vector<double> &b) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      diff = std::max(diff, std::fabs(a[i] - b[i]));
      scale = std::max(scale, std::fabs(b[i]));
    }
    return diff / scale;
  };
  EXPECT_LT(worst(y, expected.y), 1e-12);
  EXPECT_LT(worst(finalState, expected.finalState), 1e-12);

  // No steps: the final state is the initial one.
  std::vector<double> unchanged(states);
  ASSERT_EQ(fwp_scan_forward(s, 0, batch, heads, nullptr, nullptr, nullptr,
                             nullptr, in.initialState.data(), nullptr,
                             unchanged.data()),
            0)
      << lastError();
  EXPECT_EQ(unchanged, in.initialState);
  // The delta rule without beta is an error, not a crash.
  EXPECT_NE(fwp_scan_forward(s, steps, batch, heads, in.q.data(), in.k.data(),
                             in.v.data(), nullptr, nullptr, y.data(),
                             finalState.data()),
            0);
  EXPECT_NE(lastError().find("beta"), std::string::npos) << lastError();
  fwp_scan_destroy(s);
}

} // namespace
