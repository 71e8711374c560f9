//===- CudaKernel.cpp - fwp.attention compiled for NVIDIA GPUs ------------===//
//
// The module of AttentionModule.h (forward and backward entry points),
// lowered by fwp-to-ptx. Each entry point becomes a launch plan
// (docs/launch-plan.md) over the module's PTX, which the runtime carries out
// with the CUDA driver. Compiling needs no GPU; running does, and the
// device is only touched on the first call.
//
// Calls take host buffers: each call uploads its inputs, runs the plan and
// downloads its outputs. Calls on one kernel are serialised (they share the
// loaded modules and the default stream).
//
//===----------------------------------------------------------------------===//

#include "AttentionModule.h"
#include "CompileSupport.h"
#include "IRDump.h"
#include "Kernel.h"

#include "fwp/Pipelines/Pipelines.h"
#include "fwp/Runtime/Cuda.h"
#include "fwp/Runtime/PlanCuda.h"
#include "fwp/Target/LaunchPlan.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <map>
#include <mutex>

using namespace mlir;

namespace fwp::jit {
namespace {

/// A host buffer to upload or download, and its plan shape.
struct HostBuffer {
  const void *in = nullptr; // uploaded when set
  void *out = nullptr;      // downloaded when set
  std::vector<int64_t> sizes;
};

/// What fwp-to-ptx and the exporter make of the module: a launch plan per
/// entry point and the PTX of every kernel, by module name.
struct LoweredPlans {
  rt::Plan forward, backward;
  std::map<std::string, std::string> ptx;
};

class CudaKernel final : public CompiledAttention::Impl {
public:
  CudaKernel(const KernelDesc &desc, LoweredPlans plans)
      : Impl(desc), forwardPlan(std::move(plans.forward)),
        backwardPlan(std::move(plans.backward)), ptx(std::move(plans.ptx)) {}

  /// The plans as text, printed by the runtime (which reads them back).
  CompiledAttention::DeviceCode deviceCode() const override {
    return {forwardPlan.str(), backwardPlan.str(), ptx};
  }

  void forward(const ForwardArgs &a) const override {
    std::vector<int64_t> steps = {a.seqLen, a.batch, desc.dModel()};
    std::vector<HostBuffer> buffers =
        weights(a.x, a.wQ, a.wK, a.wV, a.wBeta, a.wO, a.bO, steps);
    buffers.push_back({nullptr, a.y, steps});
    run(forwardPlan, buffers);
  }

  void backward(const BackwardArgs &a) const override {
    std::vector<int64_t> steps = {a.seqLen, a.batch, desc.dModel()};
    std::vector<HostBuffer> buffers =
        weights(a.x, a.wQ, a.wK, a.wV, a.wBeta, a.wO, a.bO, steps);
    buffers.push_back({a.dy, nullptr, steps});
    void *outputs[] = {a.dx, a.dwQ, a.dwK, a.dwV, a.dwBeta, a.dwO, a.dbO};
    for (auto [i, out] : llvm::enumerate(outputs))
      buffers.push_back({nullptr, out, buffers[i].sizes});
    run(backwardPlan, buffers);
  }

private:
  /// x and the weights, in the order of the entry functions' arguments.
  std::vector<HostBuffer> weights(const void *x, const void *wQ, const void *wK,
                                  const void *wV, const void *wBeta,
                                  const void *wO, const void *bO,
                                  const std::vector<int64_t> &steps) const {
    int64_t dm = desc.dModel();
    std::vector<int64_t> square = {dm, dm};
    return {{x, nullptr, steps},
            {wQ, nullptr, square},
            {wK, nullptr, square},
            {wV, nullptr, square},
            {wBeta, nullptr, {desc.heads, dm}},
            {wO, nullptr, square},
            {bO, nullptr, {dm}}};
  }

  size_t elementBytes() const {
    return desc.dtype == DType::F32 ? sizeof(float) : sizeof(double);
  }

  /// Uploads, runs `plan`, downloads.
  void run(const rt::Plan &plan, const std::vector<HostBuffer> &host) const {
    std::lock_guard<std::mutex> lock(mutex);
    rt::CudaPlanDevice &dev = device();
    std::vector<rt::DeviceBuffer> memory;
    std::vector<rt::BufferRef> refs;
    rt::DType dtype =
        desc.dtype == DType::F32 ? rt::DType::F32 : rt::DType::F64;
    for (const HostBuffer &buffer : host) {
      // CompiledAttention checked that the sizes do not overflow.
      rt::BufferRef ref{0, buffer.sizes, dtype};
      size_t bytes = static_cast<size_t>(*ref.elementCount()) * elementBytes();
      memory.emplace_back(bytes);
      if (buffer.in)
        memory.back().copyFromHost(buffer.in, bytes);
      ref.ptr = memory.back().ptr();
      refs.push_back(std::move(ref));
    }
    rt::execute(plan, dev, refs);
    for (auto [buffer, deviceBuffer] : llvm::zip(host, memory))
      if (buffer.out)
        deviceBuffer.copyToHost(buffer.out, deviceBuffer.size());
  }

  /// The loaded modules; the first call loads them (and fails, with the
  /// driver's reason, where there is no usable GPU).
  rt::CudaPlanDevice &device() const {
    if (!loaded)
      loaded = std::make_unique<rt::CudaPlanDevice>(ptx);
    return *loaded;
  }

  rt::Plan forwardPlan, backwardPlan;
  std::map<std::string, std::string> ptx;
  mutable std::mutex mutex;
  mutable std::unique_ptr<rt::CudaPlanDevice> loaded;
};

/// Lowers `module` with fwp-to-ptx and exports each entry point's plan.
LoweredPlans lowerToPlans(ModuleOp module, const KernelDesc &desc,
                          const std::string &dumpDirectory,
                          const DiagnosticCollector &diagnostics,
                          const Failure &fail) {
  if (failed(verify(module)))
    fail("building the module", diagnostics.text());
  PassManager pm(module->getContext(), ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  PtxPipelineOptions options;
  options.chunkSize = desc.chunkSize;
  buildFwpToPtxPipeline(pm, options);
  dumpEveryStage(pm, module, dumpDirectory);
  if (failed(pm.run(module)))
    fail("the fwp-to-ptx pipeline", diagnostics.text());

  LoweredPlans plans;
  for (auto [entry, plan] : {std::pair{kForwardName, &plans.forward},
                             std::pair{kBackwardName, &plans.backward}}) {
    FailureOr<ExportedPlan> exported =
        exportLaunchPlan(module, entry, options.indexBitwidth);
    if (failed(exported))
      fail("exporting the launch plan", diagnostics.text());
    *plan = std::move(exported->plan);
    plans.ptx.insert(exported->ptx.begin(), exported->ptx.end());
  }
  if (!dumpDirectory.empty()) {
    writeDumpFile(dumpDirectory, "forward.fwp", plans.forward.str());
    writeDumpFile(dumpDirectory, "backward.fwp", plans.backward.str());
    for (const auto &[name, ptx] : plans.ptx)
      writeDumpFile(dumpDirectory, name + ".ptx", ptx);
  }
  return plans;
}

} // namespace

std::unique_ptr<CompiledAttention::Impl>
compileCuda(const KernelDesc &desc, const CompileOptions &options) {
  Failure fail("the CUDA kernel (" + desc.str() + ")");
  CompileContext compile;
  OwningOpRef<ModuleOp> module = compile.createModule();
  buildAttentionModule(*module, desc);
  return std::make_unique<CudaKernel>(
      desc, lowerToPlans(*module, desc, options.dumpDirectory,
                         compile.diagnostics(), fail));
}

} // namespace fwp::jit
