//===- JitBackend.cpp - The JIT-compiled layer ----------------------------===//
//
// `--backend cpu` and `--backend cuda`: the layer compiled by fwp/JIT/JIT.h
// (fwp-to-cpu, or fwp-to-ptx run by the CUDA runtime), forward and
// backward, in the inputs' precision: float32 inputs run a float32 kernel,
// float64 inputs a float64 one.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Error.h"

#include "fwp/JIT/JIT.h"
#include "fwp/Runtime/Driver.h"
#include "fwp/Support/Npy.h"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

namespace fwp::run {

namespace {

jit::KernelDesc describe(const ref::AttentionConfig &config,
                         const ref::AttentionShape &shape, rt::DType dtype,
                         int64_t chunkSize, jit::Backend backend) {
  jit::KernelDesc desc;
  desc.rule = config.rule;
  desc.nu = config.nu;
  desc.eps = config.eps;
  desc.heads = config.heads;
  desc.dHead = shape.dModel / config.heads; // the loader checked it divides
  desc.dtype = dtype;
  desc.chunkSize = chunkSize;
  desc.backend = backend;
  return desc;
}

/// The compilation `settings` ask for, writing every stage under `dir`
/// unless it is empty.
jit::CompileOptions compileOptions(const BackendSettings &settings,
                                   std::string dir) {
  jit::CompileOptions options;
  options.dumpDirectory = std::move(dir);
  options.gpuStages = settings.gpuStages;
  return options;
}

/// `values` as a buffer of `dtype` (rounded to it where it is narrower).
std::vector<char> buffer(const std::vector<double> &values, rt::DType dtype) {
  return npy::toBytes(npy::Array{{}, dtype, values}, dtype);
}

/// A buffer of `count` elements of `dtype`, back as float64 (exact).
std::vector<double> values(const std::vector<char> &bytes, size_t count,
                           rt::DType dtype) {
  return npy::fromBytes(bytes.data(), {static_cast<int64_t>(count)}, dtype)
      .values;
}

/// The parameters as buffers of `dtype`.
struct Buffers {
  std::vector<char> wQ, wK, wV, wBeta, wO, bO;
  Buffers(const ref::AttentionParams &p, rt::DType dtype)
      : wQ(buffer(p.wQ, dtype)), wK(buffer(p.wK, dtype)),
        wV(buffer(p.wV, dtype)), wBeta(buffer(p.wBeta, dtype)),
        wO(buffer(p.wO, dtype)), bO(buffer(p.bO, dtype)) {}
};

/// y = forward(x), in the kernel's element type.
std::vector<double> runForward(const jit::CompiledAttention &kernel,
                               const ref::AttentionShape &shape,
                               const std::vector<double> &x,
                               const ref::AttentionParams &p) {
  rt::DType dtype = kernel.desc().dtype;
  Buffers w(p, dtype);
  std::vector<char> xs = buffer(x, dtype), y(xs.size());
  kernel.forward(shape.seqLen, shape.batch, xs.data(), w.wQ.data(), w.wK.data(),
                 w.wV.data(), w.wBeta.data(), w.wO.data(), w.bO.data(),
                 static_cast<void *>(y.data()));
  return values(y, x.size(), dtype);
}

/// Every gradient of the backward, in the kernel's element type.
ref::AttentionGradients runBackward(const jit::CompiledAttention &kernel,
                                    const ref::AttentionShape &shape,
                                    const std::vector<double> &x,
                                    const ref::AttentionParams &p,
                                    const std::vector<double> &dy) {
  rt::DType dtype = kernel.desc().dtype;
  Buffers w(p, dtype);
  std::vector<char> xs = buffer(x, dtype), dys = buffer(dy, dtype),
                    dx(xs.size());
  Buffers g(p, dtype); // gradients have the shapes of the parameters
  kernel.backward(shape.seqLen, shape.batch, xs.data(), w.wQ.data(),
                  w.wK.data(), w.wV.data(), w.wBeta.data(), w.wO.data(),
                  w.bO.data(), dys.data(), static_cast<void *>(dx.data()),
                  g.wQ.data(), g.wK.data(), g.wV.data(), g.wBeta.data(),
                  g.wO.data(), static_cast<void *>(g.bO.data()));
  ref::AttentionGradients out;
  out.x = values(dx, x.size(), dtype);
  out.wQ = values(g.wQ, p.wQ.size(), dtype);
  out.wK = values(g.wK, p.wK.size(), dtype);
  out.wV = values(g.wV, p.wV.size(), dtype);
  out.wBeta = values(g.wBeta, p.wBeta.size(), dtype);
  out.wO = values(g.wO, p.wO.size(), dtype);
  out.bO = values(g.bO, p.bO.size(), dtype);
  return out;
}

class JitBackend final : public Backend {
public:
  JitBackend(const BackendSettings &settings, jit::Backend target)
      : settings(settings), target(target) {}

  const char *name() const override { return backendName(target); }

  ref::AttentionOutputs forward(const ref::AttentionConfig &config,
                                const ref::AttentionShape &shape,
                                const std::vector<double> &x,
                                const ref::AttentionParams &params,
                                rt::DType dtype) override {
    auto kernel = compile(config, shape, dtype);
    ref::AttentionOutputs out;
    out.y = runForward(*kernel, shape, x, params);
    return out;
  }

  ref::AttentionGradients
  backward(const ref::AttentionConfig &config, const ref::AttentionShape &shape,
           const std::vector<double> &x, const ref::AttentionParams &params,
           const std::vector<double> &dy, rt::DType dtype) override {
    auto kernel = compile(config, shape, dtype);
    return runBackward(*kernel, shape, x, params, dy);
  }

private:
  /// The kernel for these options and sizes; fwp::jit::compile caches it,
  /// so the forward and the backward of one run compile once.
  std::shared_ptr<const jit::CompiledAttention>
  compile(const ref::AttentionConfig &config, const ref::AttentionShape &shape,
          rt::DType dtype) const {
    std::string whyNoGpu;
    if (target == jit::Backend::Cuda && !rt::cudaUsable(&whyNoGpu))
      throw UsageError(
          fmt::format("backend 'cuda' needs a usable CUDA GPU: {}", whyNoGpu));
    try {
      jit::KernelDesc desc =
          describe(config, shape, settings.computeType.value_or(dtype),
                   settings.chunkSize, target);
      // The process-wide kernel, unless the settings ask for another.
      if (settings.dumpIr.empty() &&
          settings.gpuStages == jit::CompileOptions().gpuStages)
        return jit::compile(desc);
      if (!compiled)
        compiled =
            settings.dumpIr.empty()
                ? jit::compileUncached(desc, compileOptions(settings, ""))
                : compileAndDump(desc);
      return compiled;
    } catch (const std::invalid_argument &e) {
      // The description comes from the command line and the inputs' sizes.
      throw UsageError(e.what());
    }
  }

  /// Compiles `desc` writing every stage under DIR/<backend>; for the cpu
  /// backend also compiles for CUDA under DIR/cuda, for the PTX (compiling
  /// needs no GPU).
  std::shared_ptr<const jit::CompiledAttention>
  compileAndDump(const jit::KernelDesc &desc) const {
    auto kernel = jit::compileUncached(
        desc, compileOptions(settings,
                             fmt::format("{}/{}", settings.dumpIr, name())));
    if (target == jit::Backend::Cpu) {
      jit::KernelDesc cuda = desc;
      cuda.backend = jit::Backend::Cuda;
      // Entry points compile on first use: ask for the forward's PTX now.
      jit::compileUncached(
          cuda,
          compileOptions(settings, fmt::format("{}/cuda", settings.dumpIr)))
          ->prepare(jit::EntryPoint::Forward);
    }
    return kernel;
  }

  BackendSettings settings;
  jit::Backend target;
  // With --dump-ir or another kind of GPU kernels: the kernel, compiled
  // once.
  mutable std::shared_ptr<const jit::CompiledAttention> compiled;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend(const BackendSettings &settings) {
  return std::make_unique<JitBackend>(settings, jit::Backend::Cpu);
}

std::unique_ptr<Backend> createCudaBackend(const BackendSettings &settings) {
  return std::make_unique<JitBackend>(settings, jit::Backend::Cuda);
}

} // namespace fwp::run
