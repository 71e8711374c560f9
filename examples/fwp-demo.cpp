//===- fwp-demo.cpp - The compiled module on random inputs ----------------===//
//
//   fwp-demo
//
// Compiles FastWeightsAttention (delta rule, T=256, B=2, d_model=64, 4 heads,
// DPFP nu=2, float32) for the best backend (CUDA if a device is usable and
// the CUDA backend compiles, the CPU otherwise), runs its forward on random
// inputs with a fixed seed, and checks the output against the float64
// reference.
//
// Exit status: 0 if the relative error (max |y - y_ref| / max |y_ref|) is at
// most 1e-4; 1 otherwise or on any failure.
//
//===----------------------------------------------------------------------===//

#include "fwp/JIT/JIT.h"
#include "fwp/Reference/Reference.h"
#include "fwp/Runtime/Driver.h"
#include "fwp/Support/Random.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

constexpr int64_t kSeqLen = 256, kBatch = 2, kDModel = 64, kHeads = 4, kNu = 2;
constexpr double kTolerance = 1e-4;

using Random = fwp::SplitMix64;

/// float32 values for the kernel, the same values widened for the reference.
struct Tensor {
  std::vector<float> f32;
  std::vector<double> f64;
};

Tensor randomTensor(Random &rng, int64_t count, double stddev) {
  Tensor t{std::vector<float>(count), std::vector<double>(count)};
  for (int64_t i = 0; i < count; ++i) {
    t.f32[i] = static_cast<float>(stddev * rng.normal());
    t.f64[i] = t.f32[i];
  }
  return t;
}

double seconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

fwp::jit::KernelDesc describe(fwp::jit::Backend backend) {
  fwp::jit::KernelDesc desc;
  desc.rule = fwp::jit::Rule::Delta;
  desc.nu = kNu;
  desc.heads = kHeads;
  desc.dHead = kDModel / kHeads;
  desc.dtype = fwp::jit::DType::F32;
  desc.backend = backend;
  return desc;
}

/// Compiles for CUDA if that works, else for the CPU; `why` says why.
std::shared_ptr<const fwp::jit::CompiledAttention>
compileBest(std::string &why) {
  std::string notUsable;
  if (!fwp::rt::cudaUsable(&notUsable)) {
    why = fmt::format("no usable CUDA device: {}", notUsable);
  } else {
    try {
      auto kernel = fwp::jit::compile(describe(fwp::jit::Backend::Cuda));
      why = "a CUDA device is usable";
      return kernel;
    } catch (const std::exception &e) {
      why = fmt::format("CUDA device usable, but: {}", e.what());
    }
  }
  return fwp::jit::compile(describe(fwp::jit::Backend::Cpu));
}

int runDemo() {
  Random rng(20210211);
  const double w = 1.0 / std::sqrt(static_cast<double>(kDModel));
  Tensor x = randomTensor(rng, kSeqLen * kBatch * kDModel, 1.0);
  Tensor wQ = randomTensor(rng, kDModel * kDModel, w);
  Tensor wK = randomTensor(rng, kDModel * kDModel, w);
  Tensor wV = randomTensor(rng, kDModel * kDModel, w);
  Tensor wBeta = randomTensor(rng, kHeads * kDModel, w);
  Tensor wO = randomTensor(rng, kDModel * kDModel, w);
  Tensor bO = randomTensor(rng, kDModel, w);

  fmt::print("fwp-demo: FastWeightsAttention forward, delta rule, T={} B={} "
             "d_model={} heads={} nu={}, float32\n",
             kSeqLen, kBatch, kDModel, kHeads, kNu);

  std::string why;
  auto kernel = compileBest(why);
  const bool cuda = kernel->desc().backend == fwp::jit::Backend::Cuda;
  fmt::print("  backend    {} ({})\n", cuda ? "cuda" : "cpu", why);
  // The forward only: compiled now, or loaded from the disk cache where an
  // earlier run compiled it.
  kernel->prepare(fwp::jit::EntryPoint::Forward);
  fmt::print("  compile    {:.1f} ms ({})\n", kernel->compileSeconds() * 1e3,
             kernel->loadedFromDiskCache(fwp::jit::EntryPoint::Forward)
                 ? "loaded from the disk cache"
                 : "compiled, now in the disk cache");

  // The first call pays for first-touch page faults (and on CUDA, module
  // loading); report the median of the calls after it.
  std::vector<float> y(x.f32.size());
  auto forward = [&] {
    kernel->forward(kSeqLen, kBatch, x.f32.data(), wQ.f32.data(), wK.f32.data(),
                    wV.f32.data(), wBeta.f32.data(), wO.f32.data(),
                    bO.f32.data(), y.data());
  };
  double start = seconds();
  forward();
  double firstMs = (seconds() - start) * 1e3;
  std::vector<double> ms;
  for (int i = 0; i < 11; ++i) {
    start = seconds();
    forward();
    ms.push_back((seconds() - start) * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  fmt::print("  forward    {:.3f} ms (median of {}; first call {:.3f} ms)\n",
             ms[ms.size() / 2], ms.size(), firstMs);

  fwp::ref::AttentionConfig config;
  config.heads = kHeads;
  config.nu = kNu;
  config.rule = fwp::ref::Rule::Delta;
  start = seconds();
  std::vector<double> expected =
      fwp::ref::attention(config, {kSeqLen, kBatch, kDModel}, x.f64,
                          {wQ.f64, wK.f64, wV.f64, wBeta.f64, wO.f64, bO.f64})
          .y;
  double referenceMs = (seconds() - start) * 1e3;
  fmt::print("  reference  {:.3f} ms (float64, step by step)\n", referenceMs);

  double maxAbs = 0, scale = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    double diff = std::fabs(static_cast<double>(y[i]) - expected[i]);
    maxAbs = std::isnan(diff) ? INFINITY : std::max(maxAbs, diff);
    scale = std::max(scale, std::fabs(expected[i]));
  }
  double relative = maxAbs / (scale > 0 ? scale : 1.0);
  const bool ok = relative <= kTolerance;
  fmt::print(
      "  error      max abs {:.2e}, relative {:.2e} (max |y_ref| {:.3f})\n",
      maxAbs, relative, scale);
  fmt::print("{}: relative error {} {:.0e}\n", ok ? "PASS" : "FAIL",
             ok ? "<=" : ">", kTolerance);
  return ok ? 0 : 1;
}

} // namespace

int main() {
  try {
    return runDemo();
  } catch (const std::exception &e) {
    fmt::print(stderr, "fwp-demo: {}\n", e.what());
    return 1;
  }
}
