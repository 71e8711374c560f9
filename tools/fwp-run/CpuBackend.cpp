//===- CpuBackend.cpp - The JIT-compiled forward on the host --------------===//
//
// `--backend cpu`: the layer compiled by fwp-to-cpu (fwp/JIT/JIT.h), in the
// inputs' precision: float32 inputs run a float32 kernel, float64 inputs a
// float64 one. Forward only for now; the backward comes with a later issue.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Error.h"

#include "fwp/JIT/JIT.h"

#include <stdexcept>

namespace fwp::run {

namespace {

jit::KernelDesc describe(const ref::AttentionConfig &config,
                         const ref::AttentionShape &shape, npy::DType dtype,
                         int64_t chunkSize) {
  jit::KernelDesc desc;
  desc.rule =
      config.rule == ref::Rule::Delta ? jit::Rule::Delta : jit::Rule::Sum;
  desc.nu = config.nu;
  desc.eps = config.eps;
  desc.heads = config.heads;
  desc.dHead = shape.dModel / config.heads; // the loader checked it divides
  desc.dtype = dtype == npy::DType::F32 ? jit::DType::F32 : jit::DType::F64;
  desc.chunkSize = chunkSize;
  desc.backend = jit::Backend::Cpu;
  return desc;
}

/// Runs `kernel` on buffers of element type T converted from the float64
/// vectors fwp-run holds (exact: the values came from T in the first place),
/// and converts y back.
template <typename T>
std::vector<double>
run(const jit::CompiledAttention &kernel, const ref::AttentionShape &shape,
    const std::vector<double> &x, const ref::AttentionParams &p) {
  auto cast = [](const std::vector<double> &v) {
    return std::vector<T>(v.begin(), v.end());
  };
  std::vector<T> xs = cast(x), wq = cast(p.wQ), wk = cast(p.wK),
                 wv = cast(p.wV), wb = cast(p.wBeta), wo = cast(p.wO),
                 bo = cast(p.bO);
  std::vector<T> y(x.size());
  kernel.forward(shape.seqLen, shape.batch, xs.data(), wq.data(), wk.data(),
                 wv.data(), wb.data(), wo.data(), bo.data(), y.data());
  return std::vector<double>(y.begin(), y.end());
}

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(const BackendSettings &settings) : settings(settings) {}

  const char *name() const override { return "cpu"; }
  bool hasBackward() const override { return false; }

  ref::AttentionOutputs forward(const ref::AttentionConfig &config,
                                const ref::AttentionShape &shape,
                                const std::vector<double> &x,
                                const ref::AttentionParams &params,
                                npy::DType dtype) override {
    std::shared_ptr<const jit::CompiledAttention> kernel;
    try {
      kernel = jit::compile(describe(config, shape, dtype, settings.chunkSize));
    } catch (const std::invalid_argument &e) {
      // The description comes from the command line and the inputs' sizes.
      throw UsageError(e.what());
    }
    ref::AttentionOutputs out;
    out.y = dtype == npy::DType::F32 ? run<float>(*kernel, shape, x, params)
                                     : run<double>(*kernel, shape, x, params);
    return out;
  }

  ref::AttentionGradients backward(const ref::AttentionConfig &,
                                   const ref::AttentionShape &,
                                   const std::vector<double> &,
                                   const ref::AttentionParams &,
                                   const std::vector<double> &) override {
    // fwp-run checks hasBackward() before running anything; this is the
    // same refusal for any other caller.
    throw UsageError("backend 'cpu' computes the forward only; the backward "
                     "comes with a later issue");
  }

private:
  BackendSettings settings;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend(const BackendSettings &settings) {
  return std::make_unique<CpuBackend>(settings);
}

} // namespace fwp::run
