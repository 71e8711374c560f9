//===- CApiTest.cpp - fwp's C ABI (fwp/CApi.h) ----------------------------===//
//
// The C ABI linked as its users load it (libfwp.so): every failure is a
// status and a message, never an exception or a crash; a run through it
// matches the float64 reference.
//
//===----------------------------------------------------------------------===//

#include "fwp/CApi.h"
#include "fwp/Reference/Reference.h"
#include "fwp/Runtime/Cuda.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
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

/// `n` values drawn uniformly from [lo, hi).
std::vector<double> uniformValues(std::mt19937 &rng, size_t n, double lo,
                                  double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double &e : v)
    e = dist(rng);
  return v;
}

// The cached scan stays alive until the process exits, which must not crash
// (an earlier form, on an execution engine, did in static destructors).
TEST(CApiTest, ScanMatchesTheReference) {
  const int64_t steps = 40, batch = 2, heads = 3, d = 4, dValue = 5;
  std::mt19937 rng(11);
  auto random = [&](size_t n, double scale) {
    return uniformValues(rng, n, 0.0, scale);
  };
  fwp::ref::ScanShape shape{steps, batch, heads, d, dValue};
  size_t rows = steps * batch * heads, states = batch * heads * dValue * d;
  fwp::ref::ScanInputs in{random(rows * d, 0.25), random(rows * d, 0.25),
                          random(rows * dValue, 1.0), random(rows, 1.0),
                          random(states, 1.0)};
  fwp::ref::ScanOutputs expected =
      fwp::ref::scan(fwp::ref::Rule::Delta, shape, in);

  fwp_scan *s = fwp_scan_create("cpu", "f64", "delta", "steps_first", d, dValue,
                                0, 1e-6, 16);
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

/// A per-step tensor [first, second, rest...] as [second, first, rest...]:
/// steps first to batch first and back.
std::vector<double> swapLeading(const std::vector<double> &a, int64_t first,
                                int64_t second) {
  size_t rest = a.size() / (first * second);
  std::vector<double> out(a.size());
  for (int64_t i = 0; i < first; ++i)
    for (int64_t j = 0; j < second; ++j)
      std::copy_n(a.begin() + (i * second + j) * rest, rest,
                  out.begin() + (j * first + i) * rest);
  return out;
}

/// DPFP of each d-wide row of `x`, or (with `g`, the features' gradient)
/// its backward: the float64 reference, row by row.
std::vector<double> dpfpRows(const std::vector<double> &x, int64_t d,
                             int64_t nu,
                             const std::vector<double> *g = nullptr) {
  std::vector<double> out;
  for (size_t r = 0; r * d < x.size(); ++r) {
    std::vector<double> row(x.begin() + r * d, x.begin() + (r + 1) * d);
    std::vector<double> mapped;
    if (g) {
      size_t width = 2 * d * nu;
      std::vector<double> gRow(g->begin() + r * width,
                               g->begin() + (r + 1) * width);
      mapped = fwp::ref::dpfpBackward(row, gRow, nu, 1e-6);
    } else {
      mapped = fwp::ref::dpfp(row, nu, 1e-6);
    }
    out.insert(out.end(), mapped.begin(), mapped.end());
  }
  return out;
}

double relativeError(const std::vector<double> &a,
                     const std::vector<double> &b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return diff / scale;
}

// fla's layout, [B, T, H, *], read and written in place by kernels compiled
// for it: the same scan and gradients as the float64 reference's on the
// steps-first copies, with DPFP fused (q and k raw) and T over two chunks
// plus a partial one.
TEST(CApiTest, BatchFirstScanMatchesTheReference) {
  const int64_t steps = 37, batch = 3, heads = 2, d = 4, dValue = 5, nu = 1;
  const int64_t dFeature = 2 * d * nu;
  std::mt19937 rng(12);
  auto random = [&](size_t n, double scale) {
    return uniformValues(rng, n, -scale, scale);
  };
  size_t rows = steps * batch * heads,
         states = batch * heads * dValue * dFeature;
  fwp::ref::ScanInputs in{random(rows * d, 0.5), random(rows * d, 0.5),
                          random(rows * dValue, 1.0), random(rows, 1.0),
                          random(states, 0.5)};
  for (double &b : in.beta)
    b = 1.0 / (1.0 + std::exp(-b));
  std::vector<double> dy = random(rows * dValue, 1.0),
                      dFinal = random(states, 1.0);
  // The reference on DPFP features, its q and k gradients taken back to
  // the raw vectors.
  fwp::ref::ScanInputs features = in;
  features.q = dpfpRows(in.q, d, nu);
  features.k = dpfpRows(in.k, d, nu);
  fwp::ref::ScanShape shape{steps, batch, heads, dFeature, dValue};
  fwp::ref::ScanOutputs expected =
      fwp::ref::scan(fwp::ref::Rule::Delta, shape, features);
  fwp::ref::ScanGradients grads = fwp::ref::scanBackward(
      fwp::ref::Rule::Delta, shape, features, dy, dFinal);
  std::vector<double> dq = dpfpRows(in.q, d, nu, &grads.q);
  std::vector<double> dk = dpfpRows(in.k, d, nu, &grads.k);

  fwp_scan *s = fwp_scan_create("cpu", "f64", "delta", "batch_first", d, dValue,
                                nu, 1e-6, 16);
  ASSERT_NE(s, nullptr) << lastError();
  auto batchFirst = [&](const std::vector<double> &a) {
    return swapLeading(a, steps, batch);
  };
  auto stepsFirst = [&](const std::vector<double> &a) {
    return swapLeading(a, batch, steps);
  };
  std::vector<double> q = batchFirst(in.q), k = batchFirst(in.k),
                      v = batchFirst(in.v), beta = batchFirst(in.beta),
                      dyB = batchFirst(dy);
  std::vector<double> y(rows * dValue), finalState(states);
  ASSERT_EQ(fwp_scan_forward(s, steps, batch, heads, q.data(), k.data(),
                             v.data(), beta.data(), in.initialState.data(),
                             y.data(), finalState.data()),
            0)
      << lastError();
  EXPECT_LT(relativeError(stepsFirst(y), expected.y), 1e-12);
  EXPECT_LT(relativeError(finalState, expected.finalState), 1e-12);

  std::vector<double> gq(rows * d), gk(rows * d), gv(rows * dValue),
      gbeta(rows), gInitial(states);
  ASSERT_EQ(fwp_scan_backward(s, steps, batch, heads, q.data(), k.data(),
                              v.data(), beta.data(), in.initialState.data(),
                              dyB.data(), dFinal.data(), gq.data(), gk.data(),
                              gv.data(), gbeta.data(), gInitial.data()),
            0)
      << lastError();
  EXPECT_LT(relativeError(stepsFirst(gq), dq), 1e-10);
  EXPECT_LT(relativeError(stepsFirst(gk), dk), 1e-10);
  EXPECT_LT(relativeError(stepsFirst(gv), grads.v), 1e-10);
  EXPECT_LT(relativeError(stepsFirst(gbeta), grads.beta), 1e-10);
  EXPECT_LT(relativeError(gInitial, grads.initialState), 1e-10);
  fwp_scan_destroy(s);
}

TEST(CApiTest, ScanRefusesAnUnknownLayout) {
  EXPECT_EQ(
      fwp_scan_create("cpu", "f64", "delta", "heads_first", 4, 4, 0, 1e-6, 16),
      nullptr);
  EXPECT_NE(lastError().find("layout 'heads_first', expected 'steps_first' or "
                             "'batch_first'"),
            std::string::npos)
      << lastError();
}

} // namespace

namespace {

/// Device memory for a C ABI call: the values rounded to float32.
fwp::rt::DeviceBuffer onDevice(const std::vector<double> &values) {
  return fwp::rt::DeviceBuffer::fromHost(
      std::vector<float>(values.begin(), values.end()));
}

std::vector<double> fromDevice(const fwp::rt::DeviceBuffer &buffer) {
  std::vector<float> values = buffer.toHost<float>();
  return std::vector<double>(values.begin(), values.end());
}

const void *address(const fwp::rt::DeviceBuffer &buffer) {
  return reinterpret_cast<const void *>(buffer.ptr());
}
void *address(fwp::rt::DeviceBuffer &buffer) {
  return reinterpret_cast<void *>(buffer.ptr());
}

/// A stream-ordered allocator as PyTorch's would be, counting its calls.
struct CountingAllocator {
  std::vector<std::unique_ptr<fwp::rt::DeviceBuffer>> buffers;
  int released = 0;
  static uint64_t alloc(void *user, uint64_t bytes) {
    auto *self = static_cast<CountingAllocator *>(user);
    self->buffers.push_back(std::make_unique<fwp::rt::DeviceBuffer>(bytes));
    return self->buffers.back()->ptr();
  }
  static void release(void *user, uint64_t) {
    ++static_cast<CountingAllocator *>(user)->released;
  }
};

// The *_cuda calls on memory the CUDA driver allocated (on the stand-in
// driver in `make test`): the forward and every gradient against the
// float64 reference, with the driver's own scratch and with a caller's
// stream-ordered allocator.
TEST(CApiTest, CudaCallsOnDeviceMemoryMatchTheReference) {
  std::string whyNot;
  if (!fwp::rt::cudaUsable(&whyNot))
    GTEST_SKIP() << "no usable CUDA GPU: " << whyNot;
  const int64_t steps = 21, batch = 2, heads = 2, dHead = 4, dm = heads * dHead;
  std::mt19937 rng(23);
  auto random = [&](size_t n) { return uniformValues(rng, n, -0.5, 0.5); };
  fwp::ref::AttentionParams p{random(dm * dm), random(dm * dm),
                              random(dm * dm), random(heads * dm),
                              random(dm * dm), random(dm)};
  std::vector<double> x = random(steps * batch * dm), dy = random(x.size());
  fwp::ref::AttentionConfig config;
  config.heads = heads;
  config.nu = 1;
  fwp::ref::AttentionShape shape{steps, batch, dm};
  std::vector<double> expectedY = fwp::ref::attention(config, shape, x, p).y;
  fwp::ref::AttentionGradients expected =
      fwp::ref::attentionBackward(config, shape, x, p, dy);

  fwp_attention *a =
      fwp_attention_create("cuda", "f32", "delta", heads, dHead, 1, 1e-6, 8);
  ASSERT_NE(a, nullptr) << lastError();
  fwp::rt::DeviceBuffer dx_ = onDevice(x), wq = onDevice(p.wQ),
                        wk = onDevice(p.wK), wv = onDevice(p.wV),
                        wb = onDevice(p.wBeta), wo = onDevice(p.wO),
                        bo = onDevice(p.bO), ddy = onDevice(dy),
                        y(x.size() * 4), dx(x.size() * 4), dwq(p.wQ.size() * 4),
                        dwk(p.wK.size() * 4), dwv(p.wV.size() * 4),
                        dwb(p.wBeta.size() * 4), dwo(p.wO.size() * 4),
                        dbo(p.bO.size() * 4);
  CountingAllocator allocator;
  fwp_cuda_call driverScratch{nullptr, nullptr, nullptr, nullptr};
  fwp_cuda_call callerScratch{nullptr, CountingAllocator::alloc,
                              CountingAllocator::release, &allocator};
  for (const fwp_cuda_call *call : {&driverScratch, &callerScratch}) {
    ASSERT_EQ(fwp_attention_forward_cuda(a, call, steps, batch, address(dx_),
                                         address(wq), address(wk), address(wv),
                                         address(wb), address(wo), address(bo),
                                         address(y)),
              0)
        << lastError();
    ASSERT_EQ(fwp_attention_backward_cuda(
                  a, call, steps, batch, address(dx_), address(wq), address(wk),
                  address(wv), address(wb), address(wo), address(bo),
                  address(ddy), address(dx), address(dwq), address(dwk),
                  address(dwv), address(dwb), address(dwo), address(dbo)),
              0)
        << lastError();
    fwp::rt::Context::primary().synchronize();
    EXPECT_LE(relativeError(fromDevice(y), expectedY), 1e-5);
    const std::pair<const fwp::rt::DeviceBuffer *, const std::vector<double> *>
        gradients[] = {{&dx, &expected.x},      {&dwq, &expected.wQ},
                       {&dwk, &expected.wK},    {&dwv, &expected.wV},
                       {&dwb, &expected.wBeta}, {&dwo, &expected.wO},
                       {&dbo, &expected.bO}};
    for (const auto &[got, want] : gradients)
      EXPECT_LE(relativeError(fromDevice(*got), *want), 1e-4);
  }
  EXPECT_GT(allocator.buffers.size(), 0u);
  EXPECT_EQ(allocator.released, int(allocator.buffers.size()));
  fwp_attention_destroy(a);
}

} // namespace
