//===- KernelConfig.cpp - The kernels' configuration per target -----------===//
//
// Every tile and kernel choice of a target, written once, and
// fwp-configure-kernels, which records them on each function.
//
//===----------------------------------------------------------------------===//

#include "fwp/Transforms/KernelConfig.h"

#include "fwp/Dialect/FwpDialect.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/AsmParser/AsmParser.h"

namespace fwp {
#define GEN_PASS_DEF_FWPCONFIGUREKERNELS
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

/// Value columns per instance of the GPU's state kernels: enough instances
/// to fill the grid at d_v = 128, and whole products for the warps.
constexpr int64_t kGpuValueBlock = 32;

/// Instances of the GPU's chunk-parallel backward kernels, each with one
/// chunk of scratch: about four times the blocks an H100 holds at once (2
/// of scan_chunk_grad's 128 threads at over 200 registers on each of 132
/// SMs), so that the grid stays full and balanced, while the scratch is
/// 512 chunks, not B H N (4096 at issue 9's shape).
constexpr int64_t kGpuScratchSlots = 512;

/// The same kernels on the host take few slots, so that the tests' small
/// problems have instances that take several chunks in turn, as the GPU's
/// do at large sizes.
constexpr int64_t kHostScratchSlots = 8;

/// Floats of shared memory for staging the tensor cores' operands: at
/// C = 64 the chunk's 64 x 32 and 32 x 32 windows, padded (32 KiB).
constexpr int64_t kStageFloats = 8192;

/// The most bytes of kernel-local state tiles a GPU instance keeps: 48 KiB
/// of static shared memory a block has, less the 14 KiB the staging of
/// the products' operands takes in practice.
constexpr int64_t kGpuLocalBytes = 34 * 1024;

} // namespace

KernelConfigAttr
chooseKernelConfig(function_ref<InFlightDiagnostic()> emitError,
                   MLIRContext *context, const KernelConfigRequest &request) {
  // The CPU's fused chunk kernels need nothing more than the chunk size.
  // The GPU's scan kernels: one per step (prepare, state, ...), value
  // blocks that fill its grid, the state kept on chip across the chunks in
  // local tiles (shared memory; the stack when the host runs them), and
  // the backward's per-chunk scratch in slots.
  int64_t valueBlock = 0, scratchSlots = 0, localBytes = 0, stageFloats = 0,
          blockSize = 0;
  std::optional<StateMemory> stateMemory;
  std::optional<ProductPrecision> products;
  if (request.target != KernelTarget::Cpu) {
    valueBlock = kGpuValueBlock;
    localBytes = kGpuLocalBytes;
    stateMemory = StateMemory::Stack;
    scratchSlots = kHostScratchSlots;
  }
  if (request.target == KernelTarget::Gpu) {
    stateMemory = StateMemory::Workgroup;
    scratchSlots = kGpuScratchSlots;
    stageFloats = kStageFloats;
    products = request.products;
    blockSize = request.blockSize;
  }
  return KernelConfigAttr::getChecked(
      emitError, context, request.target, request.chunkSize, valueBlock,
      stateMemory, scratchSlots, localBytes, stageFloats, products, blockSize);
}

KernelConfigAttr kernelConfigOf(Operation *op, KernelTarget fallback) {
  auto function = dyn_cast<func::FuncOp>(op);
  if (!function)
    function = op->getParentOfType<func::FuncOp>();
  if (function)
    if (auto config = function->getAttrOfType<KernelConfigAttr>(
            FwpDialect::kKernelConfigAttrName))
      return config;
  return chooseKernelConfig(
      [op] { return op->emitError("fwp: default kernel configuration: "); },
      op->getContext(), {fallback});
}

KernelConfigAttr gpuKernelConfigOf(Operation *kernel, StringRef pass) {
  KernelConfigAttr config = kernelConfigOf(kernel, KernelTarget::Gpu);
  if (config.getTarget() == KernelTarget::Gpu)
    return config;
  kernel->emitOpError(pass)
      << " needs a GPU kernel configuration, got " << config;
  return nullptr;
}

namespace {

struct FwpConfigureKernels
    : impl::FwpConfigureKernelsBase<FwpConfigureKernels> {
  using FwpConfigureKernelsBase::FwpConfigureKernelsBase;

  KernelConfigAttr choose() {
    KernelConfigRequest request{target, chunkSize, blockSize, products};
    return chooseKernelConfig(
        [&] { return getOperation().emitError("fwp-configure-kernels: "); },
        &getContext(), request);
  }

  KernelConfigAttr parseGiven() {
    auto given = dyn_cast_or_null<KernelConfigAttr>(
        parseAttribute(config, &getContext()));
    if (!given)
      getOperation().emitError("fwp-configure-kernels: config must be a "
                               "#fwp.kernel_config, got '")
          << config << "'";
    return given;
  }

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function->hasAttr(FwpDialect::kKernelConfigAttrName))
      return;
    KernelConfigAttr chosen = config.empty() ? choose() : parseGiven();
    if (!chosen)
      return signalPassFailure();
    function->setAttr(FwpDialect::kKernelConfigAttrName, chosen);
  }
};

} // namespace
} // namespace fwp
