//===- Kernel.h - What a compiled kernel provides --------------*- C++ -*-===//
//
// CompiledAttention is a handle on an Impl; each backend derives its own
// kernel from Impl. Internal to lib/JIT (FwpJIT), not installed.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_KERNEL_H
#define FWP_LIB_JIT_KERNEL_H

#include "fwp/JIT/JIT.h"

#include <map>
#include <memory>
#include <string>

namespace fwp::jit {

/// The buffers and sizes of one forward call, already checked by
/// CompiledAttention::forward (sizes > 0, no overflow, no null pointer).
struct ForwardArgs {
  int64_t seqLen = 0, batch = 0;
  const void *x = nullptr, *wQ = nullptr, *wK = nullptr, *wV = nullptr,
             *wBeta = nullptr, *wO = nullptr, *bO = nullptr;
  void *y = nullptr;
};

/// The buffers and sizes of one backward call, already checked by
/// CompiledAttention::backward (sizes > 0, no overflow, no null pointer).
struct BackwardArgs {
  int64_t seqLen = 0, batch = 0;
  const void *x = nullptr, *wQ = nullptr, *wK = nullptr, *wV = nullptr,
             *wBeta = nullptr, *wO = nullptr, *bO = nullptr, *dy = nullptr;
  void *dx = nullptr, *dwQ = nullptr, *dwK = nullptr, *dwV = nullptr,
       *dwBeta = nullptr, *dwO = nullptr, *dbO = nullptr;
};

struct CompiledAttention::Impl {
  explicit Impl(const KernelDesc &desc) : desc(desc) {}
  virtual ~Impl() = default;
  virtual void forward(const ForwardArgs &args) const = 0;
  virtual void backward(const BackwardArgs &args) const = 0;
  /// What the GPU runs; empty for the host.
  virtual CompiledAttention::DeviceCode deviceCode() const { return {}; }

  KernelDesc desc;
  double compileSeconds = 0;
};

/// Builds the module for a Backend::Cpu description (forward and backward),
/// lowers it with fwp-to-cpu and JIT-compiles it. Throws std::runtime_error
/// with the diagnostics on failure.
std::unique_ptr<CompiledAttention::Impl>
compileCpu(const KernelDesc &desc, const CompileOptions &options);

/// Builds the same module for a Backend::Cuda description, lowers it with
/// fwp-to-ptx and exports a launch plan per entry point. Needs no GPU; the
/// kernel loads its PTX on the first call.
std::unique_ptr<CompiledAttention::Impl>
compileCuda(const KernelDesc &desc, const CompileOptions &options);

} // namespace fwp::jit

#endif // FWP_LIB_JIT_KERNEL_H
