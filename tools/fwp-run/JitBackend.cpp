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

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

namespace fwp::run {

namespace {

jit::KernelDesc describe(const ref::AttentionConfig &config,
                         const ref::AttentionShape &shape, rt::DType dtype,
                         int64_t chunkSize, jit::Backend backend) {
  jit::KernelDesc desc;
  desc.rule =
      config.rule == ref::Rule::Delta ? jit::Rule::Delta : jit::Rule::Sum;
  desc.nu = config.nu;
  desc.eps = config.eps;
  desc.heads = config.heads;
  desc.dHead = shape.dModel / config.heads; // the loader checked it divides
  desc.dtype = dtype == rt::DType::F32 ? jit::DType::F32 : jit::DType::F64;
  desc.chunkSize = chunkSize;
  desc.backend = backend;
  return desc;
}

/// Options that write every stage of the compilation under `dir`.
jit::CompileOptions dumpingTo(std::string dir) {
  jit::CompileOptions options;
  options.dumpDirectory = std::move(dir);
  return options;
}

template <typename T> std::vector<T> cast(const std::vector<double> &v) {
  return std::vector<T>(v.begin(), v.end());
}

std::vector<double> widen(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}
std::vector<double> widen(std::vector<double> v) { return v; }

/// The parameters as buffers of element type T, converted from the float64
/// vectors fwp-run holds (exact: the values came from T in the first
/// place).
template <typename T> struct Buffers {
  std::vector<T> wQ, wK, wV, wBeta, wO, bO;
  explicit Buffers(const ref::AttentionParams &p)
      : wQ(cast<T>(p.wQ)), wK(cast<T>(p.wK)), wV(cast<T>(p.wV)),
        wBeta(cast<T>(p.wBeta)), wO(cast<T>(p.wO)), bO(cast<T>(p.bO)) {}
};

/// y = forward(x) in T.
template <typename T>
std::vector<double> runForward(const jit::CompiledAttention &kernel,
                               const ref::AttentionShape &shape,
                               const std::vector<double> &x,
                               const ref::AttentionParams &p) {
  Buffers<T> w(p);
  std::vector<T> xs = cast<T>(x), y(x.size());
  kernel.forward(shape.seqLen, shape.batch, xs.data(), w.wQ.data(), w.wK.data(),
                 w.wV.data(), w.wBeta.data(), w.wO.data(), w.bO.data(),
                 y.data());
  return widen(std::move(y));
}

/// Every gradient of the backward in T.
template <typename T>
ref::AttentionGradients
runBackward(const jit::CompiledAttention &kernel,
            const ref::AttentionShape &shape, const std::vector<double> &x,
            const ref::AttentionParams &p, const std::vector<double> &dy) {
  Buffers<T> w(p);
  std::vector<T> xs = cast<T>(x), dys = cast<T>(dy), dx(x.size());
  Buffers<T> g(p); // gradients have the shapes of the parameters
  kernel.backward(shape.seqLen, shape.batch, xs.data(), w.wQ.data(),
                  w.wK.data(), w.wV.data(), w.wBeta.data(), w.wO.data(),
                  w.bO.data(), dys.data(), dx.data(), g.wQ.data(), g.wK.data(),
                  g.wV.data(), g.wBeta.data(), g.wO.data(), g.bO.data());
  ref::AttentionGradients out;
  out.x = widen(std::move(dx));
  out.wQ = widen(std::move(g.wQ));
  out.wK = widen(std::move(g.wK));
  out.wV = widen(std::move(g.wV));
  out.wBeta = widen(std::move(g.wBeta));
  out.wO = widen(std::move(g.wO));
  out.bO = widen(std::move(g.bO));
  return out;
}

class JitBackend final : public Backend {
public:
  JitBackend(const BackendSettings &settings, jit::Backend target)
      : settings(settings), target(target) {}

  const char *name() const override {
    return target == jit::Backend::Cpu ? "cpu" : "cuda";
  }

  ref::AttentionOutputs forward(const ref::AttentionConfig &config,
                                const ref::AttentionShape &shape,
                                const std::vector<double> &x,
                                const ref::AttentionParams &params,
                                rt::DType dtype) override {
    auto kernel = compile(config, shape, dtype);
    ref::AttentionOutputs out;
    out.y = dtype == rt::DType::F32
                ? runForward<float>(*kernel, shape, x, params)
                : runForward<double>(*kernel, shape, x, params);
    return out;
  }

  ref::AttentionGradients
  backward(const ref::AttentionConfig &config, const ref::AttentionShape &shape,
           const std::vector<double> &x, const ref::AttentionParams &params,
           const std::vector<double> &dy, rt::DType dtype) override {
    auto kernel = compile(config, shape, dtype);
    return dtype == rt::DType::F32
               ? runBackward<float>(*kernel, shape, x, params, dy)
               : runBackward<double>(*kernel, shape, x, params, dy);
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
          describe(config, shape, dtype, settings.chunkSize, target);
      if (settings.dumpIr.empty())
        return jit::compile(desc);
      if (!dumped)
        dumped = compileAndDump(desc);
      return dumped;
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
        desc, dumpingTo(fmt::format("{}/{}", settings.dumpIr, name())));
    if (target == jit::Backend::Cpu) {
      jit::KernelDesc cuda = desc;
      cuda.backend = jit::Backend::Cuda;
      // Entry points compile on first use: ask for the forward's PTX now.
      jit::compileUncached(cuda,
                           dumpingTo(fmt::format("{}/cuda", settings.dumpIr)))
          ->prepare(jit::EntryPoint::Forward);
    }
    return kernel;
  }

  BackendSettings settings;
  jit::Backend target;
  // With --dump-ir: the kernel compiled (once) while dumping.
  mutable std::shared_ptr<const jit::CompiledAttention> dumped;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend(const BackendSettings &settings) {
  return std::make_unique<JitBackend>(settings, jit::Backend::Cpu);
}

std::unique_ptr<Backend> createCudaBackend(const BackendSettings &settings) {
  return std::make_unique<JitBackend>(settings, jit::Backend::Cuda);
}

} // namespace fwp::run
