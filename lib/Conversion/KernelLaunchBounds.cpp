//===- KernelLaunchBounds.cpp - Launch bounds of outlined kernels ---------===//

#include "fwp/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace fwp {
#define GEN_PASS_DEF_FWPKERNELLAUNCHBOUNDS
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

struct KernelLaunchBoundsPass
    : impl::FwpKernelLaunchBoundsBase<KernelLaunchBoundsPass> {
  using FwpKernelLaunchBoundsBase::FwpKernelLaunchBoundsBase;

  void runOnOperation() override {
    if (minBlocksPerMultiprocessor < 1 || minBlocksPerMultiprocessor > 32) {
      getOperation()->emitError("fwp-kernel-launch-bounds: min-blocks must "
                                "be in [1, 32], got ")
          << static_cast<int64_t>(minBlocksPerMultiprocessor);
      return signalPassFailure();
    }
    Builder b(&getContext());
    getOperation().walk([&](gpu::GPUFuncOp func) {
      if (func.isKernel())
        func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                      b.getI32IntegerAttr(minBlocksPerMultiprocessor));
    });
  }
};

} // namespace
} // namespace fwp
